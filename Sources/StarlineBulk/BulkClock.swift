#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineHTTP

/// The time a bulk run reads and waits on: the monotonic clock and real sleeps for a tool, a virtual clock
/// for the engine's tests (an outage of 300 s, probes with backoff, are then decided in microseconds).
///
/// Only the engine's own waits go through it — backoff between an item's attempts, the outage probe's backoff
/// and the outage budget. The `RateGate`'s 429 pauses wait on its condition in real time (a `Retry-After` is
/// the server's, not ours to compress).
public struct BulkClock: Sendable {
    /// Nanoseconds on a monotonic clock.
    public let now: @Sendable () -> UInt64
    /// Blocks the calling thread for about this many nanoseconds (a virtual clock advances instead).
    public let sleep: @Sendable (UInt64) -> Void

    public init(now: @escaping @Sendable () -> UInt64, sleep: @escaping @Sendable (UInt64) -> Void) {
        self.now = now
        self.sleep = sleep
    }

    /// A view of `clock` (the run's, `IOStreams.clock`): its monotonic time and its waits.
    public init(_ clock: StarlineClock) {
        self.init(now: clock.monotonicNanoseconds, sleep: { clock.sleep(Double($0) / 1e9) })
    }

    public static let system = BulkClock(StarlineClock.system)

    /// Sleeps `seconds` (negative and non-finite are 0; at most a day).
    public func sleep(seconds: Double) {
        sleep(ReplyLimits.nanoseconds(seconds))
    }

    /// A virtual clock (`StarlineClock.virtual`): time moves only when a thread sleeps on it.
    public static func virtual(start: UInt64 = 1_000_000_000) -> BulkClock {
        BulkClock(StarlineClock.virtual(start: start))
    }
}
