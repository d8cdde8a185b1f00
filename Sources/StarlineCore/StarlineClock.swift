#if canImport(Glibc)
import Glibc
#endif

/// The time a program reads and waits on, as one value: wall time (what is stored, compared and printed),
/// monotonic time (what bounds a wait) and waiting itself. Carried to where time is read instead of each place
/// calling `Timestamp.now()`, so a test — or the dev server's `POST /__dev/clock` — can move it. (Not named
/// `Clock`: that is the standard library's protocol of `ContinuousClock`, which every module sees.)
public struct StarlineClock: Sendable {
    /// Wall time.
    public var now: @Sendable () -> Timestamp
    /// Nanoseconds on a clock that never jumps (CLOCK_MONOTONIC for the system's).
    public var monotonicNanoseconds: @Sendable () -> UInt64
    /// Blocks the calling thread for `seconds`.
    public var sleep: @Sendable (_ seconds: Double) -> Void

    public init(
        now: @escaping @Sendable () -> Timestamp, monotonicNanoseconds: @escaping @Sendable () -> UInt64,
        sleep: @escaping @Sendable (_ seconds: Double) -> Void
    ) {
        self.now = now
        self.monotonicNanoseconds = monotonicNanoseconds
        self.sleep = sleep
    }

    /// The system's clocks, and nanosleep.
    public static let system = StarlineClock(
        now: { Timestamp.now() }, monotonicNanoseconds: { MonotonicClock.nanoseconds() }, sleep: { threadSleep(seconds: $0) })

    /// Blocks the calling thread for `seconds` (nothing for a negative, zero or NaN value; at most a year),
    /// resuming after a signal: the suite's one nanosleep loop.
    public static func threadSleep(seconds: Double) {
        guard seconds > 0, seconds.isFinite else { return }
        let whole = min(seconds, 86_400 * 365)
        var request = timespec(tv_sec: Int(whole), tv_nsec: Int((whole - whole.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// This clock with its wall time moved by what `offset` gives at each reading (seconds; negative is the
    /// past). Monotonic time and waits are left alone: moving the calendar does not make a wait shorter.
    public func shifted(by offset: @escaping @Sendable () -> Int64) -> StarlineClock {
        let now = self.now
        var moved = self
        moved.now = {
            let base = now()
            let (seconds, overflow) = base.seconds.addingReportingOverflow(offset())
            return overflow ? base : Timestamp(seconds: seconds)
        }
        return moved
    }
}
