import StarlineCore
import StarlinePlatform
import PlatformCommands

/// The result lines of a revoke run, in the order items end: journal first, then stdout (one lock for both),
/// the counts for the summary, and the progress line on stderr.
final class ResultReporter: Sendable {
    let output: Output
    let journal: BulkJournal?
    let total: Int

    private struct State {
        var counts: [BulkItemStatus: Int] = [:]
        var done = 0
        var revoked: [RevocationTarget] = []
        var failure: StarlineError?
        var lastProgress: UInt64 = 0
    }

    private let state = Locked(State())
    private let started = MonotonicClock.nanoseconds()

    init(output: Output, journal: BulkJournal?, total: Int) {
        self.output = output
        self.journal = journal
        self.total = total
    }

    var counts: [BulkItemStatus: Int] { state.withLock { $0.counts } }
    var failure: StarlineError? { state.withLock { $0.failure } }
    func revokedTargets() -> [RevocationTarget] { state.withLock { $0.revoked } }

    /// One item's line; `counts: false` for lines that are not items of their own (duplicates). Returns the
    /// journal's write error, which stops the run.
    @discardableResult
    func write(line: Int, id: String?, user: String?, status: BulkItemStatus, attempts: Int, error: StarlineError?,
               counts: Bool = true, journaled: Bool = true, extra: [(String, JSON)] = []) -> StarlineError? {
        var fields: [(String, JSON)] = [("line", .int(line)), ("id", .optional(id)), ("user", .optional(user)),
                                        ("status", .string(status.rawValue)), ("attempts", .int(attempts))]
        if let error {
            var described: [(String, JSON)] = [("code", .string(error.code.rawValue)), ("message", .string(error.message))]
            if let server = error.details?["serverCode"] { described.append(("serverCode", server)) }
            fields.append(("error", .object(described)))
        }
        fields += extra
        let record = JSON.object(fields)
        return state.withLock { s -> StarlineError? in
            var failure: StarlineError?
            if journaled, let journal, s.failure == nil {
                var entry = record
                entry.set("at", .string(Timestamp.rfc3339String(Timestamp.now().seconds)))
                failure = journal.record(entry)
                if let failure { s.failure = failure }
            }
            output.emitLine(record)
            if counts { s.counts[status, default: 0] += 1 }
            if status == .revoked || status == .alreadyRevoked, let id { s.revoked.append(RevocationTarget(id: id, user: user)) }
            s.done += 1
            progress(&s)
            return failure
        }
    }

    /// "1,200/10,000 · 850/s · ETA 10 s" at most four times a second, on a terminal or with --progress.
    private func progress(_ s: inout State) {
        guard output.showsProgress else { return }
        let now = MonotonicClock.nanoseconds()
        guard s.done == total || now - s.lastProgress >= 250_000_000 else { return }
        s.lastProgress = now
        let seconds = Double(now - started) / 1e9
        let rate = seconds > 0 ? Double(s.done) / seconds : 0
        let eta = rate > 0 ? Int((Double(total - s.done) / rate).rounded(.up)) : 0
        let failed = s.counts[.failed] ?? 0
        output.progress("sl-sessions: \(s.done)/\(total) done, \(s.counts[.revoked] ?? 0) revoked, \(failed) failed · \(Int(rate))/s"
                        + (s.done < total ? " · ETA \(eta) s" : ""))
    }

    /// The summary line (and the verification line before it, with --verify).
    func finish(summary: BulkEngine.Summary, fromJournal: Int, elapsed: UInt64, verified stillPresent: [RevocationTarget]?) {
        if let stillPresent {
            output.emitLine(.object([("verify", .object([
                ("checked", .int(revokedTargets().count)),
                ("stillPresent", .array(stillPresent.map { .object([("id", .string($0.id)), ("user", .optional($0.user))]) })),
            ]))]))
        }
        let counts = self.counts
        var fields: [(String, JSON)] = BulkItemStatus.allCases.map { ($0.rawValue, .int(counts[$0] ?? 0)) }
        fields += [("items", .int(counts.values.reduce(0, +))), ("fromJournal", .int(fromJournal)), ("requests", .int(summary.requests)),
                   ("throttledMs", .int(summary.throttledMilliseconds)), ("elapsedMs", .int(Int(elapsed / 1_000_000)))]
        if let error = summary.stopError { fields.append(("stoppedBy", .string(error.code.rawValue))) }
        output.emitLine(.object([("summary", .object(fields))]))
    }
}

/// `--verify`: list again and report revoked sessions the server still lists.
enum RevokeVerification {
    @MainActor
    static func stillPresent(_ revoked: [RevocationTarget], client: StarlightClient,
                             credentials: StarlightClient.RunCredentials) async throws -> [RevocationTarget] {
        let users = Set(revoked.map(\.user))
        var listed = Set<RevocationTarget>()
        let platform = client.platform
        let token = credentials.token
        for user in users {
            let sessions: [JSON]
            if let user {
                sessions = try await client.authenticated { _ in try await platform.adminSessions(token: token, user: user) }
            } else if revoked.contains(where: { $0.user == nil && $0.id == credentials.sessionId }) {
                continue  // our own session is gone: we cannot list as ourselves any more
            } else {
                sessions = try await client.sessions()
            }
            for session in sessions { if let id = session["id"]?.stringValue { listed.insert(RevocationTarget(id: id, user: user)) } }
        }
        return revoked.filter { listed.contains($0) }
    }
}
