import StarlineCore
import StarlinePlatform
import PlatformCommands

/// One `sl-sessions revoke` run: the journal, the bulk engine, one result line per item, the summary.
@MainActor
final class RevokeRun {
    let options: RevokeCommand.Options
    let plan: RevokePlan
    let credentials: StarlightClient.RunCredentials
    let client: StarlightClient
    let context: CommandContext
    let journal: BulkJournal?
    let started = MonotonicClock.nanoseconds()

    init(_ options: RevokeCommand.Options, plan: RevokePlan, credentials: StarlightClient.RunCredentials, client: StarlightClient,
         context: CommandContext) throws {
        self.options = options
        self.plan = plan
        self.credentials = credentials
        self.client = client
        self.context = context
        journal = try options.journal.map { path in
            try BulkJournal(path: path, resume: options.resume, run: .object([
                ("tool", .string("sl-sessions \(StarlineVersion.current)")), ("command", .string("revoke")),
                ("startedAt", .string(Timestamp.rfc3339String(Timestamp.now().seconds))),
                ("caller", .object([("user", credentials.user["id"] ?? .null), ("sessionId", .string(credentials.sessionId))])),
                ("api", .string(options.platform.api.description)), ("reason", .optional(options.reason)),
                ("items", .int(plan.entries.count)), ("resume", .bool(options.resume)),
            ]))
        }
    }

    func execute() async throws -> ExitStatus {
        let output = context.output
        let report = ResultReporter(output: output, journal: journal, total: plan.entries.count + plan.malformed.count + plan.duplicates.count)
        for bad in plan.malformed {
            report.write(line: bad.line, id: nil, user: nil, status: .failed, attempts: 0,
                         error: StarlineError(.data, "line \(bad.line): \(bad.reason)", details: .object([("text", .string(bad.text))])))
        }
        for duplicate in plan.duplicates {
            report.write(line: duplicate.line, id: duplicate.target.id, user: duplicate.target.user, status: .skipped, attempts: 0,
                         error: StarlineError(.usage, "the same session as line \(duplicate.firstLine)"), counts: false)
        }

        // Items an earlier run finished (the journal says so) are not requested again.
        var pending: [RevokePlan.Entry] = []
        var fromJournal = 0
        for entry in plan.entries {
            if let earlier = journal?.finished[BulkJournal.key(id: entry.target.id, user: entry.target.user)],
               let status = earlier["status"]?.stringValue.flatMap(BulkItemStatus.init) {
                fromJournal += 1
                report.write(line: entry.line, id: entry.target.id, user: entry.target.user, status: status, attempts: 0, error: nil,
                             journaled: false, extra: [("fromJournal", .bool(true))])
            } else {
                pending.append(entry)
            }
        }
        if fromJournal > 0 { output.notice("sl-sessions: \(fromJournal) item\(fromJournal == 1 ? "" : "s") already finished in \(options.journal ?? "the journal"); not requested again") }

        // The caller's own session goes last: once it is revoked, no other request could succeed.
        let isOwn: (RevokePlan.Entry) -> Bool = { [credentials] entry in
            !credentials.sessionId.isEmpty && entry.target.id == credentials.sessionId
                && (entry.target.user == nil || entry.target.user == credentials.user["id"]?.stringValue)
        }
        let own = pending.filter(isOwn)
        pending.removeAll(where: isOwn)

        let transport = HTTPTransport(timeout: Double(options.platform.timeout), maxConnections: options.engine.parallel)
        let revoker = SessionRevoker(api: client.platform, transport: transport, token: credentials.token,
                                     ownUser: credentials.user["id"]?.stringValue)
        let sameAccount = AccountWatch(check: client.sameAccountCheck(credentials))
        let currentRevoked = Locked(false)
        let attempt: @Sendable (RevokePlan.Entry) -> BulkAttempt<BulkItemStatus> = { entry in
            // S14: nothing is attributed to another account. Checked at most once a second, not per request.
            guard sameAccount.stillSame() else {
                return .stopRun(StarlineError(.sessionChanged, "the stored account changed during the run; it stopped (nothing after the change was done for the new account)"))
            }
            let answer = revoker.revoke(entry.target)
            if answer.wasCurrent { currentRevoked.withLock { $0 = true } }
            return answer.attempt
        }
        let finished: @Sendable (BulkItemResult<RevokePlan.Entry, BulkItemStatus>) -> StarlineError? = { result in
            report.write(line: result.item.line, id: result.item.target.id, user: result.item.target.user, status: result.status,
                         attempts: result.attempts, error: result.error)
        }
        var summary = BulkEngine.run(pending, options.engine, attempt: attempt, finished: finished)
        if summary.stopError == nil, !own.isEmpty {
            var single = options.engine
            single.parallel = 1
            let last = BulkEngine.run(own, single, attempt: attempt, finished: finished)
            summary.stopError = last.stopError
            summary.requests += last.requests
            summary.throttledMilliseconds += last.throttledMilliseconds
        } else if !own.isEmpty {
            for entry in own {
                report.write(line: entry.line, id: entry.target.id, user: entry.target.user, status: .skipped, attempts: 0,
                             error: BulkEngine.notAttempted(summary.stopError!))
            }
        }
        if let failure = report.failure ?? journal?.sync() { summary.stopError = summary.stopError ?? failure }

        var stopError = summary.stopError
        if let error = stopError, error.exitStatus == .sessionEnded {
            stopError = client.runSessionEnded(credentials, reason: error)
        }
        if currentRevoked.withLock({ $0 }) {
            // S16: the server says our own session is gone; the local one goes too.
            try? client.clearSession()
        }
        var stillPresent: [RevocationTarget] = []
        if options.verify, stopError == nil { stillPresent = try await RevokeVerification.stillPresent(report.revokedTargets(), client: client, credentials: credentials) }
        report.finish(summary: summary, fromJournal: fromJournal, elapsed: MonotonicClock.nanoseconds() - started,
                      verified: options.verify && stopError == nil ? stillPresent : nil)

        if let stopError { throw stopError }
        let counts = report.counts
        let bad = (counts[.failed] ?? 0) + (counts[.notFound] ?? 0) + stillPresent.count
        if bad > 0 {
            throw StarlineError(.partial, "\(bad) of \(plan.entries.count + plan.malformed.count) items were not revoked"
                                + (stillPresent.isEmpty ? "" : " (\(stillPresent.count) still listed after revoking)"),
                                details: .object([("failed", .int(counts[.failed] ?? 0)), ("notFound", .int(counts[.notFound] ?? 0)),
                                                  ("stillPresent", .int(stillPresent.count))]))
        }
        return .ok
    }
}

/// S14 checks on worker threads, at most one store read a second for the whole run.
final class AccountWatch: Sendable {
    private let check: @Sendable () -> Bool
    private let state = Locked((checkedAt: UInt64(0), same: true))

    init(check: @escaping @Sendable () -> Bool) { self.check = check }

    func stillSame() -> Bool {
        let due = state.withLock { s -> Bool in
            // Read under the lock: another worker may have moved checkedAt past a time read before it.
            let now = MonotonicClock.nanoseconds()
            guard s.same, s.checkedAt == 0 || now >= s.checkedAt + 1_000_000_000 else { return false }
            s.checkedAt = now
            return true
        }
        if due {
            let same = check()
            state.withLock { $0.same = $0.same && same }
        }
        return state.withLock { $0.same }
    }
}
