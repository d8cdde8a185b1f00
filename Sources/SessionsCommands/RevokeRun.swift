#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlinePlatform
import PlatformCommands
import StarlineBulk

/// One `sl-sessions revoke` run, the front end's half: the journal (checked, its header matched on
/// `--resume`), the result lines and summary, the outage notices, the signal clean-up; the orchestration is
/// `BulkRevocation`'s.
@MainActor
final class RevokeRun {
    let options: RevokeCommand.Options
    let factory: PlatformFactory
    let source: RevokeSource
    let credentials: StarlightClient.RunCredentials
    let client: StarlightClient
    let context: CommandContext
    let index: BulkItemIndex
    let journal: BulkJournal?
    let reason: String?
    let started = MonotonicClock.nanoseconds()

    init(
        _ options: RevokeCommand.Options, factory: PlatformFactory, source: RevokeSource, credentials: StarlightClient.RunCredentials,
        client: StarlightClient
    ) throws {
        let context = factory.context
        self.options = options
        self.factory = factory
        self.source = source
        self.credentials = credentials
        self.client = client
        self.context = context
        let index = try BulkItemIndex()
        self.index = index
        let api = options.platform.api.description
        let caller = credentials.user["id"]?.stringValue
        var reason = options.reason
        let io = context.io
        journal = try options.journal.map { path in
            try BulkJournal(
                path: path, resume: options.resume,
                run: {
                    .object([
                        ("tool", .string("sl-sessions \(StarlineVersion.current)")), ("command", .string("revoke")),
                        ("startedAt", .string(Timestamp.rfc3339String(io.now().seconds))),
                        ("caller", .object([("user", .optional(caller)), ("sessionId", .string(credentials.sessionId))])),
                        ("api", .string(api)), ("reason", .optional(reason)),
                        (
                            "input",
                            .object([
                                ("source", .string(options.source)), ("user", .optional(options.user)),
                                ("items", source.total.map { .int($0) } ?? .null)
                            ])
                        ),
                        ("shard", .optional(options.shard?.description)), ("resume", .bool(options.resume))
                    ])
                },
                checkHeader: { header in
                    reason = try BulkJournalHeader(header).resumed(
                        by: BulkJournalHeader(api: api, caller: caller, shard: options.shard?.description, reason: options.reason),
                        journal: path, reasonGiven: options.reason != nil)
                },
                finished: { id, user, status in
                    try index.finished(id: id, user: user, status: status)
                })
        }
        self.reason = reason
    }

    func execute() throws -> ExitStatus {
        let output = context.output
        let io = context.io
        let reporter = ResultReporter(output: output, journal: journal, total: source.total, now: { io.now() })
        let transport = factory.transport(maxConnections: options.engine.parallel)
        var engine = options.engine
        engine.clock = factory.bulkClock
        let revoker = SessionRevoker(
            api: client.platform, transport: transport, token: credentials.token, ownUser: credentials.user["id"]?.stringValue)
        let lister = SessionLister(api: client.platform, transport: transport, token: credentials.token)
        let sameAccount = AccountWatch(check: client.sameAccountCheck(credentials))
        let revocation = BulkRevocation(
            configuration: engine, revoker: revoker, lister: lister, credentials: credentials, index: index, shard: options.shard,
            sameAccount: { sameAccount.stillSame() }, onOutage: { reporter.outage($0) }, report: { reporter.write($0) })
        // SIGINT/SIGTERM/SIGHUP: what finished is reported, the requests in flight get their answers (≤ 1.5 s
        // of the 2 s clean-up budget), then the summary says the run was interrupted.
        let started = self.started
        let shard = options.shard
        let registration = Interrupts.onInterrupt {
            let outcome = revocation.interrupt(signal: Interrupts.pendingSignal ?? SIGTERM, grace: 1.5)
            reporter.finish(outcome, elapsed: MonotonicClock.nanoseconds() - started, shard: shard)
        }
        let source = self.source
        // --resume: what the journal's earlier runs planned and did not finish is owed too, also when this run's
        // input (a new listing) no longer names it.
        let owed = try options.resume ? journal.map { try $0.plannedRecords() } : nil
        let outcome = revocation.execute(next: { try source.next() }, owed: owed, verify: options.verify)
        if outcome.summary.stopError?.code == .interrupted { Interrupts.waitForExit() }
        registration.cancel()

        var stopError = outcome.summary.stopError
        if let failure = reporter.failure ?? journal?.sync() { stopError = stopError ?? failure }
        if let error = stopError, error.exitStatus == .sessionEnded {
            stopError = client.runSessionEnded(credentials, reason: error)
        }
        if revocation.revokedTheCurrentSession {
            // S16: the server says our own session is gone; the local one goes too.
            try? client.clearSession()
        }
        var final = outcome
        final.summary.stopError = stopError
        reporter.finish(final, elapsed: MonotonicClock.nanoseconds() - started, shard: options.shard)

        if let stopError { throw stopError }
        let counts = reporter.counts
        let stillPresent = outcome.stillPresent?.count ?? 0
        let bad = (counts[.failed] ?? 0) + (counts[.notFound] ?? 0) + stillPresent
        if bad > 0 {
            var message = "\(bad) of \(reporter.itemCount) items were not revoked"
            if stillPresent > 0 { message += " (\(stillPresent) still listed after revoking)" }
            if outcome.notFoundWithoutUser > 0 {
                message += "; \(outcome.notFoundWithoutUser) not found among your own sessions: pass --user UID to revoke another user's"
            }
            throw StarlineError(
                .partial, message,
                details: .object([
                    ("failed", .int(counts[.failed] ?? 0)), ("notFound", .int(counts[.notFound] ?? 0)),
                    ("stillPresent", .int(stillPresent)),
                    ("notFoundWithoutUser", .int(outcome.notFoundWithoutUser))
                ]))
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
