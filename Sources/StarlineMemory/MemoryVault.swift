import Glibc
import StarlineCore
import StarlineCrypto
import StarlineSQLite

/// How a vault is unlocked: the passphrase (Argon2id, then the wrapped data key), or the data key itself
/// as the unlock agent holds it.
public enum VaultCredential: Sendable {
    case passphrase(SecretBytes)
    case dataKey(SecretBytes)
}

/// An unlocked memory vault (W2): notes, attachments, the encrypted search index and the key policy, in
/// `<data>/memory/` (`docs/formats.md`, "Memory vault").
///
/// Opening checks the header's checksum (damage is VAULT_CORRUPT, exit 12, never a wrong passphrase),
/// unwraps the data key (WRONG_PASSPHRASE / WRONG_KEY, exit 13), opens the manifest and recomputes its MAC
/// over every record row (a deleted, added, older or swapped record is VAULT_CORRUPT naming it), and
/// compares its counter with the pin outside the vault (lower: ROLLBACK_DETECTED, exit 12). A vault that
/// cannot be read is an error, never an empty vault. The O(records) part is skipped when the database
/// files are provably untouched since such a check passed (`VaultFingerprint`, `openCheck`).
///
/// Every change is one SQLite transaction under the vault's `flock` (`SQLiteStore`) that also rewrites
/// the manifest with the counter + 1; attachment files are written and synced before it and renamed into
/// place inside it, and files it replaces are removed only after COMMIT. `kill -9` at any instant leaves
/// the old or the new content; files a killed writer left behind are removed by the next change.
///
/// Not Sendable: it caches the header, the manifest and the key ring between calls. Other processes may
/// change the vault meanwhile; every call re-reads what it relies on.
public final class MemoryVault {
    public let location: VaultLocation
    let store: SQLiteStore
    let faults: VaultFaults
    let now: @Sendable () -> Timestamp
    var header: VaultHeader
    var keys: KeyRing
    /// The manifest as last read or written, with the counter it had.
    var manifest: VaultManifest?
    var manifestEpoch: UInt32 = 0
    /// The highest counter this object has seen: the manifest never goes below it while the vault is open,
    /// even when the cached manifest was dropped after a failed change.
    var highestCounter: UInt64 = 0
    /// The fingerprint the database files matched when opened: while they still do, reads trust every row
    /// as the last full check found it (`RowCheck.fingerprint`). Dropped as soon as they no longer match.
    var attested: VaultFingerprint?

    /// How opening checked the records against the manifest.
    public enum OpenCheck: Sendable, Equatable {
        /// The manifest's MAC recomputed over every row: O(records).
        case full
        /// The fingerprint of the database files, unchanged since a full check passed on them: O(1).
        case fingerprint
    }

    /// How this vault's open checked its records (`create` and `acceptRollback`: `.full`).
    public internal(set) var openCheck: OpenCheck = .full

    /// The cost of a new passphrase key when the caller gives none (libsodium's "interactive" level).
    public static let defaultLimits = Argon2id.Limits.interactive

    var path: String { location.databasePath }

    /// The current data key, for the unlock agent (`open(at:with: .dataKey(…))`). Protected memory.
    public var dataKey: SecretBytes { keys.current.dataKey }
    /// The vault's id (hex), as the pin records it.
    public var vaultID: String { header.vaultIDText }
    /// The manifest counter last read or written: +1 with every change.
    public var counter: UInt64 { manifest?.counter ?? attested?.counter ?? 0 }
    /// True while a rekey has started and not finished (`rekey` resumes it).
    public var isRekeyPending: Bool { header.pending != nil }
    /// The Argon2id cost of the passphrase key.
    public var limits: Argon2id.Limits { header.limits }

    init(
        location: VaultLocation, store: SQLiteStore, header: VaultHeader, keys: KeyRing, faults: VaultFaults,
        now: @escaping @Sendable () -> Timestamp
    ) {
        self.location = location
        self.store = store
        self.header = header
        self.keys = keys
        self.faults = faults
        self.now = now
    }

    // MARK: - Create and open

    /// True when `location` holds a vault database (readable or not).
    public static func exists(at location: VaultLocation) -> Bool { access(location.databasePath, F_OK) == 0 }

    /// Makes a new vault: a random data key wrapped under the passphrase key (Argon2id with `limits`), an
    /// empty manifest at counter 1, and the pin set to it. VAULT_EXISTS when there is one already; it is
    /// never overwritten.
    public static func create(
        at location: VaultLocation, passphrase: SecretBytes, limits: Argon2id.Limits = defaultLimits,
        faults: VaultFaults = VaultFaults(), now: @escaping @Sendable () -> Timestamp = { Timestamp.now() }
    ) throws -> MemoryVault {
        let path = location.databasePath
        do {
            try PrivateFiles.ensurePrivateDirectory(location.directory)
            try PrivateFiles.ensurePrivateDirectory(location.attachmentsPath)
            try PrivateFiles.ensurePrivateDirectory(AtomicFileDirectory.of(location.pinPath))
            let store = try openStore(location, faults: faults)
            let vaultID = Sodium.randomBytes(16)
            let dataKey = XChaCha20Poly1305.generateKey()
            var header = VaultHeader(
                vaultID: vaultID, limits: limits, salt: Sodium.randomBytes(Argon2id.saltBytes), epoch: 1,
                wrappedKey: [], keyCheck: KeyWrapping.keyCheck(dataKey, vaultID: vaultID, epoch: 1), pending: nil)
            let kek = try KeyWrapping.passphraseKey(passphrase, header: header)
            header.wrappedKey = KeyWrapping.wrap(dataKey, under: kek, vaultID: vaultID, epoch: 1)
            let keys = KeyRing(current: EpochKeys(epoch: 1, dataKey: dataKey, vaultID: vaultID))
            let manifest = VaultManifest(counter: 1, headerChecksum: header.checksum, entries: [:])
            try store.withTransaction { db in
                try faults.storage.check(.write, "create the memory vault")
                // Checked under the lock: two concurrent inits make one vault, and the second is refused.
                if try db.queryFirst("SELECT count(*) AS n FROM vault_header")?.int("n") != 0 {
                    throw StarlineError(
                        .vaultExists, "a memory vault already exists in \(location.directory); it was left untouched",
                        details: .object([("path", .string(location.directory))]))
                }
                try db.run("INSERT INTO vault_header (id, bytes) VALUES (1, ?)", [.blob(header.encoded())])
                try db.run(
                    "INSERT INTO manifest (id, counter, key_epoch, sealed) VALUES (1, 1, 1, ?)",
                    [.blob(manifest.sealed(keys: keys.current, vaultID: vaultID))])
                try faults.storage.check(.commit, "commit the new memory vault")
            }
            // A new vault replaces whatever the pin knew: creating one is the explicit act.
            try RollbackPin.raise(
                location.pinPath, to: RollbackPin(vaultID: header.vaultIDText, counter: 1, headerChecksum: header.checksum), force: true)
            let vault = MemoryVault(location: location, store: store, header: header, keys: keys, faults: faults, now: now)
            vault.manifest = manifest
            vault.manifestEpoch = 1
            vault.highestCounter = 1
            return vault
        } catch {
            throw VaultErrors.classify(error, path: path)
        }
    }

    /// Opens and unlocks the vault, checking header, manifest, every record's id and version (or the
    /// fingerprint of the files they were last checked in), and the pin.
    public static func open(
        at location: VaultLocation, with credential: VaultCredential, faults: VaultFaults = VaultFaults(),
        now: @escaping @Sendable () -> Timestamp = { Timestamp.now() }
    ) throws -> MemoryVault {
        try keyless(at: location, faults: faults).open(with: credential, now: now)
    }

    /// The checks of `open` on an unlocked vault.
    static func checkedOpen(_ vault: MemoryVault) throws -> MemoryVault {
        do {
            if try !vault.openThroughFingerprint() { try vault.fullOpenCheck() }
            try vault.raisePin()
        } catch {
            throw VaultErrors.classify(error, path: vault.path)
        }
        return vault
    }

    public static func open(at location: VaultLocation, passphrase: SecretBytes, faults: VaultFaults = VaultFaults()) throws -> MemoryVault
    {
        try open(at: location, with: .passphrase(passphrase), faults: faults)
    }

    public static func open(at location: VaultLocation, dataKey: SecretBytes, faults: VaultFaults = VaultFaults()) throws -> MemoryVault {
        try open(at: location, with: .dataKey(dataKey), faults: faults)
    }

    /// Opens a vault whose counter is below the pin (or that is not the pinned vault) after the user said
    /// the older copy is wanted, and lowers the pin to it. Everything else is checked as `open` does; only
    /// the passphrase can accept.
    public static func acceptRollback(
        at location: VaultLocation, passphrase: SecretBytes, faults: VaultFaults = VaultFaults(),
        now: @escaping @Sendable () -> Timestamp = { Timestamp.now() }
    ) throws -> MemoryVault {
        let vault = try unlock(at: location, with: .passphrase(passphrase), faults: faults, now: now)
        do {
            if let problem = try vault.checkManifestAndPin().first(where: { $0.kind != .rollback }) {
                throw problem.error(path: vault.path)
            }
            try RollbackPin.raise(
                location.pinPath, to: RollbackPin(vaultID: vault.vaultID, counter: vault.counter, headerChecksum: vault.header.checksum),
                force: true)
        } catch {
            throw VaultErrors.classify(error, path: vault.path)
        }
        return vault
    }

    /// Unlocks without the manifest and pin checks (`open` and `verify` add them).
    static func unlock(
        at location: VaultLocation, with credential: VaultCredential, faults: VaultFaults,
        now: @escaping @Sendable () -> Timestamp
    ) throws -> MemoryVault {
        try keyless(at: location, faults: faults).unlock(with: credential, now: now)
    }

    static func openStore(_ location: VaultLocation, faults: VaultFaults) throws -> SQLiteStore {
        try SQLiteStore(path: location.databasePath, name: "the memory vault", migrations: VaultSchema.migrations, faults: faults.storage)
    }

    /// The header row. A database without one is an `init` that never committed: no vault (nothing was
    /// ever stored in it) — unless it has records or a manifest, which makes it a damaged vault.
    static func readHeader(_ db: SQLiteDatabase, location: VaultLocation) throws -> VaultHeader {
        guard let row = try db.queryFirst("SELECT bytes FROM vault_header WHERE id = 1") else {
            let records = try db.queryFirst("SELECT (SELECT count(*) FROM records) + (SELECT count(*) FROM manifest) AS n")?.int("n") ?? 0
            if records == 0 { throw VaultErrors.notFound(location.directory, "its creation never finished") }
            throw VaultErrors.corruptHeader(location.databasePath, "it is missing")
        }
        guard let bytes = row.blob("bytes") else { throw VaultErrors.corruptHeader(location.databasePath, "it is not a blob") }
        return try VaultHeader.decode(bytes, path: location.databasePath)
    }

    /// Raises the pin to the counter last seen (never lowers it), with the header the vault has at it.
    func raisePin() throws {
        try RollbackPin.raise(location.pinPath, to: RollbackPin(vaultID: vaultID, counter: counter, headerChecksum: header.checksum))
    }
}
