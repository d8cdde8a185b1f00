import StarlineCore
import StarlinePlatform
import PlatformCommands
import StarlineBulk

/// The result lines of a revoke run, in the order items end: journal first, then stdout (one lock for both,
/// each line flushed as it is written), the counts for the summary, the progress line and the outage notices
/// on stderr. After `finish` (the summary), nothing more is written: a late answer after a signal's summary
/// is not printed.
final class ResultReporter: Sendable {
    let output: Output
    let journal: BulkJournal?
    /// Items, when known before the run (nil for stdin, which streams).
    let total: Int?
    /// The run's wall clock (`context.io.now()`), for the journal entries' `at`.
    let now: @Sendable () -> Timestamp

    private struct State {
        var counts: [BulkItemStatus: Int] = [:]
        var done = 0
        var failure: StarlineError?
        var lastProgress: UInt64 = 0
        var finished = false
    }

    private let state = Locked(State())
    private let started = MonotonicClock.nanoseconds()

    init(output: Output, journal: BulkJournal?, total: Int?, now: @escaping @Sendable () -> Timestamp) {
        self.output = output
        self.journal = journal
        self.total = total
        self.now = now
    }

    var counts: [BulkItemStatus: Int] { state.withLock { $0.counts } }
    var itemCount: Int { state.withLock { $0.counts.values.reduce(0, +) } }
    var failure: StarlineError? { state.withLock { $0.failure } }

    /// One result line. Duplicates are not items of their own (not counted); items an earlier run finished
    /// are not journaled again. Returns the journal's write error, which stops the run.
    func write(_ report: BulkRevocation.Report) -> StarlineError? {
        if report.kind == .planned { return plan(report) }
        var entry = BulkJournalEntry(
            line: report.line, id: report.target?.id, user: report.target?.user, status: report.status, attempts: report.attempts,
            error: report.error.map(BulkJournalEntry.Failure.init), fromJournal: report.kind == .fromJournal)
        let record = entry.json
        return state.withLock { s -> StarlineError? in
            guard !s.finished else { return nil }
            var failure: StarlineError?
            if report.kind != .fromJournal, let journal, s.failure == nil {
                entry.at = now().seconds
                failure = journal.record(entry.json)
                if let failure { s.failure = failure }
            }
            output.emitLine(record)
            if report.kind != .duplicate { s.counts[report.status, default: 0] += 1 }
            s.done += 1
            progress(&s)
            return failure
        }
    }

    /// A planned item: a journal record only (`{"planned":{"line","id","user"}}`), written as the input is read.
    private func plan(_ report: BulkRevocation.Report) -> StarlineError? {
        guard let journal, let target = report.target else { return nil }
        let record = BulkJournalPlan(line: report.line, target: target).json
        return state.withLock { s -> StarlineError? in
            guard !s.finished, s.failure == nil else { return s.failure }
            let failure = journal.record(record)
            if let failure { s.failure = failure }
            return failure
        }
    }

    /// The server is down for everyone, still down, or back (stderr, always: a cron log shows why a run took long).
    func outage(_ event: OutageWatch.Event) {
        let cause = event.lastError.map { " (\($0.message))" } ?? ""
        switch event.kind {
        case .suspect:
            output.progress("sl-sessions: requests are failing across workers\(cause); every worker waits while one probe tests the server")
        case .down:
            output.notice(
                "sl-sessions: the server is not answering\(cause); waiting for it, one probe at a time (up to \(Int(event.budget)) s in all: --outage-timeout)"
            )
        case .waiting:
            output.notice(
                "sl-sessions: still waiting for the server: \(Int(event.waited)) s so far (up to \(Int(event.budget)) s in all)\(cause)")
        case .up:
            output.notice("sl-sessions: the server answers again after \(Int(event.waited.rounded())) s; the run goes on")
        }
    }

    /// "1,200/10,000 done · 850/s · ETA 10 s" at most four times a second, on a terminal or with --progress.
    private func progress(_ s: inout State) {
        guard output.showsProgress else { return }
        let now = MonotonicClock.nanoseconds()
        guard s.done == total || now - s.lastProgress >= 250_000_000 else { return }
        s.lastProgress = now
        let seconds = Double(now - started) / 1e9
        let rate = seconds > 0 ? Double(s.done) / seconds : 0
        let failed = s.counts[.failed] ?? 0
        var line =
            "sl-sessions: \(s.done)\(total.map { "/\($0)" } ?? "") done, \(s.counts[.revoked] ?? 0) revoked, \(failed) failed · \(Int(rate))/s"
        if let total, s.done < total, rate > 0 { line += " · ETA \(Int((Double(total - s.done) / rate).rounded(.up))) s" }
        output.progress(line)
    }

    /// The summary line (and the verification line before it, with --verify); once, whoever calls first (the
    /// run's end or a signal's clean-up). The journal is synced and stdout flushed.
    func finish(_ outcome: BulkRevocation.Outcome, elapsed: UInt64, shard: BulkShard?) {
        state.withLock { s in
            guard !s.finished else { return }
            s.finished = true
            if let stillPresent = outcome.stillPresent {
                output.emitLine(
                    .object([
                        (
                            "verify",
                            .object([
                                ("checked", .int((s.counts[.revoked] ?? 0) + (s.counts[.alreadyRevoked] ?? 0))),
                                (
                                    "stillPresent",
                                    .array(stillPresent.map { .object([("id", .string($0.id)), ("user", .optional($0.user))]) })
                                )
                            ])
                        )
                    ]))
            }
            let summary = outcome.summary
            var fields: [(String, JSON)] = BulkItemStatus.allCases.map { ($0.rawValue, .int(s.counts[$0] ?? 0)) }
            fields += [
                ("items", .int(s.counts.values.reduce(0, +))), ("duplicates", .int(outcome.duplicates)),
                ("fromJournal", .int(outcome.fromJournal)), ("requests", .int(summary.requests)),
                ("throttledMs", .int(summary.throttledMilliseconds)), ("outageMs", .int(summary.outageMilliseconds)),
                ("outageRequests", .int(summary.outageRequests)), ("peakParallel", .int(summary.peakConcurrency)),
                ("elapsedMs", .int(Int(elapsed / 1_000_000)))
            ]
            if let shard { fields += [("shard", .string(shard.description)), ("otherShards", .int(outcome.otherShards))] }
            if outcome.notFoundWithoutUser > 0 { fields.append(("notFoundWithoutUser", .int(outcome.notFoundWithoutUser))) }
            if let signal = outcome.interrupted { fields += [("interrupted", .bool(true)), ("signal", .int(Int(signal)))] }
            if let error = summary.stopError { fields.append(("stoppedBy", .string(error.code.rawValue))) }
            output.emitLine(.object([("summary", .object(fields))]))
            output.flush()
            if outcome.interrupted != nil { _ = journal?.sync() }
        }
    }
}
