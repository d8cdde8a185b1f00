import StarlineCore
import StarlineHTTP

/// What happened to one item of a bulk run: each item is reported once, with one of these.
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
    /// This item's answer stopped the whole run (`BulkAttempt.stopRun`): its error is the run's, not the item's.
    public var stoppedTheRun = false
}

extension BulkItemResult where Value == BulkItemStatus {
    /// A revocation's status, whichever way it ended.
    public var status: BulkItemStatus { value ?? failure ?? .failed }
}

/// Runs items through `BulkRun` in one call (the chat outbox, admin listings).
public enum BulkEngine {
    public struct Summary: Sendable {
        /// The error that stopped the run, if one did; the items not attempted then were reported `skipped`.
        public var stopError: StarlineError?
        public var throttledMilliseconds: Int
        public var requests: Int
        /// Time the run waited for a server that was down for everyone.
        public var outageMilliseconds: Int = 0
        /// Requests made while it was down (probes and requests in flight when it went down): charged to no item.
        public var outageRequests: Int = 0
        /// The most requests the run allowed in flight at once (`--parallel auto` finds it).
        public var peakConcurrency: Int = 0

        package init(
            stopError: StarlineError? = nil, throttledMilliseconds: Int, requests: Int, outageMilliseconds: Int = 0,
            outageRequests: Int = 0, peakConcurrency: Int = 0
        ) {
            self.stopError = stopError
            self.throttledMilliseconds = throttledMilliseconds
            self.requests = requests
            self.outageMilliseconds = outageMilliseconds
            self.outageRequests = outageRequests
            self.peakConcurrency = peakConcurrency
        }
    }

    public static func run<Item: Sendable, Value: Sendable>(
        _ items: [Item], _ configuration: BulkConfiguration,
        attempt: @escaping @Sendable (Item) -> BulkAttempt<Value>,
        finished: @escaping @Sendable (BulkItemResult<Item, Value>) -> StarlineError?
    ) -> Summary {
        BulkRun<Item, Value>(configuration).run(
            source: source(items), workers: min(configuration.parallel, max(1, items.count)),
            attempt: attempt, finished: finished)
    }

    /// A `BulkRun` source over items already in memory: each one once, in order.
    public static func source<Item: Sendable>(_ items: [Item]) -> @Sendable () -> Item? {
        let next = Locked(0)
        return {
            next.withLock { n in
                guard n < items.count else { return nil }
                defer { n += 1 }
                return items[n]
            }
        }
    }

    public static func notAttempted(_ cause: StarlineError) -> StarlineError {
        StarlineError(cause.code, "not attempted: the run stopped (\(cause.message))")
    }

    /// The same exponential backoff with jitter as single requests (`RetryPolicy`), with the run's bounds.
    static func backoff(_ attempt: Int, _ configuration: BulkConfiguration) -> Double {
        RetryPolicy(retries: 0, baseDelay: configuration.baseBackoff, maxDelay: configuration.maxBackoff).backoff(attempt)
    }
}
