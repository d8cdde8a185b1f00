import StarlineCore
import StarlineBulk

/// One bulk revocation (`sl-sessions revoke`), the domain half: the input taken as
/// it arrives — this shard's items only, duplicates and items an earlier run's journal finished answered
/// without a request (`BulkItemIndex`), the caller's own session held back and revoked last (once it is gone
/// no other request could succeed) — through one `BulkRun` with outage handling; what the server says about
/// the caller's own session (S16) and, with `verify`, a second listing of what was revoked.
///
/// Results go to `report` (the journal, then stdout: the front end's), one per input unit, in the order they
/// end. A signal's clean-up calls `interrupt`: no item is taken after it, the requests in flight get ≤ 2 s,
/// and those still out are reported `skipped` (their request may have reached the server; a resumed run
/// asks again, and a revoked session answers "already revoked").
public final class BulkRevocation: @unchecked Sendable {
    // @unchecked: the mutable state is `Locked`; the index is used under the run's source lock and the report lock.
    public struct Entry: Sendable {
        public var line: Int
        public var target: RevocationTarget
        public init(line: Int, target: RevocationTarget) { self.line = line; self.target = target }
    }

    /// One unit of input.
    public enum Input: Sendable {
        case target(Entry)
        case malformed(line: Int, text: String, reason: String)
        /// An item an earlier run planned (`execute`'s `owed`): requested only if this run has not seen it and
        /// no run finished it; nothing is reported for it otherwise.
        case owed(Entry)
    }

    /// One result line.
    public struct Report: Sendable {
        /// `planned`: an item of this run's input (its shard's), reported when it is read, before any request —
        /// for the journal only (`{"planned":{…}}`), so that `journal verify` knows the plan without `--plan`,
        /// also for a run fed from a pipe.
        public enum Kind: Sendable { case item, duplicate, fromJournal, malformed, planned }
        public var kind: Kind
        public var line: Int
        public var target: RevocationTarget?
        public var status: BulkItemStatus
        public var attempts: Int
        public var error: StarlineError?
    }

    public struct Outcome: Sendable {
        public var summary: BulkEngine.Summary
        public var fromJournal = 0
        public var duplicates = 0
        public var otherShards = 0
        /// Items answered 404 on the admin-less route while the caller is an admin: most likely another user's.
        public var notFoundWithoutUser = 0
        /// With `verify`: revoked sessions the server still lists.
        public var stillPresent: [RevocationTarget]?
        public var interrupted: Int32?
    }

    let revoker: SessionRevoker
    let lister: SessionLister
    let credentials: StarlightClient.RunCredentials
    let index: BulkItemIndex
    let shard: BulkShard?
    let sameAccount: @Sendable () -> Bool
    let report: @Sendable (Report) -> StarlineError?
    let run: BulkRun<Entry, BulkItemStatus>

    private struct State {
        var outcome = Outcome(summary: BulkEngine.Summary(stopError: nil, throttledMilliseconds: 0, requests: 0))
        var own: [Entry] = []
        var sourceError: StarlineError?
        var currentRevoked = false
        var revokedUsers: Set<String> = []
    }

    private let state = Locked(State())

    public init(
        configuration: BulkConfiguration, revoker: SessionRevoker, lister: SessionLister, credentials: StarlightClient.RunCredentials,
        index: BulkItemIndex, shard: BulkShard?, sameAccount: @escaping @Sendable () -> Bool,
        onOutage: @escaping @Sendable (OutageWatch.Event) -> Void, report: @escaping @Sendable (Report) -> StarlineError?
    ) {
        self.revoker = revoker
        self.lister = lister
        self.credentials = credentials
        self.index = index
        self.shard = shard
        self.sameAccount = sameAccount
        self.report = report
        run = BulkRun(configuration, onOutage: onOutage, serverAnswers: { [revoker] in revoker.callerCheck.serverAnswers() })
    }

    var ownUser: String? { credentials.user["id"]?.stringValue }
    var isAdmin: Bool { credentials.roles.contains("admin") }

    /// Runs every input `next` yields (nil: the end; a throw ends the input with that error), then what
    /// `owed` yields that this run's input did not name: items an earlier run of the journal planned and did not
    /// finish (a resumed run fed a new listing, from which a session revoked while the earlier run was killed is
    /// gone, still asks for it: its answer, "already revoked", is its final record). With `verify`, lists the
    /// users again afterwards.
    public func execute(
        next: @escaping @Sendable () throws -> Input?, owed: (@Sendable () throws -> (line: Int, target: RevocationTarget)?)? = nil,
        verify: Bool
    ) -> Outcome {
        let attempt: @Sendable (Entry) -> BulkAttempt<BulkItemStatus> = { [self] entry in
            // S14: nothing is attributed to another account.
            guard sameAccount() else {
                return .stopRun(
                    StarlineError(
                        .sessionChanged,
                        "the stored account changed during the run; it stopped (nothing after the change was done for the new account)"))
            }
            let answer = revoker.revoke(entry.target)
            if let hint = answer.rateLimit { run.gate.observe(hint) }
            if answer.wasCurrent { state.withLock { $0.currentRevoked = true } }
            return answer.attempt
        }
        let finished: @Sendable (BulkItemResult<Entry, BulkItemStatus>) -> StarlineError? = { [self] result in
            var error = result.error
            if result.status == .notFound, result.item.target.user == nil, isAdmin {
                state.withLock { $0.outcome.notFoundWithoutUser += 1 }
                error = StarlineError(
                    .notFound,
                    "not one of your sessions; if it is another user's, pass --user UID (or a user column) to revoke it as an admin")
            }
            if verify, result.status == .revoked || result.status == .alreadyRevoked {
                _ = state.withLock { $0.revokedUsers.insert(result.item.target.user ?? "") }
                if let failure = storageError({ try index.markRevoked(id: result.item.target.id, user: result.item.target.user) }) {
                    return failure
                }
            }
            return report(
                Report(
                    kind: .item, line: result.item.line, target: result.item.target, status: result.status,
                    attempts: result.attempts, error: error))
        }
        let inputEnded = Locked(false)
        let input: @Sendable () throws -> Input? = {
            if !inputEnded.withLock({ $0 }) {
                if let item = try next() { return item }
                inputEnded.withLock { $0 = true }
            }
            guard let owed, let (line, target) = try owed() else { return nil }
            return Input.owed(Entry(line: line, target: target))
        }
        var summary = run.run(source: { [self] in take(input) }, attempt: attempt, finished: finished)
        let own = state.withLock { $0.own }
        if summary.stopError == nil, run.stopError == nil, !own.isEmpty {
            var single = run.configuration
            single.parallel = 1
            let ownRun = BulkEngine.run(own, single, attempt: attempt, finished: finished)
            summary.stopError = ownRun.stopError
            summary.requests += ownRun.requests
            summary.throttledMilliseconds += ownRun.throttledMilliseconds
        } else if let cause = summary.stopError ?? run.stopError {
            for entry in own {
                _ = report(
                    Report(
                        kind: .item, line: entry.line, target: entry.target, status: .skipped, attempts: 0,
                        error: BulkEngine.notAttempted(cause)))
            }
        }
        var outcome = state.withLock { s in
            if summary.stopError == nil { summary.stopError = s.sourceError }
            s.outcome.summary = summary
            return s.outcome
        }
        if verify, summary.stopError == nil { outcome.stillPresent = stillPresent() }
        return outcome
    }

    /// True when the server said the caller's own session was revoked (S16: the local one goes too).
    public var revokedTheCurrentSession: Bool { state.withLock { $0.currentRevoked } }

    /// A signal's clean-up: stop taking items, give the requests in flight `grace` seconds, report those
    /// still out as skipped. Returns what the summary needs.
    public func interrupt(signal: Int32, grace: Double) -> Outcome {
        run.stop(StarlineError(.interrupted, "interrupted by signal \(signal)"), abandon: true)
        for (_, entry) in run.drain(seconds: grace) {
            _ = report(
                Report(
                    kind: .item, line: entry.line, target: entry.target, status: .skipped, attempts: 1,
                    error: StarlineError(
                        .interrupted, "interrupted with the request in flight: it may have been revoked; --resume asks again")))
        }
        let soFar = run.summarySoFar
        return state.withLock { s in
            var outcome = s.outcome
            outcome.interrupted = signal
            outcome.summary = soFar
            outcome.summary.stopError = StarlineError(.interrupted, "interrupted by signal \(signal)")
            return outcome
        }
    }

    /// The next entry the engine should request; the rest of the input is answered here.
    private func take(_ next: @Sendable () throws -> Input?) -> Entry? {
        while true {
            let input: Input?
            do { input = try next() } catch {
                state.withLock { $0.sourceError = (error as? StarlineError) ?? StarlineError(.internalError, "\(error)") }
                return nil
            }
            guard let input else { return nil }
            switch input {
            case .malformed(let line, let text, let reason):
                // Reported once for the whole input: by shard 0 (or the only run).
                if (shard?.index ?? 0) == 0 {
                    _ = report(
                        Report(
                            kind: .malformed, line: line, target: nil, status: .failed, attempts: 0,
                            error: StarlineError(.data, "line \(line): \(reason)", details: .object([("text", .string(text))]))))
                }
            case .owed(let entry):
                guard shard?.contains(entry.target) ?? true else { continue }
                let seen: BulkItemIndex.Seen
                do { seen = try index.see(id: entry.target.id, user: entry.target.user, line: entry.line) } catch {
                    state.withLock { $0.sourceError = (error as? StarlineError) ?? StarlineError(.storage, "\(error)") }
                    return nil
                }
                guard case .first(nil) = seen, !isOwnSession(entry.target) else { continue }
                return entry
            case .target(let entry):
                if let shard, !shard.contains(entry.target) {
                    state.withLock { $0.outcome.otherShards += 1 }
                    continue
                }
                let seen: BulkItemIndex.Seen
                do { seen = try index.see(id: entry.target.id, user: entry.target.user, line: entry.line) } catch {
                    state.withLock { $0.sourceError = (error as? StarlineError) ?? StarlineError(.storage, "\(error)") }
                    return nil
                }
                if case .first = seen,
                    let failure = report(
                        Report(kind: .planned, line: entry.line, target: entry.target, status: .skipped, attempts: 0, error: nil))
                {
                    // The plan cannot be recorded: nothing may be requested unrecorded.
                    state.withLock { $0.sourceError = failure }
                    return nil
                }
                switch seen {
                case .duplicate(let firstLine):
                    state.withLock { $0.outcome.duplicates += 1 }
                    _ = report(
                        Report(
                            kind: .duplicate, line: entry.line, target: entry.target, status: .skipped, attempts: 0,
                            error: StarlineError(.usage, "the same session as line \(firstLine)")))
                case .first(let finished?):
                    state.withLock { $0.outcome.fromJournal += 1 }
                    _ = report(
                        Report(kind: .fromJournal, line: entry.line, target: entry.target, status: finished, attempts: 0, error: nil))
                case .first(nil):
                    if isOwnSession(entry.target) {
                        state.withLock { $0.own.append(entry) }
                        continue
                    }
                    return entry
                }
            }
        }
    }

    func isOwnSession(_ target: RevocationTarget) -> Bool {
        !credentials.sessionId.isEmpty && target.id == credentials.sessionId && (target.user == nil || target.user == ownUser)
    }

    /// `--verify`: the users whose sessions were revoked are listed again; any revoked session still listed.
    func stillPresent() -> [RevocationTarget] {
        let users = state.withLock { $0.revokedUsers }
        var present: [RevocationTarget] = []
        for user in users.sorted() {
            let target = user.isEmpty ? nil : user
            if target == nil, revokedTheCurrentSession { continue }  // our own session is gone: we cannot list as ourselves
            let answer = target.map { lister.sessions(of: $0) } ?? lister.ownSessions()
            guard case .done(let sessions) = answer else { continue }
            for session in sessions {
                guard let id = session["id"]?.stringValue else { continue }
                if (try? index.wasRevoked(id: id, user: target)) == true { present.append(RevocationTarget(id: id, user: target)) }
            }
        }
        return present
    }

    private func storageError(_ body: () throws -> Void) -> StarlineError? {
        do { try body(); return nil } catch { return (error as? StarlineError) ?? StarlineError(.storage, "\(error)") }
    }
}
