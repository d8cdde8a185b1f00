#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// One attempt at an HTTP request: the seam between the retrying layers and whatever moves the bytes — the
/// one transport protocol of the suite. `HTTPTransport` (libcurl) is the real one, and the only one a tool
/// builds (through the front ends' factory); tests put a scripted stub here to run clients, and whole tools,
/// in-process.
///
/// An attempt blocks its thread: the bulk workers, the outbox and `tail` run on worker threads and call it
/// directly, and the async `send` runs the retry loop on a thread of its own (a cooperative thread must not
/// block), aborting the transfer through a `CancelFlag` when its task is cancelled (`HTTPTransport`).
///
/// Both forms return the server's answer whatever its status — a 503 is an answer, not an error — and throw a
/// `StarlineError` only when there is none: `TIMEOUT` or `NETWORK_ERROR` (retryable: `send` repeats those),
/// `USAGE` for a request that cannot be sent, `DATA_ERROR` for an answer over the size limit, `INTERRUPTED`
/// when the task is cancelled. Neither repeats the request itself.
public protocol HTTPExchange: Sendable {
    /// One attempt on the calling thread, which it blocks.
    func performBlocking(_ request: HTTPRequestSpec) throws -> HTTPReply
    /// The same, given up with `INTERRUPTED` once `cancel` is set (an exchange that cannot abort a transfer
    /// lets it finish: the retry loop checks the flag after it).
    func performBlocking(_ request: HTTPRequestSpec, cancel: CancelFlag?) throws -> HTTPReply
}

extension HTTPExchange {
    public func performBlocking(_ request: HTTPRequestSpec, cancel: CancelFlag?) throws -> HTTPReply {
        try performBlocking(request)
    }
}

extension WorkerThreads {
    /// `body`, blocking, on a thread of the project's own, awaited: a cooperative thread must not block (S1), and
    /// libdispatch is not linked into the tools. Without a thread to be had (EAGAIN), on this one rather than fail.
    package static func awaiting<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let run: @Sendable () -> Void = { continuation.resume(with: Result { try body() }) }
            if !detach(run) { run() }
        }
    }
}

/// The time the retry loops read and wait on, injected so tests can record the waits instead of sitting them
/// out — and the wall clock of the client code that takes one (`StarlightClient`, `ChatAPI`): a tool's
/// comes from its `IOStreams` (`context.io.now()`), through the front ends' factory.
public struct RetryClock: Sendable {
    /// Unix seconds: to turn a `Retry-After` date into a wait, and every time a client stores or compares.
    public var now: @Sendable () -> Int64
    /// Monotonic nanoseconds: what a budget of seconds is counted on (the best-effort revocations').
    public var monotonic: @Sendable () -> UInt64
    /// Blocks the calling thread for `seconds` (the retry loop's waits, `tail`'s pauses).
    public var pause: @Sendable (_ seconds: Double) -> Void
    /// The retry loop's wait when its task may be cancelled meanwhile: ends early once `cancel` is set.
    public var cancellablePause: @Sendable (_ seconds: Double, _ cancel: CancelFlag) -> Void

    /// A clock whose waits are `pause` (a test's: recorded, not slept), cancelled or not.
    public init(
        now: @escaping @Sendable () -> Int64, monotonic: @escaping @Sendable () -> UInt64 = StarlineClock.bootTimeNanoseconds,
        pause: @escaping @Sendable (_ seconds: Double) -> Void
    ) {
        self.now = now
        self.monotonic = monotonic
        self.pause = pause
        self.cancellablePause = { seconds, _ in pause(seconds) }
    }

    /// A view of `clock` (the run's, `IOStreams.clock`): its wall time in Unix seconds and its waits; a wait
    /// that may be cancelled is a real one, woken by the cancellation (S1: cancelling a sign-in ends its
    /// retries at once, not after the back-off).
    public init(_ clock: StarlineClock) {
        now = { clock.now().seconds }
        monotonic = clock.monotonicNanoseconds
        pause = clock.sleep
        cancellablePause = { seconds, cancel in cancel.sleep(seconds) }
    }

    /// The system's clock: the default of library callers that inject nothing (the tools pass their run's
    /// clock through the factory instead).
    public static let system = RetryClock(StarlineClock.system)
}

extension HTTPExchange {
    /// Sends `request`, repeating it up to `retries` times on network errors, timeouts, 429 and 5xx.
    /// Pass `retries > 0` only for requests that are safe to repeat. Returns the last answer whatever
    /// its status; throws `TIMEOUT` / `NETWORK_ERROR` when the last attempt got none.
    public func send(_ request: HTTPRequestSpec, retries: Int = 0) async throws -> HTTPReply {
        try await send(request, retry: RetryPolicy(retries: retries))
    }

    /// Sends `request` as `retry` says, waiting on `clock` between attempts, without blocking the caller: the
    /// blocking loop (`sendBlocking`) on a thread of its own. Task cancellation ends it with `INTERRUPTED`, during
    /// an attempt (an exchange that can aborts it) or a wait (woken at once).
    public func send(_ request: HTTPRequestSpec, retry: RetryPolicy, clock: RetryClock = .system) async throws -> HTTPReply {
        if Task.isCancelled { throw StarlineError.requestCancelled(request.url) }
        let cancel = CancelFlag()
        return try await withTaskCancellationHandler {
            try await WorkerThreads.awaiting { try self.sendBlocking(request, retry: retry, clock: clock, cancel: cancel) }
        } onCancel: {
            cancel.cancel()
        }
    }

    /// The blocking form of `send`, for synchronous callers (it blocks the calling thread).
    public func sendBlocking(_ request: HTTPRequestSpec, retries: Int = 0, clock: RetryClock = .system) throws -> HTTPReply {
        try sendBlocking(request, retry: RetryPolicy(retries: retries), clock: clock)
    }

    /// The retry loop, the one of the suite: an attempt, `retry`'s decision on its outcome, a wait on `clock`,
    /// until the decision is to stop. With `cancel` (set by `send`'s task cancellation), no attempt starts once it
    /// is set, and a wait ends when it is.
    public func sendBlocking(
        _ request: HTTPRequestSpec, retry: RetryPolicy, clock: RetryClock = .system, cancel: CancelFlag? = nil
    ) throws -> HTTPReply {
        var attempt = 0
        while true {
            if cancel?.isCancelled == true { throw StarlineError.requestCancelled(request.url) }
            let outcome: Result<HTTPReply, StarlineError>
            do {
                outcome = .success(try performBlocking(request, cancel: cancel))
            } catch let error as StarlineError {
                outcome = .failure(error)
            }
            guard let wait = retry.delay(after: outcome, attempt: attempt, now: clock.now()) else { return try outcome.get() }
            attempt += 1
            if let cancel {
                clock.cancellablePause(wait, cancel)
            } else {
                clock.pause(wait)
            }
        }
    }
}

extension StarlineError {
    /// A request given up because its task was cancelled: `INTERRUPTED`, naming the host only.
    static func requestCancelled(_ url: String) -> StarlineError {
        StarlineError(.interrupted, "the request to \(WebURL(url)?.host ?? "the server") was cancelled")
    }
}
