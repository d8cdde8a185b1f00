import StarlineCore
import StarlineHTTP

/// One bulk run: `attempt` over every item a source yields, on blocking worker
/// threads through one `RateGate` and, when `outageTimeout` is set, one `OutageWatch`; each item's end is
/// reported exactly once through `finished` (called under one lock, in the order items end: the journal and
/// stdout see the same sequence; an error it returns stops the run). Blocking threads, not tasks: each
/// request is a blocking libcurl transfer on a reused keep-alive handle.
///
/// Items are pulled from the source one at a time as workers free up, so a source that reads a pipe
/// streams: the first request goes out while the producer is still writing. `stop` ends the run from any
/// thread (a signal's clean-up); `drain` then waits for the requests in flight and closes the reports, so
/// a late answer is never printed after the run's summary.
public final class BulkRun<Item: Sendable, Value: Sendable>: Sendable {
    public let configuration: BulkConfiguration
    package let gate: RateGate
    let outage: OutageWatch?

    private struct State {
        var next = 0
        var stopError: StarlineError?
        var requests = 0
        var outageRequests = 0
        var inFlight: [Int: Item] = [:]
        /// Set by `drain`: no more items are taken (otherwise a stopped run goes on reading its source and
        /// reports every item `skipped`, so each one is accounted for).
        var abandoned = false
        var reportsClosed = false
    }

    private let state = Locked(State())
    /// Held while a worker asks the source for the next item (which may block on a pipe); counts the asks. (A
    /// count, not `()`: ThreadSanitizer reports the inout access of a zero-sized state as a race.)
    private let sourceLock = Locked(0)

    /// The outage probe when no fresh item is left: nil when the server answered, else why not (`BulkCallerCheck.serverAnswers`).
    let serverAnswers: (@Sendable () -> StarlineError?)?

    public init(
        _ configuration: BulkConfiguration, onOutage: @escaping @Sendable (OutageWatch.Event) -> Void = { _ in },
        serverAnswers: (@Sendable () -> StarlineError?)? = nil
    ) {
        self.configuration = configuration
        self.serverAnswers = serverAnswers
        gate = RateGate(
            maxConcurrency: configuration.parallel, startingConcurrency: configuration.startingParallel,
            requestsPerSecond: configuration.requestsPerSecond)
        // Three distinct items failing with no answer between make an outage suspect — two when only two are in flight.
        let distinct = min(3, max(2, configuration.parallel))
        outage = configuration.outageTimeout.map {
            OutageWatch(threshold: distinct, timeout: $0, clock: configuration.clock, onEvent: onOutage)
        }
    }

    /// Stops the run: no new request is sent; the items waiting and the rest of the source are reported `skipped`.
    /// `abandon` (a signal): the rest of the source is not read either.
    public func stop(_ error: StarlineError, abandon: Bool = false) {
        state.withLock { s in
            if s.stopError == nil { s.stopError = error }
            if abandon { s.abandoned = true }
        }
        gate.stop()
        outage?.stop(error)
    }

    public var stopError: StarlineError? { state.withLock { $0.stopError } }

    /// After `stop`: waits up to `seconds` for the requests in flight to end (their results are reported as
    /// usual), then closes the reports and returns the items still in flight — the caller reports those itself
    /// (their requests may have reached the server). Nothing is reported through `finished` after this.
    public func drain(seconds: Double) -> [(index: Int, item: Item)] {
        let deadline = MonotonicClock.nanoseconds() + ReplyLimits.nanoseconds(seconds)
        state.withLock { $0.abandoned = true }
        _ = state.await(deadline: deadline) { s in s.inFlight.isEmpty ? true : nil }
        return state.withLockNotifying { s in
            s.reportsClosed = true
            return s.inFlight.sorted { $0.key < $1.key }.map { (index: $0.key, item: $0.value) }
        }
    }

    /// Runs until the source is exhausted (or the run stops) and every taken item has been reported.
    public func run(
        source: @escaping @Sendable () -> Item?, workers: Int? = nil,
        attempt: @escaping @Sendable (Item) -> BulkAttempt<Value>,
        finished: @escaping @Sendable (BulkItemResult<Item, Value>) -> StarlineError?
    ) -> BulkEngine.Summary {
        let worker = Worker(source: source, attempt: attempt, finished: finished)
        WorkerThreads.run(count: max(1, workers ?? configuration.parallel)) { number in
            // A worker beyond the concurrency allowed now waits before it takes an item (`admitWorker`).
            while true {
                gate.admitWorker(number)
                guard let (index, item) = take(source) else { break }
                report(work(index, item, worker), worker)
            }
            gate.sourceEnded()
        }
        // An outage past its budget has already stopped the run: the worker whose `admit` gave up called `stop`.
        return summarySoFar
    }

    /// What the run has done until now: its summary when it has ended, and what a signal's clean-up reports
    /// while `run` is still waiting for its workers (the requests already made are counted, not 0).
    public var summarySoFar: BulkEngine.Summary {
        let now = state.withLock { $0 }
        return BulkEngine.Summary(
            stopError: now.stopError, throttledMilliseconds: gate.throttledMilliseconds, requests: now.requests,
            outageMilliseconds: Int((outage?.waitedSeconds ?? 0) * 1000), outageRequests: now.outageRequests,
            peakConcurrency: gate.peakConcurrency)
    }

    /// What a worker does with items: where it takes them, how it attempts one, where it reports the end.
    private struct Worker {
        var source: @Sendable () -> Item?
        var attempt: @Sendable (Item) -> BulkAttempt<Value>
        var finished: @Sendable (BulkItemResult<Item, Value>) -> StarlineError?
    }

    /// Reports an item's end, once.
    private func report(_ result: BulkItemResult<Item, Value>, _ worker: Worker) {
        outage?.ended(item: result.index)
        // `finished` failing (the journal cannot be written) stops the run: nothing may be done unrecorded.
        let failure: StarlineError? = state.withLockNotifying { s in
            s.inFlight[result.index] = nil
            return s.reportsClosed ? nil : worker.finished(result)
        }
        if let failure { stop(failure) }
    }

    /// The next item, unless the run was abandoned; registered as in flight under the same lock as its report.
    private func take(_ source: @Sendable () -> Item?) -> (Int, Item)? {
        sourceLock.withLock { asks in
            asks += 1
            guard !state.withLock({ $0.abandoned }), let item = source() else { return nil }
            return state.withLock { s in
                defer { s.next += 1 }
                s.inFlight[s.next] = item
                return (s.next, item)
            }
        }
    }

    /// One item's attempts until it is done, failed, or the run stops. `probe`: the first attempt is the outage
    /// probe the watch granted (to an item taken fresh for it, which probes no further fresh item itself).
    private func work(_ index: Int, _ item: Item, _ worker: Worker, probe: Bool = false) -> BulkItemResult<Item, Value> {
        let attempt = worker.attempt
        var requests = 0, free = 0, throttled = 0
        /// Streaks of the transient failures charged to this item (`OutageWatch.Charge`); -1 without a watch.
        var charges: [Int] = []
        let stoppedError: () -> StarlineError = { [self] in stopError ?? StarlineError(.internalError, "the run stopped") }
        func skipped(_ cause: StarlineError) -> BulkItemResult<Item, Value> {
            BulkItemResult(
                index: index, item: item, value: nil, failure: .skipped, attempts: requests - free - refunded(),
                error: BulkEngine.notAttempted(cause))
        }
        func refunded() -> Int {
            guard let outage else { return 0 }
            return charges.filter { $0 >= 0 && outage.isOutage(streak: $0) }.count
        }
        func end(_ value: Value?, _ failure: BulkItemStatus?, _ error: StarlineError?) -> BulkItemResult<Item, Value> {
            BulkItemResult(index: index, item: item, value: value, failure: failure, attempts: requests - free - refunded(), error: error)
        }

        /// Its last transient failure, once its attempts are spent and the watch is asked whether it fails
        /// (`OutageWatch.exhausted`): the server may be answering again by the time its wait ends.
        var spentOn: StarlineError?
        /// Whether the spent item fails now (its result), or waits for the server with the other items (nil).
        func spent(_ error: StarlineError) -> BulkItemResult<Item, Value>? {
            switch outage?.exhausted(item: index, canProbe: serverAnswers != nil) ?? .fails {
            case .fails: return end(nil, .failed, error)
            case .waits:
                spentOn = error
                return nil
            case .stopped: return skipped(stoppedError())
            }
        }
        var granted = probe
        while true {
            var probing = false
            if granted {
                granted = false
                probing = true
            } else if let outage {
                switch outage.admit(item: index, mayTakeFresh: !probe) {
                case .go:
                    // Admitted after the wait of a spent item: unless a confirmed outage refunded its streak, the
                    // watch decides again (the probe's answer made it known-bad: it fails, no further request).
                    if let error = spentOn, charges.count - refunded() >= configuration.maxAttempts {
                        if let result = spent(error) { return result }
                        continue
                    }
                case .probe: probing = true
                case .probeWithFreshItem:
                    // This item has failed already: a fresh one tells an outage from items that fail on their own.
                    guard let (freshIndex, fresh) = take(worker.source) else {
                        // None left (the run's tail): ask the server something else; an answer means it is up
                        // and the items waiting fail on their own.
                        guard let serverAnswers else {
                            probing = true
                            break
                        }
                        let ticket = outage.ticket
                        switch serverAnswers() {
                        case nil: outage.answered(probe: true, ticket: ticket)
                        case let error?: outage.probeFailed(error: error)
                        }
                        continue
                    }
                    report(work(freshIndex, fresh, worker, probe: true), worker)
                    continue
                case .stop(let cause):
                    // The outage budget ran out: the whole run stops, every waiting item is skipped.
                    if let cause, stopError == nil { stop(cause) }
                    return skipped(cause ?? stoppedError())
                }
            }
            guard gate.acquire() else {
                if probing { outage?.answered(probe: true) }
                return skipped(stoppedError())
            }
            requests += 1
            state.withLock { $0.requests += 1 }
            // Which failures this request's answer can speak of (`OutageWatch.answered(probe:ticket:)`).
            let ticket = outage?.sending(item: index)
            switch attempt(item) {
            case .done(let value):
                gate.release(.answered)
                outage?.answered(probe: probing, ticket: ticket, item: index)
                return end(value, nil, nil)
            case .failed(let error):
                gate.release(.answered)
                outage?.answered(probe: probing, ticket: ticket, item: index)
                if configuration.failFast { stop(StarlineError(.partial, "--fail-fast: item \(index + 1) failed: \(error.message)")) }
                return end(nil, .failed, error)
            case .stopRun(let error):
                gate.release(.answered)
                outage?.answered(probe: probing, ticket: ticket, item: index)
                stop(error)
                var result = end(nil, .failed, error)
                result.stoppedTheRun = true
                return result
            case .throttled(let retryAfter):
                throttled += 1
                outage?.answered(probe: probing, ticket: ticket, item: index)
                gate.release(.throttled(retryAfter: retryAfter, fallback: BulkEngine.backoff(throttled - 1, configuration)))
                // One budget for every wait of the run (`outageTimeout`): the throttled pauses (each Retry-After,
                // counted when it is set) with the outage's waiting. A server that answers 429 forever would
                // otherwise hold the run for items × attempts × Retry-After.
                if let budget = configuration.outageTimeout {
                    let waited = Double(gate.throttledMilliseconds) / 1000 + (outage?.waitedSeconds ?? 0)
                    if waited > budget {
                        if stopError == nil {
                            stop(
                                StarlineError(
                                    .rateLimited,
                                    "the server kept throttling the run (429): \(Int(waited.rounded())) s of waiting is past the run's budget of \(Int(budget)) s (--outage-timeout); the rest is skipped, --resume continues it",
                                    details: .object([("waitedSeconds", .int(Int(waited.rounded()))), ("budgetSeconds", .int(Int(budget)))])
                                ))
                        }
                        return skipped(stoppedError())
                    }
                }
                if throttled >= configuration.maxThrottledAttempts {
                    return end(nil, .failed, StarlineError(.rateLimited, "still throttled (429) after \(throttled) attempts"))
                }
            case .transient(let error):
                gate.release(.noAnswer)
                let charge = outage?.transientFailure(item: index, probe: probing, error: error) ?? .charged(streak: -1)
                guard case .charged(let streak) = charge else {
                    // Not the item's: the server is down for everyone; `admit` waits for it.
                    free += 1
                    state.withLock { $0.outageRequests += 1 }
                    continue
                }
                charges.append(streak)
                let own = charges.count - refunded()
                if own >= configuration.maxAttempts {
                    // Spent: whether the failures were its own is the watch's to tell (`OutageWatch.exhausted`);
                    // while the server is suspect or down its next request waits in `admit`, and a failure then
                    // is free.
                    if let result = spent(error) { return result }
                    continue
                }
                pause(BulkEngine.backoff(own - 1, configuration))
            }
        }
    }

    /// A backoff that a `stop` cuts short: a stopped run reports its waiting items at once.
    private func pause(_ seconds: Double) {
        let clock = configuration.clock
        let end = clock.now() &+ ReplyLimits.nanoseconds(seconds)
        while stopError == nil {
            let now = clock.now()
            guard now < end else { return }
            clock.sleep(min(end - now, 50_000_000))
        }
    }
}
