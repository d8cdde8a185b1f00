import StarlineCore

/// One attempt at an HTTP request: the seam between the retrying layer and whatever moves the bytes.
/// `HTTPTransport` (libcurl) is the real one; tests put a stub here to run the retry logic in-process.
///
/// `perform` returns the server's answer whatever its status — a 503 is an answer, not an error — and throws
/// a `StarlineError` only when there is none: `TIMEOUT` or `NETWORK_ERROR` (retryable: `send` repeats those),
/// `USAGE` for a request that cannot be sent, `DATA_ERROR` for an answer over the size limit, `INTERRUPTED`
/// when the task is cancelled. It never repeats the request itself.
public protocol HTTPExchange: Sendable {
    func perform(_ request: HTTPRequestSpec) async throws -> HTTPReply
}

/// The time the retry loop reads and waits, injected so tests can record the waits instead of sitting them out.
public struct RetryClock: Sendable {
    /// Epoch seconds, to turn a `Retry-After` date into a wait.
    public var now: @Sendable () -> Int64
    /// Waits `seconds`; throws when the task is cancelled meanwhile (as `Task.sleep` does).
    public var sleep: @Sendable (_ seconds: Double) async throws -> Void

    public init(now: @escaping @Sendable () -> Int64, sleep: @escaping @Sendable (_ seconds: Double) async throws -> Void) {
        self.now = now
        self.sleep = sleep
    }

    /// The wall clock and `Task.sleep`.
    public static let system = RetryClock(now: { Timestamp.now().seconds },
                                          sleep: { seconds in try await Task.sleep(nanoseconds: ReplyLimits.nanoseconds(seconds)) })
}

extension HTTPExchange {
    /// Sends `request`, repeating it up to `retries` times on network errors, timeouts, 429 and 5xx.
    /// Pass `retries > 0` only for requests that are safe to repeat. Returns the last answer whatever
    /// its status; throws `TIMEOUT` / `NETWORK_ERROR` when the last attempt got none.
    public func send(_ request: HTTPRequestSpec, retries: Int = 0) async throws -> HTTPReply {
        try await send(request, retry: RetryPolicy(retries: retries))
    }

    /// Sends `request` as `retry` says, waiting on `clock` between attempts. Task cancellation ends it with
    /// `INTERRUPTED`, during an attempt (the exchange aborts it) or a wait.
    public func send(_ request: HTTPRequestSpec, retry: RetryPolicy, clock: RetryClock = .system) async throws -> HTTPReply {
        var attempt = 0
        while true {
            let outcome: Result<HTTPReply, StarlineError>
            do {
                outcome = .success(try await perform(request))
            } catch let error as StarlineError {
                outcome = .failure(error)
            }
            guard let wait = retry.delay(after: outcome, attempt: attempt, now: clock.now()) else { return try outcome.get() }
            attempt += 1
            do {
                try await clock.sleep(wait)
            } catch {
                throw StarlineError.requestCancelled(request.url)
            }
            // Also when the wait ended without noticing (a zero Retry-After, an injected clock): no new attempt.
            if Task.isCancelled { throw StarlineError.requestCancelled(request.url) }
        }
    }
}

extension StarlineError {
    /// A request given up because its task was cancelled: `INTERRUPTED`, naming the host only.
    static func requestCancelled(_ url: String) -> StarlineError {
        StarlineError(.interrupted, "the request to \(WebURL(url)?.host ?? "the server") was cancelled")
    }
}
