import StarlineCore
import StarlineSQLite

/// The state of one `StoreKey`, valid only inside `SessionStore.withState` (afterwards every method throws
/// INTERNAL). Every change belongs to the enclosing transaction, except the revocation marker, a file.
public final class SessionState {
    let store: SessionStore
    let database: SQLiteDatabase
    let sealer: RecordSealer
    private let marker: RevocationMarker
    private var isValid = true
    /// `clearRevocationMarker()` was called: the marker is removed once the transaction has committed.
    private(set) var removesMarkerAfterCommit = false

    /// The per-key generation: bumped by every login start/complete/cancel, logout and clear (S6, S9), so
    /// work that started under an older generation can tell that it was superseded. 0 for a new key.
    public private(set) var generation: Int64

    init(store: SessionStore, database: SQLiteDatabase) throws {
        self.store = store
        self.database = database
        sealer = RecordSealer(store: store, database: database)
        marker = RevocationMarker(path: store.revocationMarkerPath, directory: store.statePath)
        let row = try database.queryFirst("SELECT generation FROM generations WHERE store_key = ?", [.text(store.key.id)])
        generation = row?.int64("generation") ?? 0
    }

    func invalidate() {
        isValid = false
        sealer.wipe()
    }

    var keyId: String { store.key.id }

    // MARK: Generation

    /// Adds one to the generation, persistently (with the enclosing transaction), and returns the new value.
    @discardableResult
    public func bumpGeneration() throws -> Int64 {
        try checkValid()
        // Only ever compared for equality: wrapping a stored Int64.max around is still a change, never a trap.
        let next = generation &+ 1
        try sql {
            try database.run(
                """
                INSERT INTO generations (store_key, generation) VALUES (?, ?) ON CONFLICT (store_key) DO UPDATE SET \
                generation = excluded.generation
                """,
                [.text(keyId), .integer(next)])
        }
        generation = next
        return next
    }

    // MARK: Candidate

    /// The stored candidate, or nil when there is none. Expiry is not checked here (the caller decides).
    ///
    /// Throws STORAGE_ERROR when it cannot be read: "stored session cannot be decrypted on this machine
    /// (machine id changed or store copied)", a missing or unreadable device key, a damaged row, or the
    /// test hook's `read` fault. A revocation marker (S13) is not applied here: see `revocationMarker()`.
    public func candidate() throws -> StoredCandidate? {
        try checkValid()
        try store.storageFaults.check(.read, "read the stored session")
        guard let row = try sql({ try database.queryFirst(SessionRows.selectCandidate, [.text(keyId)]) }) else { return nil }
        return try SessionRows.candidate(row, damaged: damaged(.candidate), corrupt: corrupt(.candidate)) { sealed, sessionId in
            try sealer.open(sealed, .candidate, binding: sessionId)
        }
    }

    /// The session id of the stored candidate, or nil — the clear `session_id` column only: nothing is
    /// decrypted, so neither the sealing key nor its custodian is consulted. It is what the S14 checks compare
    /// ("is the stored session still the one this request used?"), which run after every request.
    public func candidateSessionId() throws -> String? {
        try checkValid()
        try store.storageFaults.check(.read, "read the stored session")
        guard let row = try sql({ try database.queryFirst(SessionRows.selectCandidateSessionId, [.text(keyId)]) }) else { return nil }
        guard let sessionId = row.string("session_id") else { throw damaged(.candidate) }
        return sessionId
    }

    /// The candidate for a request, unless a revocation marker (S13) refuses it: a clear or logout whose delete
    /// failed left it behind, and no later run may use it. Throws NOT_LOGGED_IN then, naming the remedy.
    public func usableCandidate() throws -> StoredCandidate? {
        guard let c = try candidate() else { return nil }
        if let marked = try revocationMarker(), marked.isEmpty || marked == c.sessionId {
            throw StarlineError(
                .notLoggedIn,
                """
                the last sign-out could not delete the stored session; it is not used. Run sl-login clear to finish the \
                clean-up
                """)
        }
        return c
    }

    /// Stores `c`, replacing this key's candidate. Creates the device key on first use. The test hook's
    /// `write` fault makes it throw STORAGE_ERROR without changing anything.
    public func saveCandidate(_ c: StoredCandidate) throws {
        try checkValid()
        try store.storageFaults.check(.write, "write the stored session")
        try adoptPreferredCustodian()
        let sealed = try sealer.seal(c.accessToken, .candidate, binding: c.sessionId)
        let values = SessionRows.candidateValues(c, keyId: keyId, sealedToken: sealed, updatedAt: SessionStore.now())
        try sql { try database.run(SessionRows.saveCandidate, values) }
    }

    /// Deletes this key's candidate (no-op when there is none). The test hook's `delete` fault makes it throw
    /// STORAGE_ERROR — then write the revocation marker (S13).
    public func deleteCandidate() throws {
        try checkValid()
        try store.storageFaults.check(.delete, "delete the stored session")
        try sql { try database.run("DELETE FROM candidates WHERE store_key = ?", [.text(keyId)]) }
    }

    // MARK: Pending login

    /// The pending login, or nil when there is none or it has expired (`expiresAt <= now`; an expired one
    /// is deleted).
    public func pendingLogin() throws -> PendingLogin? {
        try pendingLogin(now: SessionStore.now())
    }

    /// `pendingLogin()` with an explicit clock (Unix seconds).
    public func pendingLogin(now: Int64) throws -> PendingLogin? {
        try checkValid()
        guard let row = try sql({ try database.queryFirst(SessionRows.selectPendingLogin, [.text(keyId)]) }) else { return nil }
        let clear = try SessionRows.pendingLoginRow(row, damaged: damaged(.pendingLogin), corrupt: corrupt(.pendingLogin))
        if clear.expiresAt <= now {
            try clearPendingLogin()
            return nil
        }
        let secrets = try sealer.open(clear.sealedSecrets, .pendingLogin, binding: clear.state)
        return try SessionRows.pendingLogin(clear, secrets: secrets, damaged: damaged(.pendingLogin))
    }

    /// Stores `p`, replacing this key's pending login. The verifier and device code are sealed. The test
    /// hook's `write` fault makes it throw.
    public func savePendingLogin(_ p: PendingLogin) throws {
        try checkValid()
        try store.storageFaults.check(.write, "write the pending login")
        try adoptPreferredCustodian()
        let sealed = try sealer.seal(SessionRows.pendingLoginSecrets(p), .pendingLogin, binding: p.state)
        try sql { try database.run(SessionRows.savePendingLogin, SessionRows.pendingLoginValues(p, keyId: keyId, sealedSecrets: sealed)) }
    }

    /// Deletes this key's pending login (no-op when there is none).
    public func clearPendingLogin() throws {
        try checkValid()
        try sql { try database.run("DELETE FROM pending_logins WHERE store_key = ?", [.text(keyId)]) }
    }

    // MARK: Pending revocations

    /// This key's tokens that still need `POST /oauth/revoke`, oldest first.
    public func pendingRevocations() throws -> [PendingRevocation] {
        try checkValid()
        let rows = try sql { try database.query(SessionRows.selectPendingRevocations, [.text(keyId)]) }
        return try rows.map { row in
            try SessionRows.pendingRevocation(row, damaged: damaged(.pendingRevocation), corrupt: corrupt(.pendingRevocation)) {
                sealed, sessionId in
                try sealer.open(sealed, .pendingRevocation, binding: sessionId)
            }
        }
    }

    /// Remembers a token to revoke later and returns its row id. Idempotent per session id: when one for
    /// `sessionId` is already pending, that row's id is returned and nothing changes. The test hook's `write`
    /// fault makes it throw.
    @discardableResult
    public func addPendingRevocation(sessionId: String, accessToken: String) throws -> Int64 {
        try checkValid()
        try store.storageFaults.check(.write, "write the pending revocation")
        if let existing = try sql({
            try database.queryFirst(
                "SELECT id FROM pending_revocations WHERE store_key = ? AND session_id = ? ORDER BY id LIMIT 1",
                [.text(keyId), .text(sessionId)])
        }), let id = existing.int64("id") {
            return id
        }
        let sealed = try sealer.seal(accessToken, .pendingRevocation, binding: sessionId)
        let row = try sql {
            try database.queryFirst(
                """
                INSERT INTO pending_revocations (store_key, session_id, sealed_token, created_at, attempts) VALUES (?, ?, ?, \
                ?, 0) RETURNING id
                """,
                [.text(keyId), .text(sessionId), .blob(sealed), .integer(SessionStore.now())])
        }
        guard let id = row?.int64("id") else { throw damaged(.pendingRevocation) }
        return id
    }

    /// Records a failed retry. A row that no longer exists (another run revoked it) is ignored.
    public func updatePendingRevocation(id: Int64, attempts: Int, lastError: String?) throws {
        try checkValid()
        try sql {
            try database.run(
                "UPDATE pending_revocations SET attempts = ?, last_error = ? WHERE id = ? AND store_key = ?",
                [.integer(Int64(attempts)), lastError.map { .text($0) } ?? .null, .integer(id), .text(keyId)])
        }
    }

    /// Forgets a pending revocation (revoked, or already gone). No-op when there is no such row.
    public func removePendingRevocation(id: Int64) throws {
        try checkValid()
        try sql {
            try database.run("DELETE FROM pending_revocations WHERE id = ? AND store_key = ?", [.integer(id), .text(keyId)])
        }
    }

    // MARK: Revocation marker (S13)

    /// The session id named by this key's revocation marker, or nil when there is none. A marker means a
    /// delete of the candidate failed: refuse a candidate with that session id until `clear` succeeds. (An
    /// empty string means a marker without a readable id: refuse any candidate.)
    public func revocationMarker() throws -> String? {
        try checkValid()
        if removesMarkerAfterCommit { return nil }
        return try marker.read()
    }

    /// Writes the marker naming `sessionId` (atomically, 0600). It is a file beside the database, not a row,
    /// because the database write may be what failed — and it survives a throwing `withState` body. The test
    /// hook's `marker` fault makes it throw.
    public func setRevocationMarker(sessionId: String) throws {
        try checkValid()
        removesMarkerAfterCommit = false
        try store.storageFaults.check(.marker, "write the revocation marker")
        try marker.write(sessionId: sessionId)
    }

    /// Removes the marker (no-op when there is none) — after the transaction commits, not now: the marker is
    /// what refuses a signed-out candidate whose delete failed (S13), so it may go only once the change that
    /// makes it unnecessary (the delete, or a new login) is durable. A failed commit keeps it. The test hook's
    /// `marker` fault makes this throw.
    public func clearRevocationMarker() throws {
        try checkValid()
        try store.storageFaults.check(.marker, "remove the revocation marker")
        removesMarkerAfterCommit = true
    }

    /// Called by `SessionStore.withState` after the commit.
    func removeMarkerAfterCommit() {
        // After a durable commit a marker left behind names a session that is gone (deleted, or replaced by a
        // new login), so it refuses nothing real; a later `sl-login clear` removes it. Never worth failing a
        // change that is already committed.
        if removesMarkerAfterCommit { try? marker.remove() }
    }

    // MARK: - Helpers

    func checkValid() throws(StarlineError) {
        guard isValid else {
            throw StarlineError(.internalError, "SessionState used outside SessionStore.withState")
        }
    }

    func damaged(_ kind: SessionRecordKind) -> StarlineError {
        kind.damaged(in: store.databasePath)
    }

    func corrupt(_ kind: SessionRecordKind) -> SessionRows.Corrupt {
        let path = store.databasePath
        return { column, value in kind.corrupt(column, value, in: path) }
    }

    /// Runs SQLite calls, converting their errors to STORAGE_ERROR: callers that catch inside a `withState`
    /// body see the suite's error, as they would outside.
    func sql<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw error.starlineError
        }
    }
}
