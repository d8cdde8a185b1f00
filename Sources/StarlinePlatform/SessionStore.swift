import Glibc
import StarlineCore
import StarlineSQLite
import StarlineCrypto

/// The persistent session store: the CLI's analogue of the SDK's Keychain storage (S2, S3, S13, S17).
///
/// Files, all in the state directory (created 0700):
/// - `sessions.db` — SQLite (WAL), one table per concern (`candidates`, `pending_logins`,
///   `pending_revocations`, `generations`), every row keyed by `StoreKey.id` (see `SessionSchema`);
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
/// `sessions.db` and `device.key` are refused when group/world-accessible, and the state and lock
/// directories when another user owns them or others may write them (INSECURE_PERMISSIONS, exit 10);
/// a store that cannot be read — a directory in a file's place, no permission, a changed machine id — is
/// STORAGE_ERROR (exit 10, "locked", S17), never "no session", and works again once readable.
///
/// Opening costs a few stats and one small SQLite read; the device key and machine id are read only when
/// a record is sealed or opened.
///
/// `@unchecked Sendable`: the stored properties are immutable and `SQLiteStore` is itself thread-safe;
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
    /// TEST-ONLY faults, as given to `init` (see `StorageFaults`).
    public var storageFaults: StorageFaults { sqlite.faults }

    /// The custodian a sign-in asked for (`sl-login --keyring`/`--no-keyring`, STARLINE_KEYRING, the config
    /// key `keyring`): the next candidate or pending login saved moves the key's records to it. Nil keeps the
    /// recorded one — every other tool, and a sign-in that did not choose.
    public let preferredCustodian: KeyCustodian?

    let locksPath: String
    let environment: Environment
    /// A keyring key fetched in this process, by item id: each fetch is a D-Bus round trip.
    private let keyringKeys = Locked<[String: SecretBytes]>([:])
    /// The file custodian's sealing key with the device key file it came from (`DeviceKeyStamp`): a restore
    /// unseals before its request and seals after it, and reading the key and the machine id again and
    /// deriving again was a third of what it did after the answer came.
    private let fileKey = Locked<(stamp: DeviceKeyStamp, key: SecretBytes)?>(nil)
    /// The database, its files and migrations, and `withState`'s lock and transaction.
    let sqlite: SQLiteStore

    /// How errors name the store: "cannot open the session store: …".
    static let name = "the session store"

    /// Opens (creating when missing) the store in `paths.state` for `key`.
    ///
    /// `environment` supplies the override knob `STARLINE_MACHINE_ID_FILE` (see `MachineIdentity`).
    /// `storageFaults` are TEST-ONLY faults to inject; the tools parse them from `STARLINE_TEST_STORAGE_FAULT`
    /// (`StorageFaults(environment:)`) — the store itself never reads that variable.
    public init(
        paths: StarlinePaths, key: StoreKey, environment: Environment = .process,
        storageFaults: StorageFaults = StorageFaults(), preferredCustodian: KeyCustodian? = nil
    ) throws(StarlineError) {
        self.key = key
        self.preferredCustodian = preferredCustodian
        self.environment = environment
        statePath = paths.state
        databasePath = statePath + "/sessions.db"
        deviceKeyPath = statePath + "/device.key"
        locksPath = statePath + "/locks"
        let digest = key.digest
        revocationMarkerPath = databasePath + ".revoked-" + digest
        lockPath = locksPath + "/" + digest + ".lock"
        verificationLockPath = locksPath + "/" + digest + ".verify.lock"
        // Every sl-login/sl-restore run is a short-lived process: no checkpoint at each close (the default).
        sqlite = try SQLiteStore(
            path: databasePath, lockPath: lockPath, name: Self.name, migrations: SessionSchema.migrations,
            privateFiles: [deviceKeyPath], faults: storageFaults)
    }

    func cachedFileKey(_ stamp: DeviceKeyStamp) -> SecretBytes? { fileKey.withLock { $0?.stamp == stamp ? $0?.key : nil } }
    func cacheFileKey(_ stamp: DeviceKeyStamp, _ key: SecretBytes) { fileKey.withLock { $0 = (stamp, key) } }
    func cachedKeyringKey(item: String) -> SecretBytes? { keyringKeys.withLock { $0[item] } }
    func cacheKeyringKey(item: String, _ key: SecretBytes) { keyringKeys.withLock { $0[item] = key } }
    func forgetKeyringKey(item: String) { keyringKeys.withLock { $0[item] = nil } }

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
        // SQLiteStore refuses the nesting too; this says which API was misused.
        guard !sqlite.isInTransactionOnCurrentThread else {
            throw StarlineError(.internalError, "SessionStore.withState cannot be nested")
        }
        var committed: SessionState?
        let result = try sqlite.withTransaction(durable: durable) { database in
            let state = try SessionState(store: self, database: database)
            defer { state.invalidate() }
            let result = try body(state)
            // The test hook's `commit` fault: the transaction fails at its end, as a full disk fails a COMMIT.
            try storageFaults.check(.commit, "commit the change to the session store")
            committed = state
            return result
        }
        committed?.removeMarkerAfterCommit()
        return result
    }

    /// Deletes the keyring items this key no longer needs (the last sealed record is gone, or a change of
    /// custodian or an earlier failed delete left one): see `SessionState.releaseUnusedKeyringItems`. Returns
    /// the failure to report; nil when nothing was left to delete or everything was deleted. A store whose
    /// custodian was always the file pays one small read.
    public func releaseUnusedKeyringItems() -> StarlineError? {
        do {
            return try withState { try $0.releaseUnusedKeyringItems() }
        } catch let error as StarlineError {
            return error
        } catch {
            return StarlineError(.storage, "\(error)")
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

    // MARK: - Errors

    /// A STORAGE_ERROR from reading a store file, prefixed "cannot open the session store: " (the unreadable
    /// store of S17, which S17 calls "locked"). Other codes (INSECURE_PERMISSIONS) pass unchanged.
    static func unreadableStoreError(_ error: StarlineError) -> StarlineError {
        SQLiteStore.openFailure(name, error)
    }

    static func now() -> Int64 { Int64(time(nil)) }
}
