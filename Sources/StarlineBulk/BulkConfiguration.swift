import StarlineCore

/// How a bulk run goes (`BulkEngine`, `BulkRun`): workers, rate, attempts, backoff and the outage budget.
public struct BulkConfiguration: Sendable {
    /// Requests in flight at most (and worker threads, and connections).
    public var parallel: Int
    /// Adapt the requests in flight from this many up to `parallel` (`--parallel auto`, `ConcurrencyTuner`);
    /// nil: `parallel` in flight (halved by 429s).
    public var startingParallel: Int?
    public var requestsPerSecond: Double?
    /// Attempts per item for transient failures that are the item's own; 429s do not count (the server asked
    /// us to wait, we waited), but at most `maxThrottledAttempts` of them are made; requests made while the
    /// server is down for everyone (`outageTimeout`) do not count either.
    public var maxAttempts: Int
    public var maxThrottledAttempts: Int
    /// Stop the run at the first failed item.
    public var failFast: Bool
    /// Backoff between transient attempts: base × 2^n with jitter, at most `maxBackoff` seconds.
    public var baseBackoff: Double
    public var maxBackoff: Double
    /// Seconds in all the run waits for a server that is down for everyone (`OutageWatch`) before it stops
    /// with the unfinished items `skipped`; nil: no outage handling, every failure is its item's.
    public var outageTimeout: Double?
    /// The clock of the engine's own waits (a test's virtual clock).
    public var clock: BulkClock

    public init(
        parallel: Int = 8, startingParallel: Int? = nil, requestsPerSecond: Double? = nil, maxAttempts: Int = 5,
        maxThrottledAttempts: Int = 50,
        failFast: Bool = false, baseBackoff: Double = 0.2, maxBackoff: Double = 10, outageTimeout: Double? = nil,
        clock: BulkClock = .system
    ) {
        self.parallel = max(1, parallel)
        let ceiling = self.parallel
        self.startingParallel = startingParallel.map { min(max(1, $0), ceiling) }
        self.requestsPerSecond = requestsPerSecond
        self.maxAttempts = max(1, maxAttempts)
        self.maxThrottledAttempts = max(1, maxThrottledAttempts)
        self.failFast = failFast
        self.baseBackoff = baseBackoff
        self.maxBackoff = maxBackoff
        self.outageTimeout = outageTimeout
        self.clock = clock
    }
}
