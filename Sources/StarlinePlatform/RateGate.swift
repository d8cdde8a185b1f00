import StarlineCore

/// The one gate every worker of a bulk run passes before each request (S16, bulk runs): a server's 429
/// pauses *all* workers until its `Retry-After` is over, not just the one that got it; while throttled the
/// number of requests in flight is halved (down to one) and then grows back by one per run of successes
/// (AIMD, as TCP does); `--rate N` spaces requests at least 1/N s apart over the whole run.
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
    }

    private let state: Locked<State>

    public init(maxConcurrency: Int, requestsPerSecond: Double? = nil) {
        self.maxConcurrency = max(1, maxConcurrency)
        if let rate = requestsPerSecond, rate.isFinite, rate > 0 {
            spacing = UInt64(min(1e9 / rate, 3_600e9))
        } else {
            spacing = nil
        }
        state = Locked(State(allowed: self.maxConcurrency))
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
        /// No answer (network, timeout): no effect on the pace.
        case noAnswer
    }

    /// Ends the request `acquire` let through.
    public func release(_ outcome: Outcome) {
        let now = MonotonicClock.nanoseconds()
        state.withLockNotifying { s in
            s.inFlight = max(0, s.inFlight - 1)
            switch outcome {
            case .answered:
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
                s.allowed = max(1, s.allowed / 2)
                s.successRun = 0
            case .noAnswer:
                break
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
    public func stop() { state.withLockNotifying { $0.stopped = true } }

    public var isStopped: Bool { state.withLock { $0.stopped } }
    /// How long the run was paused by 429s, in milliseconds.
    public var throttledMilliseconds: Int { state.withLock { Int($0.throttled / 1_000_000) } }
    /// Requests allowed in flight now (tests).
    public var allowedConcurrency: Int { state.withLock { $0.allowed } }
}
