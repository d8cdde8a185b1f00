#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// Pixels that decoding may hold in memory at once, shared by every `-j` worker, so the memory of a
/// decode run is bounded by the budget rather than by `jobs × largest image` (a
/// 100-megapixel image costs about 300 MB while it is scanned — the image, zbar's copy and a retry
/// variant — and 8 workers each holding one would need 2.4 GB).
///
/// A worker takes an image's pixels from the budget as soon as the image header gives its size,
/// before any pixel buffer exists, and gives them back when the image is scanned. While the budget
/// is spent it waits. One image always fits once nothing else is held (a claim is capped at the
/// whole budget), and a worker holds one image at a time, so the wait always ends.
public final class PixelBudget: Sendable {
    public let total: Int
    private let used = Locked<Int>(0)

    public init(total: Int) {
        precondition(total > 0, "an empty pixel budget")
        self.total = total
    }

    /// The pixels in use now (tests and progress).
    public var inUse: Int { used.withLock { $0 } }

    /// One image's claim on the budget; `release()` (or deinit) gives it back.
    public final class Reservation: @unchecked Sendable {
        // Used by one worker at a time (the one decoding the image), never shared between threads.
        let budget: PixelBudget
        private(set) var held = 0

        public init(_ budget: PixelBudget) { self.budget = budget }

        /// Blocks until `pixels` (capped at the budget) are available, then takes them.
        func acquire(_ pixels: Int) {
            let claim = min(max(pixels, 0), budget.total)
            // No condition variable without Dispatch/Foundation: a short sleep between tries is enough,
            // since a claim waits for a whole image decode to finish (milliseconds at least).
            while !budget.used.withLock({ used in
                guard used == 0 || used + claim <= budget.total else { return false }
                used += claim
                return true
            }) {
                usleep(2_000)
            }
            held += claim
        }

        public func release() {
            guard held > 0 else { return }
            let amount = held
            budget.used.withLock { $0 -= amount }
            held = 0
        }

        deinit { release() }
    }
}
