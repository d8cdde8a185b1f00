import StarlineCore
import StarlineHTTP

/// The one gate every worker of a bulk run passes before each request (S16, bulk runs): a server's 429
/// pauses *all* workers until its `Retry-After` is over, not just the one that got it; while throttled the
/// number of requests in flight is halved (down to one) and then grows back by one per run of successes
/// (AIMD, as TCP does); `--rate N` spaces requests at least 1/N s apart over the whole run. With a starting
/// concurrency (`--parallel auto`) the number in flight is the `ConcurrencyTuner`'s instead: raised while that
/// raises the throughput, up to `maxConcurrency`.
///
/// Fixed thread counts are what the peers' users complain about: eight workers that each honour their own
/// 429 still hammer the server seven times while the eighth waits.
public final class RateGate: Sendable {
    public let maxConcurrency: Int
    /// Nanoseconds between two requests (`--rate`); nil: no cap.
    public let spacing: UInt64?
    /// Successes in a row, after the last throttle, that let one more request into flight.
    static let successesPerStep = 8

    private struct State {
        /// Nanoseconds between requests that the server's own rate limit asks for (`observe`); 0: none known.
        var serverSpacing: UInt64 = 0
        /// How far behind the pace the schedule may be caught up (slots missed by workers that came late).
        var credit: UInt64 = 0
        var allowed: Int
        var inFlight = 0
        var pausedUntil: UInt64 = 0
        var nextSlot: UInt64 = 0
        var successRun = 0
        var throttled: UInt64 = 0
        var stopped = false
        var tuner: ConcurrencyTuner?
    }

    private let state: Locked<State>

    /// What `admitWorker` waits on, apart from `state`: a release wakes every thread waiting on `state`'s condition,
    /// and workers parked for the whole run (most of them, while the tuner holds a low limit) must not wake on each.
    private struct Admission {
        var allowed: Int
        /// Stopped, or no item is left to take: every parked worker goes on, to find that out and end.
        var open = false
    }

    private let admission: Locked<Admission>

    /// `startingConcurrency`: adapt the number in flight from there up to `maxConcurrency`; nil: `maxConcurrency`,
    /// halved by 429s and grown back to it.
    public init(maxConcurrency: Int, startingConcurrency: Int? = nil, requestsPerSecond: Double? = nil) {
        self.maxConcurrency = max(1, maxConcurrency)
        if let rate = requestsPerSecond, rate.isFinite, rate > 0 {
            spacing = UInt64(min(1e9 / rate, 3_600e9))
        } else {
            spacing = nil
        }
        var initial = State(allowed: self.maxConcurrency)
        if let startingConcurrency {
            initial.tuner = ConcurrencyTuner(start: startingConcurrency, ceiling: self.maxConcurrency)
            initial.allowed = initial.tuner?.limit ?? initial.allowed
        }
        state = Locked(initial)
        admission = Locked(Admission(allowed: initial.allowed))
    }

    /// Waits while worker number `worker` (0-based) is beyond the concurrency allowed now, so that a worker that is
    /// not to send takes no item from the source either (it would hold it unsent); returns at once when the run
    /// stops (the rest is reported skipped) or the source has ended.
    public func admitWorker(_ worker: Int) {
        while true {
            let admitted = admission.await(deadline: MonotonicClock.nanoseconds() + 1_000_000_000) { a in
                a.open || worker < a.allowed ? true : nil
            }
            if admitted != nil { return }
        }
    }

    /// The source has no more items: every parked worker goes on (`admitWorker`) and ends.
    public func sourceEnded() { admission.withLockNotifying { $0.open = true } }

    /// The limit changed from `before` to `allowed`: workers parked beyond the old one go on when it rose. Called
    /// under `state`'s lock (the order of the two locks is always state, then admission), only on a change, so an
    /// answer that leaves the limit as it was costs no second lock.
    private func admit(_ allowed: Int, before: Int) {
        if allowed > before {
            admission.withLockNotifying { $0.allowed = allowed }
        } else {
            admission.withLock { $0.allowed = allowed }
        }
    }

    /// Waits until this worker may send one request; false once the run is stopped.
    public func acquire() -> Bool {
        while true {
            let now = MonotonicClock.nanoseconds()
            enum Decision { case go, stop, wait(UInt64?) }
            let decision: Decision = state.withLock { s in
                if s.stopped { return .stop }
                if s.pausedUntil > now { return .wait(s.pausedUntil) }
                if s.inFlight >= s.allowed { return .wait(nil) }
                let pace = max(spacing ?? 0, s.serverSpacing)
                if pace > 0 {
                    if s.nextSlot > now { return .wait(s.nextSlot) }
                    // A slot that no worker was ready for is not lost, up to `credit`: a wake-up that comes late
                    // would otherwise slip the whole schedule, and the run fall short of the ceiling.
                    s.nextSlot = max(s.nextSlot, now - min(now, s.credit)) + pace
                }
                s.inFlight += 1
                return .go
            }
            switch decision {
            case .go: return true
            case .stop: return false
            case .wait(let until):
                // Woken by any release, pause or stop (withLockNotifying), or at the time the wait was for.
                let deadline = until ?? now + 100_000_000
                _ = state.await(deadline: deadline) { s in s.stopped || (until == nil && s.inFlight < s.allowed) ? true : nil }
            }
        }
    }

    public enum Outcome: Sendable {
        /// An answer that was not a throttle (success or a final error).
        case answered
        /// A 429: every worker waits `retryAfter` seconds (or `fallback` when the server named no time).
        case throttled(retryAfter: Double?, fallback: Double)
        /// No answer (network, timeout) or a 5xx: no effect on the pace; an adapting run takes back a quarter of
        /// what it added (`ConcurrencyTuner.unanswered`).
        case noAnswer
    }

    /// Ends the request `acquire` let through.
    public func release(_ outcome: Outcome) {
        let now = MonotonicClock.nanoseconds()
        state.withLockNotifying { s in
            s.inFlight = max(0, s.inFlight - 1)
            let before = s.allowed
            defer { if s.allowed != before { admit(s.allowed, before: before) } }
            switch outcome {
            case .answered:
                if let tuned = s.tuner?.answered(at: now) {
                    s.allowed = tuned
                    return
                }
                s.successRun += 1
                if s.successRun >= Self.successesPerStep, s.allowed < maxConcurrency {
                    s.allowed += 1
                    s.successRun = 0
                }
            case .throttled(let retryAfter, let fallback):
                let seconds = min(max(0, retryAfter ?? fallback), 3_600)
                let until = now + UInt64(seconds * 1e9)
                if until > s.pausedUntil {
                    // Only the part of this pause that is not already covered counts as throttled time.
                    s.throttled += until - max(now, s.pausedUntil)
                    s.pausedUntil = until
                }
                s.allowed = s.tuner?.throttled() ?? max(1, s.allowed / 2)
                s.successRun = 0
            case .noAnswer:
                if let tuned = s.tuner?.unanswered() { s.allowed = tuned }
            }
        }
    }

    /// What the server said of its rate limit (`RateLimitHint`): with a policy, requests are spaced to stay 5 %
    /// under it (never faster than `--rate` allows either); with the window's quota used up, every worker waits
    /// for its reset — the run goes at the ceiling without meeting it in 429s.
    public func observe(_ hint: RateLimitHint) {
        let now = MonotonicClock.nanoseconds()
        state.withLockNotifying { s in
            if let spacing = hint.spacing, let limit = hint.limit {
                s.serverSpacing = UInt64(min(spacing, 3_600) * 1e9)
                // Catching up 3 % of the window's quota keeps the run under the limit (the pace is 95 % of it).
                s.credit = s.serverSpacing * UInt64(max(1, limit * 3 / 100))
            }
            if hint.remaining == 0, let reset = hint.reset, reset > 0 {
                s.pausedUntil = max(s.pausedUntil, now + UInt64(min(reset, 3_600) * 1e9))
            }
        }
    }

    /// Nanoseconds between requests the server's policy asks for (tests); 0 when none is known.
    var serverSpacing: UInt64 { state.withLock { $0.serverSpacing } }

    /// Stops the run: every waiting and later `acquire` returns false.
    public func stop() {
        state.withLockNotifying { $0.stopped = true }
        admission.withLockNotifying { $0.open = true }
    }

    public var isStopped: Bool { state.withLock { $0.stopped } }
    /// How long the run was paused by 429s, in milliseconds.
    public var throttledMilliseconds: Int { state.withLock { Int($0.throttled / 1_000_000) } }
    /// Requests allowed in flight now (tests).
    public var allowedConcurrency: Int { state.withLock { $0.allowed } }
    /// The most requests the run allowed in flight at once.
    public var peakConcurrency: Int { state.withLock { s in s.tuner?.peak ?? maxConcurrency } }
}
