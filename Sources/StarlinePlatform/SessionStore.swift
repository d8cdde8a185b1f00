import Glibc
import StarlineCore
import StarlineSQLite
import StarlineCrypto

/// The persistent session store: the CLI's analogue of the SDK's Keychain storage (S2, S3, S13, S17).
///
/// Files, all in the state directory (created 0700):
/// - `sessions.db` — SQLite (WAL), one table per concern (`candidates`, `pending_logins`,
///   `pending_revocations`, `generations`), every row keyed by `StoreKey.id`;
/// - `device.key` — 32 random bytes, 0600, created on first seal (see `DeviceKey`);
/// - `host-id` — only when the machine has no machine id (see `MachineIdentity`);
/// - `sessions.db.revoked-<key digest>` — the S13 revocation marker, outside the database;
/// - `locks/<key digest>.lock` (the `withState` lock), `locks/<key digest>.verify.lock` (the
///   `verificationLock`), `locks/device-key.lock`, `locks/host-id.lock`.
///
/// Secrets (the access token, the pending login's verifier and device code, pending revocations' tokens)
/// are sealed with XChaCha20-Poly1305 under `DeviceKey.sealingKey(device.key, machine id)`, with the record
/// kind, `StoreKey.id` and the record's session id / state as additional data: a store copied to another
/// machine, or a row moved to another key, does not open. Other fields are clear columns.
///
/// `sessions.db` and `device.key` are refused when group/world-accessible (INSECURE_PERMISSIONS, exit 10);
/// a store that cannot be read — a directory in a file's place, no permission, a changed machine id — is
/// STORAGE_ERROR (exit 10, "locked", S17), never "no session", and works again once readable.
///
/// Opening costs a few stats and one small SQLite read; the device key and machine id are read only when
/// a record is sealed or opened.
///
/// `@unchecked Sendable`: the stored properties are immutable and `SQLiteDatabase` is itself thread-safe;
/// `withState` serialises users with an `flock` per call (its own open file description), so threads can
/// share one instance or use one each.
public final class SessionStore: @unchecked Sendable {
    public let key: StoreKey
    public let statePath: String
    public let databasePath: String
    public let deviceKeyPath: String
    /// The S13 revocation marker file of this key.
    public let revocationMarkerPath: String
    /// The lock file of `withState`.
    public let lockPath: String
    /// The lock file of `verificationLock`.
    public let verificationLockPath: String
    /// TEST-ONLY faults read from `STARLINE_TEST_STORAGE_FAULT` (see `StorageFaults`).
    public let storageFaults: StorageFaults

    let locksPath: String
    let environment: Environment
    let database: SQLiteDatabase

    /// The schema this code writes (`PRAGMA user_version`).
    static let schemaVersion: Int32 = 1

    /// Opens (creating when missing) the store in `paths.state` for `key`.
    ///
    /// `environment` supplies the test/override knobs `STARLINE_MACHINE_ID_FILE` (see `MachineIdentity`)
    /// and `STARLINE_TEST_STORAGE_FAULT` (see `StorageFaults`).
    public init(paths: StarlinePaths, key: StoreKey, environment: Environment = .process) throws {
        self.key = key
        self.environment = environment
        storageFaults = try StorageFaults(environment: environment)
        statePath = paths.state
        databasePath = statePath + "/sessions.db"
        deviceKeyPath = statePath + "/device.key"
        locksPath = statePath + "/locks"
        let digest = key.digest
        revocationMarkerPath = databasePath + ".revoked-" + digest
        lockPath = locksPath + "/" + digest + ".lock"
        verificationLockPath = locksPath + "/" + digest + ".verify.lock"

        do {
            try PrivateFiles.ensureDirectory(statePath)
            try PrivateFiles.ensureDirectory(locksPath)
            try PrivateFiles.checkPrivate(databasePath)
            try PrivateFiles.checkPrivate(deviceKeyPath)
        } catch {
            throw Self.lockedError(error)
        }
        do {
            // Every sl-login/sl-restore run is a short-lived process: no checkpoint at each close (see SQLiteDatabase).
            database = try SQLiteDatabase(path: databasePath, checkpointOnClose: false)
        } catch {
            throw Self.cannotOpen(databasePath, error)
        }
        try migrate()
    }

    /// Where the machine id comes from: `/etc/machine-id`, `/var/lib/dbus/machine-id`, the
    /// `STARLINE_MACHINE_ID_FILE` override, or `<state>/host-id (generated)`. Creates nothing.
    public var machineIdSource: String {
        MachineIdentity.describeSource(environment: environment, stateDirectory: statePath)
    }

    /// Runs `body` holding this key's exclusive `flock` (`locks/<digest>.lock`) inside one SQLite
    /// `BEGIN IMMEDIATE` transaction (busy timeout 5 s against other keys' writers). Everything the body
    /// changes in the database commits together, or — when it throws — not at all; the revocation marker is
    /// a file outside the database and is kept either way (that is its purpose).
    ///
    /// Waits as long as another process holds the key's lock: keep bodies short (no network I/O). Calls do
    /// not nest: a `withState` inside another one on the same thread and database (any store instance, any
    /// key) throws INTERNAL instead of deadlocking.
    /// SQLite failures are converted to `StarlineError` (STORAGE_ERROR). `durable: false` is for bookkeeping
    /// that may be lost in a power cut (see `SQLiteDatabase.transaction`), such as a verification timestamp.
    public func withState<T>(durable: Bool = true, _ body: (SessionState) throws -> T) throws -> T {
        // A nested call would wait forever for our own flock (same key) or for our own SQLite write lock
        // (another key, same database): refuse it instead.
        guard ActiveStates.shared.enter(databasePath) else {
            throw StarlineError(.internalError, "SessionStore.withState cannot be nested")
        }
        defer { ActiveStates.shared.leave(databasePath) }
        let lock = try FileLock(path: lockPath)
        try lock.lock()
        defer { lock.unlock() }
        do {
            return try database.transaction(.immediate, durable: durable) {
                let state = try SessionState(store: self)
                defer { state.invalidate() }
                return try body(state)
            }
        } catch let error as SQLiteError {
            throw error.starlineError
        }
    }

    /// The second per-key lock (`locks/<digest>.verify.lock`), with which concurrent restores share one
    /// verification: waits until it is free and returns it held. Release it with `unlock()` or by dropping
    /// the `FileLock` (closing it releases the lock, also when the process dies).
    public func verificationLock() throws -> FileLock {
        let lock = try FileLock(path: verificationLockPath)
        try lock.lock()
        return lock
    }

    /// `verificationLock()` that gives up after `timeout` (STORAGE_ERROR "timed out waiting for lock",
    /// retryable).
    public func verificationLock(timeout: Duration) throws -> FileLock {
        let lock = try FileLock(path: verificationLockPath)
        try lock.lock(exclusive: true, timeout: timeout)
        return lock
    }

    /// The verification lock if it is free right now, else nil (someone else is verifying).
    public func tryVerificationLock() throws -> FileLock? {
        let lock = try FileLock(path: verificationLockPath)
        return try lock.tryLock() ? lock : nil
    }

    // MARK: - Schema

    private static let schema = """
        CREATE TABLE IF NOT EXISTS generations (
            store_key TEXT PRIMARY KEY NOT NULL,
            generation INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS candidates (
            store_key TEXT PRIMARY KEY NOT NULL,
            session_id TEXT NOT NULL,
            sealed_token BLOB NOT NULL,
            user_json TEXT NOT NULL,
            roles_json TEXT NOT NULL,
            expires_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            verified_at INTEGER,
            updated_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS pending_logins (
            store_key TEXT PRIMARY KEY NOT NULL,
            mode TEXT NOT NULL,
            state TEXT NOT NULL,
            sealed_secrets BLOB NOT NULL,
            redirect_uri TEXT NOT NULL,
            has_device_code INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS pending_revocations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            store_key TEXT NOT NULL,
            session_id TEXT NOT NULL,
            sealed_token BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT
        );
        CREATE INDEX IF NOT EXISTS pending_revocations_by_key ON pending_revocations (store_key, id);
        """

    private func migrate() throws {
        do {
            let version = try database.userVersion
            if version == Self.schemaVersion { return }
            if version > Self.schemaVersion { throw Self.newerSchema(databasePath, version) }
            try database.transaction(.immediate) {
                // Another process may have created the schema while we waited for the write lock.
                let current = try database.userVersion
                if current == Self.schemaVersion { return }
                if current > Self.schemaVersion { throw Self.newerSchema(databasePath, current) }
                try database.execute(Self.schema)
                try database.setUserVersion(Self.schemaVersion)
            }
        } catch let error as SQLiteError {
            throw Self.cannotOpen(databasePath, error)
        }
    }

    private static func newerSchema(_ path: String, _ version: Int32) -> StarlineError {
        StarlineError(
            .storage,
            "cannot open the session store: \(path) was written by a newer Starline (schema \(version), this one knows \(schemaVersion))",
            details: .object([("path", .string(path)), ("schemaVersion", .int(Int64(version)))]))
    }

    // MARK: - Errors

    /// STORAGE_ERROR "cannot open the session store: <path>: <SQLite message>".
    static func cannotOpen(_ path: String, _ error: SQLiteError) -> StarlineError {
        StarlineError(
            .storage, "cannot open the session store: \(path): \(error.message)", retryable: error.isBusy,
            details: .object([
                ("path", .string(path)),
                ("sqliteCode", .int(Int64(error.extendedResultCode))),
                ("sqliteMessage", .string(error.message)),
            ]))
    }

    /// A STORAGE_ERROR from reading a store file, prefixed "cannot open the session store: " (the "locked"
    /// state of S17). Other codes (INSECURE_PERMISSIONS) pass unchanged.
    static func lockedError(_ error: StarlineError) -> StarlineError {
        guard error.code == .storage, !error.message.hasPrefix("cannot open the session store") else { return error }
        var wrapped = error
        wrapped.message = "cannot open the session store: " + error.message
        return wrapped
    }

    static func now() -> Int64 { Int64(time(nil)) }
}

/// Which threads of this process are inside a `withState` body, per database file.
///
/// `@unchecked Sendable`: `active` is only touched with `mutex` held (a heap-allocated pthread mutex, so its
/// address is stable; Glibc only, no Synchronization library to load at start-up).
final class ActiveStates: @unchecked Sendable {
    package static let shared = ActiveStates()

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var active: Set<String> = []

    private init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    private func entry(_ databasePath: String) -> String { "\(pthread_self())\u{0}\(databasePath)" }

    /// Records that this thread enters a body for `databasePath`; false when it already is inside one.
    func enter(_ databasePath: String) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return active.insert(entry(databasePath)).inserted
    }

    func leave(_ databasePath: String) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        active.remove(entry(databasePath))
    }
}

/// The state of one `StoreKey`, valid only inside `SessionStore.withState` (afterwards every method throws
/// INTERNAL). Every change belongs to the enclosing transaction.
public final class SessionState {
    private let store: SessionStore
    private var isValid = true
    /// Derived once per `withState` call, when first needed.
    private var sealingKey: SecretBytes?

    /// The per-key generation: bumped by every login start/complete/cancel, logout and clear (S6, S9), so
    /// work that started under an older generation can tell that it was superseded. 0 for a new key.
    public private(set) var generation: Int64

    init(store: SessionStore) throws {
        self.store = store
        let row = try store.database.queryFirst(
            "SELECT generation FROM generations WHERE store_key = ?", [.text(store.key.id)])
        generation = row?.int64(0) ?? 0
    }

    func invalidate() {
        isValid = false
        sealingKey = nil
    }

    private var keyId: SQLiteValue { .text(store.key.id) }
    private var database: SQLiteDatabase { store.database }

    // MARK: Generation

    /// Adds one to the generation, persistently (with the enclosing transaction), and returns the new value.
    @discardableResult
    public func bumpGeneration() throws -> Int64 {
        try checkValid()
        let next = generation + 1
        try sql {
            try database.run(
                "INSERT INTO generations (store_key, generation) VALUES (?, ?) ON CONFLICT (store_key) DO UPDATE SET generation = excluded.generation",
                [keyId, .integer(next)])
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
        let row = try sql {
            try database.queryFirst(
                "SELECT session_id, sealed_token, user_json, roles_json, expires_at, created_at, verified_at FROM candidates WHERE store_key = ?",
                [keyId])
        }
        guard let row else { return nil }
        guard let sessionId = row.string(0), let sealed = row.blob(1), let userText = row.string(2),
            let rolesText = row.string(3), let expiresAt = row.int64(4), let createdAt = row.int64(5)
        else { throw damaged(.candidate) }
        let verifiedAt = row.isNull("verified_at") ? nil : row.int64(6)
        guard let user = try? JSON.parse(userText),
            let rolesJSON = try? JSON.parse(rolesText), let roleItems = rolesJSON.arrayValue
        else { throw damaged(.candidate) }
        var roles: [String] = []
        for item in roleItems {
            guard let role = item.stringValue else { throw damaged(.candidate) }
            roles.append(role)
        }
        let token = try open(sealed, .candidate, binding: sessionId)
        return StoredCandidate(accessToken: token, sessionId: sessionId, user: user, roles: roles,
                               expiresAt: expiresAt, createdAt: createdAt, verifiedAt: verifiedAt)
    }

    /// The candidate for a request, unless a revocation marker (S13) refuses it: a clear or logout whose delete
    /// failed left it behind, and no later run may use it. Throws NOT_LOGGED_IN then, naming the remedy.
    public func usableCandidate() throws -> StoredCandidate? {
        guard let c = try candidate() else { return nil }
        if let marked = try revocationMarker(), marked.isEmpty || marked == c.sessionId {
            throw StarlineError(.notLoggedIn, "the last sign-out could not delete the stored session; it is not used. Run sl-login clear to finish the clean-up")
        }
        return c
    }

    /// Stores `c`, replacing this key's candidate. Creates the device key on first use. The test hook's
    /// `write` fault makes it throw STORAGE_ERROR without changing anything.
    public func saveCandidate(_ c: StoredCandidate) throws {
        try checkValid()
        try store.storageFaults.check(.write, "write the stored session")
        let sealed = try seal(c.accessToken, .candidate, binding: c.sessionId)
        let roles = JSON.array(c.roles.map { .string($0) }).serialized()
        try sql {
            try database.run(
                """
                INSERT OR REPLACE INTO candidates
                    (store_key, session_id, sealed_token, user_json, roles_json, expires_at, created_at, verified_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [keyId, .text(c.sessionId), .blob(sealed), .text(c.user.serialized()), .text(roles),
                 .integer(c.expiresAt), .integer(c.createdAt), c.verifiedAt.map { .integer($0) } ?? .null,
                 .integer(SessionStore.now())])
        }
    }

    /// Deletes this key's candidate (no-op when there is none). The test hook's `delete` fault makes it throw
    /// STORAGE_ERROR — then write the revocation marker (S13).
    public func deleteCandidate() throws {
        try checkValid()
        try store.storageFaults.check(.delete, "delete the stored session")
        try sql { try database.run("DELETE FROM candidates WHERE store_key = ?", [keyId]) }
    }

    // MARK: Pending login

    /// The pending login, or nil when there is none or it has expired (`expiresAt <= now`; an expired one
    /// is deleted).
    public func pendingLogin() throws -> PendingLogin? {
        try pendingLogin(now: SessionStore.now())
    }

    /// `pendingLogin()` with an explicit clock (epoch seconds).
    public func pendingLogin(now: Int64) throws -> PendingLogin? {
        try checkValid()
        let row = try sql {
            try database.queryFirst(
                "SELECT mode, state, sealed_secrets, redirect_uri, has_device_code, created_at, expires_at FROM pending_logins WHERE store_key = ?",
                [keyId])
        }
        guard let row else { return nil }
        guard let mode = row.string(0), let state = row.string(1), let sealed = row.blob(2),
            let redirectURI = row.string(3), let hasDeviceCode = row.bool(4), let createdAt = row.int64(5),
            let expiresAt = row.int64(6)
        else { throw damaged(.pendingLogin) }
        if expiresAt <= now {
            try clearPendingLogin()
            return nil
        }
        let secretsText = try open(sealed, .pendingLogin, binding: state)
        guard let secrets = try? JSON.parse(secretsText), let verifier = secrets["verifier"]?.stringValue else {
            throw damaged(.pendingLogin)
        }
        let deviceCode = secrets["deviceCode"]?.stringValue
        if hasDeviceCode != (deviceCode != nil) { throw damaged(.pendingLogin) }
        return PendingLogin(mode: mode, state: state, verifier: verifier, redirectURI: redirectURI,
                            deviceCode: deviceCode, createdAt: createdAt, expiresAt: expiresAt)
    }

    /// Stores `p`, replacing this key's pending login. The verifier and device code are sealed. The test
    /// hook's `write` fault makes it throw.
    public func savePendingLogin(_ p: PendingLogin) throws {
        try checkValid()
        try store.storageFaults.check(.write, "write the pending login")
        var secrets: [(String, JSON)] = [("verifier", .string(p.verifier))]
        if let deviceCode = p.deviceCode { secrets.append(("deviceCode", .string(deviceCode))) }
        let sealed = try seal(JSON.object(secrets).serialized(), .pendingLogin, binding: p.state)
        try sql {
            try database.run(
                """
                INSERT OR REPLACE INTO pending_logins
                    (store_key, mode, state, sealed_secrets, redirect_uri, has_device_code, created_at, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [keyId, .text(p.mode), .text(p.state), .blob(sealed), .text(p.redirectURI),
                 .integer(p.deviceCode == nil ? 0 : 1), .integer(p.createdAt), .integer(p.expiresAt)])
        }
    }

    /// Deletes this key's pending login (no-op when there is none).
    public func clearPendingLogin() throws {
        try checkValid()
        try sql { try database.run("DELETE FROM pending_logins WHERE store_key = ?", [keyId]) }
    }

    // MARK: Pending revocations

    /// This key's tokens that still need `POST /oauth/revoke`, oldest first.
    public func pendingRevocations() throws -> [PendingRevocation] {
        try checkValid()
        let rows = try sql {
            try database.query(
                "SELECT id, session_id, sealed_token, created_at, attempts, last_error FROM pending_revocations WHERE store_key = ? ORDER BY id",
                [keyId])
        }
        return try rows.map { row in
            guard let id = row.int64(0), let sessionId = row.string(1), let sealed = row.blob(2),
                let createdAt = row.int64(3), let attempts = row.int(4)
            else { throw damaged(.pendingRevocation) }
            let token = try open(sealed, .pendingRevocation, binding: sessionId)
            return PendingRevocation(id: id, sessionId: sessionId, accessToken: token, createdAt: createdAt,
                                     attempts: attempts, lastError: row.string(5))
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
                [keyId, .text(sessionId)])
        }), let id = existing.int64(0) {
            return id
        }
        let sealed = try seal(accessToken, .pendingRevocation, binding: sessionId)
        let row = try sql {
            try database.queryFirst(
                "INSERT INTO pending_revocations (store_key, session_id, sealed_token, created_at, attempts) VALUES (?, ?, ?, ?, 0) RETURNING id",
                [keyId, .text(sessionId), .blob(sealed), .integer(SessionStore.now())])
        }
        guard let id = row?.int64(0) else { throw damaged(.pendingRevocation) }
        return id
    }

    /// Records a failed retry. A row that no longer exists (another run revoked it) is ignored.
    public func updatePendingRevocation(id: Int64, attempts: Int, lastError: String?) throws {
        try checkValid()
        try sql {
            try database.run(
                "UPDATE pending_revocations SET attempts = ?, last_error = ? WHERE id = ? AND store_key = ?",
                [.integer(Int64(attempts)), lastError.map { .text($0) } ?? .null, .integer(id), keyId])
        }
    }

    /// Forgets a pending revocation (revoked, or already gone). No-op when there is no such row.
    public func removePendingRevocation(id: Int64) throws {
        try checkValid()
        try sql {
            try database.run("DELETE FROM pending_revocations WHERE id = ? AND store_key = ?", [.integer(id), keyId])
        }
    }

    // MARK: Revocation marker (S13)

    /// The session id named by this key's revocation marker, or nil when there is none. A marker means a
    /// delete of the candidate failed: refuse a candidate with that session id until `clear` succeeds. (An
    /// empty string means a marker without a readable id: refuse any candidate.)
    public func revocationMarker() throws -> String? {
        try checkValid()
        guard let bytes = try AtomicFile.read(store.revocationMarkerPath) else { return nil }
        var text = String(decoding: bytes, as: UTF8.self)
        while let last = text.last, last == "\n" || last == " " || last == "\r" { text.removeLast() }
        return text
    }

    /// Writes the marker naming `sessionId` (atomically, 0600). It is a file beside the database, not a row,
    /// because the database write may be what failed — and it survives a throwing `withState` body. The test
    /// hook's `marker` fault makes it throw.
    public func setRevocationMarker(sessionId: String) throws {
        try checkValid()
        try store.storageFaults.check(.marker, "write the revocation marker")
        try AtomicFile.write(Array((sessionId + "\n").utf8), to: store.revocationMarkerPath, mode: 0o600)
    }

    /// Removes the marker (no-op when there is none). The test hook's `marker` fault makes it throw.
    public func clearRevocationMarker() throws {
        try checkValid()
        try store.storageFaults.check(.marker, "remove the revocation marker")
        let path = store.revocationMarkerPath
        if unlink(path) != 0 {
            let e = errno
            if e == ENOENT { return }
            throw StarlineError(
                .storage, "cannot remove the revocation marker \(path): \(String(cString: strerror(e)))",
                details: .object([("path", .string(path)), ("errno", .int(Int64(e)))]))
        }
        // Make the removal durable; a failure here leaves at worst a marker that a later clear removes.
        let dirFD = Glibc.open(store.statePath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            _ = fsync(dirFD)
            close(dirFD)
        }
    }

    // MARK: - Sealing

    enum RecordKind: String {
        case candidate
        case pendingLogin
        case pendingRevocation

        /// What the user is told cannot be decrypted.
        var noun: String {
            switch self {
            case .candidate: "stored session"
            case .pendingLogin: "stored pending login"
            case .pendingRevocation: "stored pending revocation"
            }
        }
    }

    /// `starline-session-store/v1 \0 kind \0 StoreKey.id \0 binding`.
    private func additionalData(_ kind: RecordKind, binding: String) -> [UInt8] {
        Array("starline-session-store/v1\u{0}\(kind.rawValue)\u{0}\(store.key.id)\u{0}\(binding)".utf8)
    }

    private func key(creating: Bool) throws -> SecretBytes {
        if let sealingKey { return sealingKey }
        let deviceKey: SecretBytes
        if creating {
            deviceKey = try DeviceKey.loadOrCreate(path: store.deviceKeyPath, lockPath: store.locksPath + "/device-key.lock")
        } else {
            guard let existing = try DeviceKey.load(path: store.deviceKeyPath) else {
                throw StarlineError(
                    .storage,
                    "cannot open the session store: the device key \(store.deviceKeyPath) is missing, so the stored records cannot be decrypted",
                    details: .object([("path", .string(store.deviceKeyPath))]))
            }
            deviceKey = existing
        }
        let machine = try MachineIdentity.resolve(
            environment: store.environment, stateDirectory: store.statePath, lockPath: store.locksPath + "/host-id.lock")
        let derived = DeviceKey.sealingKey(deviceKey: deviceKey, machineId: machine.bytes)
        sealingKey = derived
        return derived
    }

    private func seal(_ secret: String, _ kind: RecordKind, binding: String) throws -> [UInt8] {
        var plaintext = Array(secret.utf8)
        defer { Sodium.wipe(&plaintext) }
        return XChaCha20Poly1305.seal(plaintext, additionalData: additionalData(kind, binding: binding),
                                      key: try key(creating: true))
    }

    private func open(_ sealed: [UInt8], _ kind: RecordKind, binding: String) throws -> String {
        let key = try key(creating: false)
        var plaintext: [UInt8]
        do {
            plaintext = try XChaCha20Poly1305.open(sealed, additionalData: additionalData(kind, binding: binding), key: key)
        } catch {
            throw StarlineError(
                .storage, "\(kind.noun) cannot be decrypted on this machine (machine id changed or store copied)",
                details: .object([("record", .string(kind.rawValue)), ("path", .string(store.databasePath))]))
        }
        defer { Sodium.wipe(&plaintext) }
        return String(decoding: plaintext, as: UTF8.self)
    }

    // MARK: - Helpers

    private func checkValid() throws(StarlineError) {
        guard isValid else {
            throw StarlineError(.internalError, "SessionState used outside SessionStore.withState")
        }
    }

    private func damaged(_ kind: RecordKind) -> StarlineError {
        StarlineError(
            .storage, "\(kind.noun) in \(store.databasePath) is damaged",
            details: .object([("record", .string(kind.rawValue)), ("path", .string(store.databasePath))]))
    }

    /// Runs SQLite calls, converting their errors to STORAGE_ERROR.
    private func sql<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw error.starlineError
        }
    }
}
