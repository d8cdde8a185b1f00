import StarlineCore

/// When to repeat a request, and how long to wait first. Only for requests that are safe to repeat (GET,
/// DELETE, idempotent PUT): the transport cannot tell whether a failed request reached the server.
///
/// The loop that applies it is `HTTPExchange.sendBlocking(_:retry:clock:cancel:)`, the one retry loop (the async
/// `send` runs it on a thread of its own), over any exchange; this type only decides.
public struct RetryPolicy: Sendable, Equatable {
    /// Retries after the first attempt (0: none).
    public var retries: Int
    /// The first backoff; attempt n waits `baseDelay × 2^n`, with jitter, at most `maxDelay`.
    public var baseDelay: Double
    public var maxDelay: Double
    /// A server's `Retry-After` is honoured up to this many seconds.
    public var maxRetryAfter: Double

    public init(retries: Int, baseDelay: Double = 0.2, maxDelay: Double = 5, maxRetryAfter: Double = 10) {
        self.retries = max(0, retries)
        // Negative or non-finite delays would be meaningless (and cannot be slept).
        self.baseDelay = baseDelay.isFinite ? max(0, baseDelay) : 0.2
        self.maxDelay = maxDelay.isFinite ? max(0, maxDelay) : 5
        self.maxRetryAfter = maxRetryAfter.isFinite ? max(0, maxRetryAfter) : 10
    }

    public static let none = RetryPolicy(retries: 0)

    /// True for the answers worth repeating: 429 and 5xx (but not 501 Not Implemented or 505).
    public static func isRetryable(status: Int) -> Bool {
        status == 429 || (500...599).contains(status) && status != 501 && status != 505
    }

    /// Seconds to wait before repeating attempt `attempt` (0-based) that ended in `outcome`, or nil when the
    /// outcome is final: no retries left, an answer not worth repeating, or an error that is not transient.
    /// `now` (Unix seconds) is only read for a `Retry-After` date.
    func delay(after outcome: Result<HTTPReply, StarlineError>, attempt: Int, now: Int64) -> Double? {
        guard attempt < retries else { return nil }
        switch outcome {
        case .success(let reply): return delay(after: reply, attempt: attempt, now: now)
        case .failure(let error): return delay(after: error, attempt: attempt)
        }
    }

    /// Seconds to wait before retry number `attempt` (0-based) after `reply`, or nil when it is not retryable.
    func delay(after reply: HTTPReply, attempt: Int, now: Int64) -> Double? {
        guard Self.isRetryable(status: reply.status) else { return nil }
        if let retryAfter = reply.header("Retry-After").flatMap({ RetryPolicy.parseRetryAfter($0, now: now) }) {
            return max(0, min(retryAfter, maxRetryAfter))
        }
        return backoff(attempt)
    }

    /// Seconds to wait before retry number `attempt` after a transport error, or nil when it is not retryable.
    func delay(after error: StarlineError, attempt: Int) -> Double? {
        guard error.retryable, error.code == .network || error.code == .timeout else { return nil }
        return backoff(attempt)
    }

    /// A transport error that every request to this server would meet, whatever it asks: the server's
    /// certificate does not verify (TLS_ERROR), or the HTTP library cannot run (INTERNAL). A run of many items
    /// stops on it instead of failing each item in turn: nothing about the items is wrong, so they stay as
    /// they were (pending in the journal or the outbox) for the run after the trust is fixed.
    public static func failsEveryRequest(_ error: StarlineError) -> Bool {
        error.code == .tls || error.code == .internalError
    }

    package func backoff(_ attempt: Int) -> Double {
        let full = max(0, min(maxDelay, baseDelay * Double(1 << min(attempt, 20))))
        return full * Double.random(in: 0.5...1.0)  // "equal jitter": spread retries of many clients
    }

    // MARK: Retry-After

    /// `Retry-After` (delta-seconds or an HTTP-date, RFC 9110 §10.2.3) as seen at `now` (Unix seconds, the
    /// caller's injected clock); a date in the past is 0.
    public static func parseRetryAfter(_ value: String, now: Int64) -> Double? {
        retryAfterSeconds(value, now: now).map(Double.init)
    }

    /// `Retry-After` in whole seconds from `now`: delta-seconds (`1*DIGIT`, so no sign) saturated at Int64.max
    /// — "a very long time", which the policy caps at `maxRetryAfter` — or an IMF-fixdate (0 when past). Nil
    /// for anything else (a negative number included): the policy's own backoff applies then.
    public static func retryAfterSeconds(_ value: String, now: Int64) -> Int64? {
        let text = value.trimmingWhitespace()
        let digits = text.utf8
        if !digits.isEmpty, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            var seconds: Int64 = 0
            for digit in digits {
                let (times10, o1) = seconds.multipliedReportingOverflow(by: 10)
                let (next, o2) = times10.addingReportingOverflow(Int64(digit - 0x30))
                if o1 || o2 { return .max }
                seconds = next
            }
            return seconds
        }
        guard let date = HTTPDate.parseIMFFixdate(text) else { return nil }
        // Both ends are bounded (a four-digit year, the clock), but a clock set to an absurd time must not trap.
        let (delta, overflow) = date.subtractingReportingOverflow(now)
        return overflow ? (now < 0 ? .max : 0) : max(0, delta)
    }

    static func parseIMFFixdate(_ text: String) -> Int64? { HTTPDate.parseIMFFixdate(text) }
}
