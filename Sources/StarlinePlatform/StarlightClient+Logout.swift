import StarlineCore

// MARK: - Logout (S11, S12, S13)

extension StarlightClient {
    public struct LogoutResult: Sendable {
        public var hadSession: Bool
        public var revoked: Bool
        public var pendingRevocations: Int
        public var error: StarlineError?
    }

    /// Clears the local session and candidate first, then revokes on the server. A network failure
    /// never restores the old identity; the token is remembered and revoked by a later run (S12).
    public func logout() async -> LogoutResult {
        identityChanges += 1
        let old = session
        publish(nil)
        guard let store else {
            let token = old?.accessToken ?? memoryToken
            memoryToken = nil
            return await logoutMemorySession(token: token)
        }
        let record = recordLogout(store)
        if let keyringFailure = record.keyringFailure {
            // A locked keyring means locked (S3, S17): the token could not be read, so it could not be revoked or kept for
            // a later run; deleting it now would leave it working on the server with nobody able to revoke it.
            _ = reportStorageError(keyringFailure)
            return LogoutResult(
                hadSession: true, revoked: false, pendingRevocations: pendingRevocationCount(),
                error: StarlineError(
                    keyringFailure.code,
                    "\(keyringFailure.message). Nothing was logged out: run sl-login logout again once the keyring is unlocked, or sl-login clear to delete the local session without revoking it",
                    details: keyringFailure.details))
        }
        let deletion = deleteCandidate(store, after: record)
        // onError reports storage write/delete errors (S7); a read error is part of the returned result.
        for failure in [record.recordFailure, deletion.failure].compactMap({ $0 }) { _ = reportStorageError(failure) }
        let revocation = await revokeAfterLogout(store, record: record)
        var result = Self.logoutResult(record, deletion, revocation)
        // S13 for the keyring: the key of a logged-out store is deleted with its last record; a failed delete
        // is reported, never hidden (the item is kept as an orphan for sl-login clear to retry).
        if let failure = store.releaseUnusedKeyringItems() {
            _ = reportStorageError(failure)
            if result.error == nil { result.error = failure }
        }
        return result
    }

    /// `switchAccount()`: the same as `logout()`; the host then starts a new `login(_:)` (S11).
    public func switchAccount() async -> LogoutResult { await logout() }

    /// Drops the identity and deletes the candidate, without a server call. Retries an earlier failed delete (S13).
    public func clearSession() throws {
        identityChanges += 1
        publish(nil)
        guard let store else { return }
        do {
            try store.withState { state in
                let candidate = try? state.candidate()
                do { try state.deleteCandidate() } catch {
                    if let c = candidate { try? state.setRevocationMarker(sessionId: c.sessionId) }
                    throw error
                }
                try state.clearRevocationMarker()
                try state.bumpGeneration()
            }
        } catch {
            // S7: storage write/delete errors go to onError too, besides being thrown.
            let failure = Self.starline(error)
            _ = reportStorageError(failure)
            throw failure
        }
        // S13 for the keyring: the key goes with the last record; a locked keyring keeps it (an orphan that the
        // next clear retries), and that is a STORAGE_ERROR, not a clean clear.
        if let failure = store.releaseUnusedKeyringItems() {
            _ = reportStorageError(failure)
            throw failure
        }
    }

    // MARK: Logout steps

    /// STARLINE_TOKEN: nothing is stored, so only the server revocation is left.
    private func logoutMemorySession(token: String?) async -> LogoutResult {
        guard let token else { return LogoutResult(hadSession: false, revoked: false, pendingRevocations: 0) }
        do {
            try await platform.revoke(token: token)
            return LogoutResult(hadSession: true, revoked: true, pendingRevocations: 0)
        } catch {
            // Nothing is stored in this mode, so nothing was "logged out locally": the token (still in
            // STARLINE_TOKEN) may work until it expires, and the caller must know.
            return LogoutResult(
                hadSession: true, revoked: false, pendingRevocations: 0,
                error: StarlineError(
                    .network,
                    "the token from STARLINE_TOKEN could not be revoked (nothing is stored locally, so nothing else was cleared): \(Self.starline(error).message)",
                    retryable: true))
        }
    }

    /// Step 1, committed on its own: the token to revoke is remembered before anything else can fail (S12), and
    /// the generation bump supersedes restores in flight. Whatever fails here, the delete still runs.
    private func recordLogout(_ store: SessionStore) -> LogoutRecord {
        var record = LogoutRecord()
        do {
            try store.withState { state in
                do { record.candidate = try state.candidate() } catch {
                    let failure = Self.starline(error)
                    if failure.code == .storageLocked || failure.code == .keyringUnavailable {
                        record.keyringFailure = failure
                        throw failure
                    }
                    record.readFailure = failure
                }
                try state.clearPendingLogin()
                try state.bumpGeneration()
                if let c = record.candidate { try state.addPendingRevocation(sessionId: c.sessionId, accessToken: c.accessToken) }
            }
        } catch {
            if record.keyringFailure == nil { record.recordFailure = Self.starline(error) }
        }
        return record
    }

    /// Step 2: the delete, also of a candidate that could not be read (the row needs no key). When it fails, the
    /// marker — a file beside the db, kept through the rollback — makes later runs refuse it (S13); an empty
    /// marker refuses any candidate, for one whose session id is unknown.
    private func deleteCandidate(_ store: SessionStore, after record: LogoutRecord) -> LogoutDeletion {
        var deletion = LogoutDeletion()
        do {
            try store.withState { state in
                do { try state.deleteCandidate() } catch {
                    if record.hadSession {
                        do {
                            try state.setRevocationMarker(sessionId: record.candidate?.sessionId ?? "")
                            deletion.markerWritten = true
                        } catch {}
                    }
                    throw error
                }
            }
        } catch {
            deletion.failure = Self.starline(error)
        }
        return deletion
    }

    /// Step 3: revoke what this logout and earlier offline logouts could not — and this token directly when
    /// it could not be remembered for a later run.
    private func revokeAfterLogout(_ store: SessionStore, record: LogoutRecord) async -> LogoutRevocation {
        var revokedDirectly = false
        if record.recordFailure != nil, let c = record.candidate {
            revokedDirectly = (try? await platform.revoke(token: c.accessToken)) != nil
        }
        // The user asked for this logout: every remembered token gets its full attempts, not the best-effort budget.
        let lastFailure = await retryPendingRevocations(
            budget: configuration.timeout * Double(max(1, pendingRevocationCount())) * 3, retries: 2)
        let left = pendingRevocationCount()
        let revokedThis =
            revokedDirectly
            || record.candidate.map { c in
                !((try? store.withState { try $0.pendingRevocations() })?.contains { $0.sessionId == c.sessionId } ?? true)
            } ?? false
        return LogoutRevocation(revokedThis: revokedThis, left: left, lastFailure: lastFailure)
    }

    /// Step 4, the result: the first storage failure decides the message, and never reads as a clean logout.
    private static func logoutResult(_ record: LogoutRecord, _ deletion: LogoutDeletion, _ revocation: LogoutRevocation) -> LogoutResult {
        let hadSession = record.hadSession
        let left = revocation.left
        if let deleteFailure = deletion.failure {
            let consequence =
                deletion.markerWritten
                ? "it will not be used again — run sl-login clear to retry"
                : "and no marker could be written, so a later run may still use it — run sl-login clear to retry"
            return LogoutResult(
                hadSession: hadSession, revoked: revocation.revokedThis, pendingRevocations: left,
                error: StarlineError(
                    .storage, "logged out, but the stored session could not be deleted (\(deleteFailure.message)); \(consequence)"))
        }
        if let readFailure = record.readFailure {
            return LogoutResult(
                hadSession: hadSession, revoked: false, pendingRevocations: left,
                error: StarlineError(
                    .storage,
                    "the stored session could not be read (\(readFailure.message)); it was deleted here, but its token could not be revoked on the server"
                ))
        }
        if let recordFailure = record.recordFailure, !revocation.revokedThis {
            return LogoutResult(
                hadSession: hadSession, revoked: false, pendingRevocations: left,
                error: StarlineError(
                    .storage,
                    "logged out locally, but the server revocation failed and the token could not be remembered for a later run (\(recordFailure.message))"
                ))
        }
        if left > 0 {
            // The code says what stopped the revocation (a refused connection, a 503, a 429); anything else still
            // reads as transient, since the next run retries it.
            let cause = revocation.lastFailure.flatMap { $0.exitStatus == .transient ? $0 : nil }
            let because = cause.map { " (\($0.message))" } ?? ""
            return LogoutResult(
                hadSession: hadSession, revoked: revocation.revokedThis, pendingRevocations: left,
                error: StarlineError(
                    cause?.code ?? .network,
                    "logged out locally; the server revocation is pending (\(left) token\(left == 1 ? "" : "s"))\(because) and will be retried by the next sl-restore or sl-login run",
                    retryable: true))
        }
        return LogoutResult(hadSession: hadSession, revoked: revocation.revokedThis, pendingRevocations: 0)
    }
}

/// Step 1 of a logout: what the store held, and what could not be read or recorded.
private struct LogoutRecord {
    var candidate: StoredCandidate?
    /// The candidate could not be read; its row is deleted all the same.
    var readFailure: StarlineError?
    /// The transaction failed, so the token is not remembered for a later run.
    var recordFailure: StarlineError?
    /// The keyring is locked or unreachable: nothing was changed, and the logout stops here.
    var keyringFailure: StarlineError?
    /// Whether there was a session to end, also one that could not be read.
    var hadSession: Bool { candidate != nil || readFailure != nil }
}

/// Step 2: the delete, and whether the S13 marker stands in for a failed one.
private struct LogoutDeletion {
    var failure: StarlineError?
    var markerWritten = false
}

/// Step 3: the server side.
private struct LogoutRevocation {
    /// This logout's token is revoked: directly, or among the pending ones.
    var revokedThis: Bool
    /// Tokens still waiting to be revoked, this one's included.
    var left: Int
    /// Why the last revocation attempt failed.
    var lastFailure: StarlineError?
}

// MARK: - Pending revocations (S12)

extension StarlightClient {
    /// Best-effort: revoke tokens an earlier offline logout could not; never changes the caller's result.
    /// How long best-effort work (revoking tokens an offline logout left behind) may take in all, so it never
    /// delays a command's own answer by more: each attempt gets what is left, with no retries, and what does not
    /// fit waits for a later run. (Before: 4 pending tokens against an unreachable server cost every sl-restore
    /// 26 s with --timeout 2.)
    public static let bestEffortBudget: Double = 2

    /// `sl-login logout`, asked explicitly, passes a budget that lets every token have its full attempts.
    /// Returns the last revocation that failed (nil: none failed, or there was nothing to do).
    @discardableResult
    public func retryPendingRevocations(budget: Double = StarlightClient.bestEffortBudget, retries: Int = 0) async -> StarlineError? {
        guard let store else { return nil }
        guard let pending = try? store.withState({ try $0.pendingRevocations() }), !pending.isEmpty else { return nil }
        var lastFailure: StarlineError?
        let deadline = clock.monotonic() + UInt64(min(max(0, budget), 86_400) * 1_000_000_000)
        var revokedAny = false
        // The last token revoked may leave the keyring key unused (a logged-out store).
        defer { if revokedAny, let failure = store.releaseUnusedKeyringItems() { onError?(failure) } }
        for item in pending {
            let now = clock.monotonic()
            guard now < deadline else { return lastFailure }
            let remaining = min(Double(deadline - now) / 1_000_000_000, configuration.timeout)
            // The run's transport, each request bounded by what is left of the budget.
            var api = platform
            api.retries = retries
            api.requestTimeout = max(0.05, remaining)
            do {
                try await api.revoke(token: item.accessToken)
                _ = try? store.withState { try $0.removePendingRevocation(id: item.id) }
                revokedAny = true
            } catch {
                let failure = Self.starline(error)
                lastFailure = failure
                let attempts = item.attempts == .max ? item.attempts : item.attempts + 1
                _ = try? store.withState { try $0.updatePendingRevocation(id: item.id, attempts: attempts, lastError: failure.message) }
            }
        }
        return lastFailure
    }

    public func pendingRevocationCount() -> Int {
        (try? store?.withState { try $0.pendingRevocations().count }) ?? 0
    }
}
