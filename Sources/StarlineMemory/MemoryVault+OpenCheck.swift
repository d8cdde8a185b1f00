import StarlineCore
import StarlineCrypto
import StarlineSQLite

/// What the rows a read body loads are checked against.
enum RowCheck {
    /// The manifest: every row must be as it lists it (a row put back from an older copy is refused).
    case manifest(VaultManifest)
    /// Nothing more: the database files are still those a full check passed on (`VaultFingerprint`), so
    /// every row is as that check found it.
    case fingerprint
}

extension MemoryVault {
    // MARK: - Unlocking

    /// Reads the header and unlocks it with `credential` (`KeylessMemoryVault.unlock`), so that a header
    /// edited in `vault.db` never reads as a wrong passphrase: its limits were capped when it was decoded;
    /// a header that is not the one the pin saw at the counter the vault is still at is VAULT_CORRUPT
    /// before any key is derived (`RollbackPin.headerProblem`); and a failed unlock of a header the pin did
    /// not see is reported as what it may be (`RollbackPin.failedUnlockProblem`), not as exit 13.
    static func unlockHeader(
        _ store: SQLiteStore, location: VaultLocation, faults: VaultFaults,
        credential: VaultCredential
    ) throws -> (VaultHeader, KeyRing) {
        let path = location.databasePath
        // Before the snapshot: see `RollbackPin.headerProblem`.
        let pin = try RollbackPin.read(location.pinPath)
        let (header, counter) = try store.database.transaction(.deferred) { () throws -> (VaultHeader, UInt64?) in
            try faults.storage.check(.read, "read the memory vault")
            let header = try readHeader(store.database, location: location)
            // The clear column: not authenticated, which only matters when it would spare a header from the
            // check before derivation — and then the check after a failed unlock still applies.
            let counter = try store.database.queryFirst("SELECT counter FROM manifest WHERE id = 1")?.int64("counter").flatMap {
                UInt64(exactly: $0)
            }
            return (header, counter)
        }
        if let problem = RollbackPin.headerProblem(pin, header: header, counter: counter, path: path) { throw problem.error(path: path) }
        switch unlockKeys(header, credential: credential, path: path) {
        case .success(let keys):
            return (header, keys)
        case .failure(let error):
            guard error.code == .wrongPassphrase || error.code == .wrongKey,
                let problem = RollbackPin.failedUnlockProblem(
                    pin, header: header, counter: counter, path: path,
                    credential: error.code == .wrongPassphrase ? "passphrase" : "key")
            else { throw error }
            throw problem.error(path: path)
        }
    }

    /// `KeyWrapping.unlock` as a value (a `catch … where` around it crashes Swift 6.3's ownership checker).
    private static func unlockKeys(_ header: VaultHeader, credential: VaultCredential, path: String) -> Result<KeyRing, StarlineError> {
        switch credential {
        case .passphrase(let passphrase):
            Result { () throws(StarlineError) in try KeyWrapping.unlock(header, passphrase: passphrase, path: path).0 }
        case .dataKey(let key): Result { () throws(StarlineError) in try KeyWrapping.unlock(header, dataKey: key, path: path) }
        }
    }

    // MARK: - Checks on open

    /// The fast open: true when the fingerprint file authenticates, is settled, and the files, the header
    /// and the manifest's counter and key epoch are still as it says, and the pin accepts that counter. The
    /// manifest itself is not read. False, with nothing changed, when any of that is not so: then the full
    /// check decides (and reports what is wrong).
    func openThroughFingerprint() throws -> Bool {
        guard let fingerprint = VaultFingerprint.read(location.fingerprintPath, databasePath: path, key: fingerprintKey),
            fingerprint.vaultID == vaultID, fingerprint.isSettled
        else { return false }
        attested = fingerprint
        let pin = try RollbackPin.read(location.pinPath)
        guard try read({ _, check in if case .fingerprint = check { true } else { false } }),
            RollbackPin.problem(pin, vaultID: vaultID, counter: fingerprint.counter, path: path) == nil
        else {
            attested = nil
            return false
        }
        openCheck = .fingerprint
        return true
    }

    /// The full check of opening (`checkManifestAndPin`), throwing the first problem. When it passes on
    /// files that did not change while it ran, it writes their fingerprint for the next open.
    func fullOpenCheck() throws {
        // Clock first, then the files: a ctime not older than this clock could be the ctime of a write
        // that has not happened yet (VaultFileState.isSettled).
        let checkedAt = VaultFiles.coarseNow()
        let before = VaultFiles.of(location)
        if let problem = try checkManifestAndPin().first { throw problem.error(path: path) }
        openCheck = .full
        recordFingerprint(of: before, checkedAt: checkedAt)
    }

    /// The rows against the manifest, and the pin. Returns the problems (empty: all good); a manifest that
    /// does not open at all throws.
    ///
    /// Opening the manifest already checked its MAC over its own list, so the rows' entries are compared
    /// with that list directly: equal lists are what equal MACs meant, and comparing them costs hashing
    /// each entry once, where recomputing the MAC sorted and encoded every entry twice (measured: 143 M of
    /// the 258 M instructions of `show` on 10,001 notes).
    ///
    /// The pin is read before the snapshot begins. A writer raises the pin only after its commit, so any
    /// snapshot taken later holds at least the pinned counter; read inside the snapshot, a pin raised by a
    /// commit after the snapshot began looked like a rollback (`make torture`: 1 of 676 concurrent adds).
    func checkManifestAndPin() throws -> [VaultProblem] {
        attested = nil
        let pin = try RollbackPin.read(location.pinPath)
        return try readChecked { db, manifest in
            var problems: [VaultProblem] = []
            let rows = try rowEntries(db)
            faults.waitAtOpenCheckGate()
            if rows != manifest.entries { problems += manifest.differences(from: rows, path: path) }
            if let problem = RollbackPin.problem(pin, vaultID: vaultID, counter: manifest.counter, path: path) {
                problems.append(problem)
            }
            return problems
        }
    }

    /// After a full check passed (open or `verify`) on the files as they were at `before`: writes their
    /// fingerprint, when they are still exactly so and settled. Best-effort: without it the next open
    /// checks in full, which is never wrong.
    func recordFingerprint(of before: VaultFiles, checkedAt: Int64) {
        guard let manifest, before.isSettled(before: checkedAt), VaultFiles.of(location) == before else { return }
        let fingerprint = VaultFingerprint(
            vaultID: vaultID, counter: manifest.counter, epoch: manifestEpoch,
            headerChecksum: header.checksum, checkedAt: checkedAt, files: before)
        try? fingerprint.write(location.fingerprintPath, databasePath: path, key: fingerprintKey)
    }

    /// Whether this read may trust the fingerprint: the files still match it (looked at after the header
    /// and manifest columns were read in this snapshot, so the snapshot is of those files), and so do the
    /// header and the counter. Drops the fingerprint otherwise.
    func isStillAttested(_ db: SQLiteDatabase) throws -> Bool {
        guard let fingerprint = attested else { return false }
        let stored = try Self.readHeader(db, location: location)
        let row = try db.queryFirst("SELECT counter, key_epoch FROM manifest WHERE id = 1")
        guard stored == header, Sodium.constantTimeEquals(header.checksum, fingerprint.headerChecksum),
            let counter = row?.int64("counter"), counter >= 0, UInt64(counter) == fingerprint.counter,
            row?.int64("key_epoch") == Int64(fingerprint.epoch), fingerprint.counter >= highestCounter,
            VaultFiles.of(location) == fingerprint.files
        else {
            attested = nil
            return false
        }
        highestCounter = fingerprint.counter
        return true
    }

    /// The key of the fingerprint's MAC: a subkey of the current data key, which the passphrase and the
    /// unlock agent both give.
    var fingerprintKey: SecretBytes { VaultFingerprint.macKey(keys.current, vaultID: header.vaultID) }
}
