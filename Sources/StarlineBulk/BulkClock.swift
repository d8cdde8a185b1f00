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

    public static let system = BulkClock(
        now: { MonotonicClock.nanoseconds() },
        sleep: { HTTPTransport.sleep(seconds: Double($0) / 1e9) })

    /// Sleeps `seconds` (negative and non-finite are 0; at most a day).
    public func sleep(seconds: Double) {
        sleep(ReplyLimits.nanoseconds(seconds))
    }

    /// A clock that only moves when a thread sleeps on it: each sleep moves it forward by its length at once
    /// (concurrent sleeps add up, so virtual time runs ahead of what real waits would take, never behind),
    /// and gives up the CPU for 100 µs of real time, so that the other workers run between one worker's
    /// attempts as they would while it really waited (else one thread could spend all of an item's backoffs
    /// before any other thread is scheduled).
    public static func virtual(start: UInt64 = 1_000_000_000) -> BulkClock {
        let time = Locked(start)
        return BulkClock(
            now: { time.withLock { $0 } },
            sleep: { nanoseconds in
                time.withLock { now in now = max(now, now &+ nanoseconds) }
                usleep(100)
            })
    }
}
