import StarlineCore

/// What happened to one item of a bulk run (issue 11 item 3).
public enum BulkItemStatus: String, Sendable, CaseIterable {
    case revoked, alreadyRevoked, notFound, failed, skipped

    /// A final answer: a later run (`--resume`) need not ask again.
    public var isFinal: Bool { self == .revoked || self == .alreadyRevoked || self == .notFound }
}

/// What one attempt at an item came to, as the caller's request function judges the answer.
public enum BulkAttempt<Value: Sendable>: Sendable {
    /// Done: the item's value (a revocation's status, a listing's records).
    case done(Value)
    /// A 429: every worker pauses for `retryAfter` (the server's, if it named one), then this item is tried again.
    case throttled(retryAfter: Double?)
    /// No answer, or a 5xx: tried again after a backoff, up to the attempt limit; `error` if it runs out.
    case transient(StarlineError)
    /// A final failure of this item (a 4xx other than those below): the run goes on.
    case failed(StarlineError)
    /// The whole run must stop (not an admin, the caller's own session ended, the account changed).
    case stopRun(StarlineError)
}

public struct BulkConfiguration: Sendable {
    public var parallel: Int
    public var requestsPerSecond: Double?
    /// Attempts per item for transient failures; 429s do not count (the server asked us to wait, we waited),
    /// but at most `maxThrottledAttempts` of them are made.
    public var maxAttempts: Int
    public var maxThrottledAttempts: Int
    /// Stop the run at the first failed item.
    public var failFast: Bool
    /// Backoff between transient attempts: base × 2^n with jitter, at most `maxBackoff` seconds.
    public var baseBackoff: Double
    public var maxBackoff: Double

    public init(parallel: Int = 8, requestsPerSecond: Double? = nil, maxAttempts: Int = 5, maxThrottledAttempts: Int = 50,
                failFast: Bool = false, baseBackoff: Double = 0.2, maxBackoff: Double = 10) {
        self.parallel = max(1, parallel)
        self.requestsPerSecond = requestsPerSecond
        self.maxAttempts = max(1, maxAttempts)
        self.maxThrottledAttempts = max(1, maxThrottledAttempts)
        self.failFast = failFast
        self.baseBackoff = baseBackoff
        self.maxBackoff = maxBackoff
    }
}

/// The end of one item: reported once, by the worker that finished it.
public struct BulkItemResult<Item: Sendable, Value: Sendable>: Sendable {
    public var index: Int
    public var item: Item
    /// The value of an item that was done; nil when it failed or was skipped.
    public var value: Value?
    /// `.failed` or `.skipped` when there is no value.
    public var failure: BulkItemStatus?
    public var attempts: Int
    public var error: StarlineError?
}

extension BulkItemResult where Value == BulkItemStatus {
    /// A revocation's status, whichever way it ended.
    public var status: BulkItemStatus { value ?? failure ?? .failed }
}

/// Runs `attempt` over every item on `parallel` threads through one `RateGate`, and reports each item's end
/// exactly once through `finished` (called under one lock, in the order items end: the journal and stdout
/// see the same sequence; an error it returns stops the run). Blocking threads, not tasks: each request is a blocking libcurl transfer on a
/// reused keep-alive handle.
public enum BulkEngine {
    public struct Summary: Sendable {
        /// The error that stopped the run, if one did; the items not attempted then were reported `skipped`.
        public var stopError: StarlineError?
        public var throttledMilliseconds: Int
        public var requests: Int
    }

    public static func run<Item: Sendable, Value: Sendable>(_ items: [Item], _ configuration: BulkConfiguration,
                                                            attempt: @escaping @Sendable (Item) -> BulkAttempt<Value>,
                                                            finished: @escaping @Sendable (BulkItemResult<Item, Value>) -> StarlineError?) -> Summary {
        let gate = RateGate(maxConcurrency: configuration.parallel, requestsPerSecond: configuration.requestsPerSecond)
        let shared = Locked(RunState())
        let stop: @Sendable (StarlineError) -> Void = { error in
            shared.withLock { s in if s.stopError == nil { s.stopError = error } }
            gate.stop()
        }
        // `finished` failing (the journal cannot be written) stops the run: nothing may be done unrecorded.
        let report: @Sendable (BulkItemResult<Item, Value>) -> Void = { result in
            let failure = shared.withLock { _ -> StarlineError? in finished(result) }
            if let failure { stop(failure) }
        }
        let stoppedError: @Sendable () -> StarlineError = {
            shared.withLock { $0.stopError } ?? StarlineError(.internalError, "the run stopped")
        }

        WorkerThreads.run(count: min(configuration.parallel, max(1, items.count))) { _ in
            while true {
                let index: Int? = shared.withLock { s in
                    guard s.next < items.count else { return nil }
                    defer { s.next += 1 }
                    return s.next
                }
                guard let index else { return }
                let item = items[index]
                var attempts = 0, transient = 0, throttled = 0
                var outcome: (value: Value?, failure: BulkItemStatus?, error: StarlineError?)?
                while outcome == nil {
                    guard gate.acquire() else {
                        outcome = (nil, .skipped, notAttempted(stoppedError()))
                        break
                    }
                    attempts += 1
                    shared.withLock { $0.requests += 1 }
                    switch attempt(item) {
                    case .done(let value):
                        gate.release(.answered)
                        outcome = (value, nil, nil)
                    case .failed(let error):
                        gate.release(.answered)
                        outcome = (nil, .failed, error)
                        if configuration.failFast { stop(StarlineError(.partial, "--fail-fast: item \(index + 1) failed: \(error.message)")) }
                    case .stopRun(let error):
                        gate.release(.answered)
                        stop(error)
                        outcome = (nil, .failed, error)
                    case .throttled(let retryAfter):
                        throttled += 1
                        gate.release(.throttled(retryAfter: retryAfter, fallback: backoff(throttled - 1, configuration)))
                        if throttled >= configuration.maxThrottledAttempts {
                            outcome = (nil, .failed, StarlineError(.rateLimited, "still throttled (429) after \(throttled) attempts"))
                        }
                    case .transient(let error):
                        transient += 1
                        gate.release(.noAnswer)
                        if transient >= configuration.maxAttempts {
                            outcome = (nil, .failed, error)
                        } else {
                            HTTPTransport.sleep(seconds: backoff(transient - 1, configuration))
                        }
                    }
                }
                let (value, failure, error) = outcome!
                report(BulkItemResult(index: index, item: item, value: value, failure: failure, attempts: attempts, error: error))
            }
        }
        let final = shared.withLock { $0 }
        return Summary(stopError: final.stopError, throttledMilliseconds: gate.throttledMilliseconds, requests: final.requests)
    }

    struct RunState {
        var next = 0
        var stopError: StarlineError?
        var requests = 0
    }

    public static func notAttempted(_ cause: StarlineError) -> StarlineError {
        StarlineError(cause.code, "not attempted: the run stopped (\(cause.message))")
    }

    /// The same exponential backoff with jitter as single requests (`RetryPolicy`), with the run's bounds.
    static func backoff(_ attempt: Int, _ configuration: BulkConfiguration) -> Double {
        RetryPolicy(retries: 0, baseDelay: configuration.baseBackoff, maxDelay: configuration.maxBackoff).backoff(attempt)
    }
}
