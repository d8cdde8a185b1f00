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
    /// Nanoseconds on a clock that never jumps (CLOCK_BOOTTIME for the system's: it also counts the time the
    /// machine was suspended, so a lifetime or a budget measured on it — an unlock agent's TTL, an outage
    /// budget — includes a laptop's sleep).
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
        now: { Timestamp.now() }, monotonicNanoseconds: { bootTimeNanoseconds() }, sleep: { threadSleep(seconds: $0) })

    /// CLOCK_BOOTTIME in nanoseconds.
    public static func bootTimeNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// A clock that only moves when a thread sleeps on it, for tests of what waits (a bulk run's 300 s outage,
    /// probes with backoff, decided in microseconds): each sleep moves it forward by its length at once
    /// (concurrent sleeps add up, so virtual time runs ahead of what real waits would take, never behind), and
    /// gives up the CPU for 100 µs of real time, so that other threads run between one thread's waits as they
    /// would while it really waited. Wall time is `epoch` plus the virtual time passed.
    public static func virtual(start: UInt64 = 1_000_000_000, epoch: Int64 = 1_700_000_000) -> StarlineClock {
        let time = Locked(start)
        return StarlineClock(
            now: { Timestamp(seconds: epoch &+ Int64(time.withLock { $0 &- start } / 1_000_000_000)) },
            monotonicNanoseconds: { time.withLock { $0 } },
            sleep: { seconds in
                guard seconds > 0, seconds.isFinite else { return }
                let nanoseconds = UInt64(min(seconds, 86_400 * 365) * 1e9)
                time.withLock { now in now = max(now, now &+ nanoseconds) }
                usleep(100)
            })
    }

    /// This clock with its wall time read from `now` instead (a test's fixed time); monotonic time and waits
    /// are its own.
    public func withWallTime(_ now: @escaping @Sendable () -> Timestamp) -> StarlineClock {
        var moved = self
        moved.now = now
        return moved
    }

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
