#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// One attempt at an HTTP request: the seam between the retrying layers and whatever moves the bytes — the
/// one transport protocol of the suite. `HTTPTransport` (libcurl) is the real one, and the only one a tool
/// builds (through the front ends' factory); tests put a scripted stub here to run clients, and whole tools,
/// in-process.
///
/// The blocking form is the requirement: the bulk workers, the outbox and `tail` run on worker threads
/// and call it directly. `perform` is its async form (by default on a thread of its own, since a
/// cooperative thread must not block; `HTTPTransport` also aborts the transfer when the task is cancelled).
///
/// Both return the server's answer whatever its status — a 503 is an answer, not an error — and throw a
/// `StarlineError` only when there is none: `TIMEOUT` or `NETWORK_ERROR` (retryable: `send` repeats those),
/// `USAGE` for a request that cannot be sent, `DATA_ERROR` for an answer over the size limit, `INTERRUPTED`
/// when the task is cancelled. Neither repeats the request itself.
public protocol HTTPExchange: Sendable {
    /// One attempt on the calling thread, which it blocks.
    func performBlocking(_ request: HTTPRequestSpec) throws -> HTTPReply
    /// One attempt without blocking the caller's thread.
    func perform(_ request: HTTPRequestSpec) async throws -> HTTPReply
}

extension HTTPExchange {
    /// `performBlocking` on a worker thread (or, without a thread to be had, on this one).
    public func perform(_ request: HTTPRequestSpec) async throws -> HTTPReply {
        if Task.isCancelled { throw StarlineError.requestCancelled(request.url) }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPReply, any Error>) in
            let started = WorkerThreads.detach {
                continuation.resume(with: Result { try self.performBlocking(request) })
            }
            if !started { continuation.resume(with: Result { try self.performBlocking(request) }) }
        }
    }
}

/// The time the retry loops read and wait on, injected so tests can record the waits instead of sitting them
/// out — and the wall clock of the client code that takes one (`StarlightClient`, `ChatAPI`): a tool's
/// comes from its `IOStreams` (`context.io.now()`), through the front ends' factory.
public struct RetryClock: Sendable {
    /// Unix seconds: to turn a `Retry-After` date into a wait, and every time a client stores or compares.
    public var now: @Sendable () -> Int64
    /// Waits `seconds`; throws when the task is cancelled meanwhile (as `Task.sleep` does).
    public var sleep: @Sendable (_ seconds: Double) async throws -> Void
    /// Blocks the calling thread for `seconds` (the blocking callers' waits: `sendBlocking`, `tail`'s pauses).
    public var pause: @Sendable (_ seconds: Double) -> Void

    public init(
        now: @escaping @Sendable () -> Int64, sleep: @escaping @Sendable (_ seconds: Double) async throws -> Void,
        pause: @escaping @Sendable (_ seconds: Double) -> Void = RetryClock.realPause
    ) {
        self.now = now
        self.sleep = sleep
        self.pause = pause
    }

    /// A view of `clock` (the run's, `IOStreams.clock`): its wall time in Unix seconds and its blocking waits;
    /// the async waits are `Task.sleep`, since a blocking wait must not hold the main actor (S1).
    public init(_ clock: StarlineClock) {
        self.init(now: { clock.now().seconds }, sleep: RetryClock.realSleep, pause: clock.sleep)
    }

    /// The system's clock: the default of library callers that inject nothing (the tools pass their run's
    /// clock through the factory instead).
    public static let system = RetryClock(StarlineClock.system)

    public static let realSleep: @Sendable (Double) async throws -> Void = { seconds in
        try await Task.sleep(nanoseconds: ReplyLimits.nanoseconds(seconds))
    }
    public static let realPause: @Sendable (Double) -> Void = { seconds in HTTPTransport.sleep(seconds: seconds) }
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

    /// The blocking form of `send`, for synchronous callers (it blocks the calling thread).
    public func sendBlocking(_ request: HTTPRequestSpec, retries: Int = 0, clock: RetryClock = .system) throws -> HTTPReply {
        try sendBlocking(request, retry: RetryPolicy(retries: retries), clock: clock)
    }

    /// `send(_:retry:clock:)` on the calling thread: the same decisions, with the waits `clock.pause`d in place.
    public func sendBlocking(_ request: HTTPRequestSpec, retry: RetryPolicy, clock: RetryClock = .system) throws -> HTTPReply {
        var attempt = 0
        while true {
            let outcome: Result<HTTPReply, StarlineError>
            do {
                outcome = .success(try performBlocking(request))
            } catch let error as StarlineError {
                outcome = .failure(error)
            }
            guard let wait = retry.delay(after: outcome, attempt: attempt, now: clock.now()) else { return try outcome.get() }
            attempt += 1
            clock.pause(wait)
        }
    }
}

extension StarlineError {
    /// A request given up because its task was cancelled: `INTERRUPTED`, naming the host only.
    static func requestCancelled(_ url: String) -> StarlineError {
        StarlineError(.interrupted, "the request to \(WebURL(url)?.host ?? "the server") was cancelled")
    }
}
