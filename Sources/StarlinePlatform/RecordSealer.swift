import Glibc
import StarlineCore
import StarlineCrypto
import StarlineSQLite

/// The kinds of sealed record in the session store; the kind is part of each seal's additional data.
enum SessionRecordKind: String {
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

    /// CORRUPT_FILE (exit 12) "<noun> in <path> is corrupt: <column> is <value>, …": a row that decodes but
    /// holds a number no real record has (an expiry of -2^63). It is left untouched, and the message names
    /// the command that removes it.
    func corrupt(_ column: String, _ value: Int64, in databasePath: String) -> StarlineError {
        let what = column == "attempts" ? "a negative count" : "outside the years 0001–9999"
        let remedy =
            switch self {
            case .candidate: "sl-login clear removes it"
            case .pendingLogin: "sl-login cancel removes it"
            case .pendingRevocation: "remove \(databasePath) to start over, then sign in again"
            }
        return StarlineError(
            .corruptFile, "\(noun) in \(databasePath) is corrupt: \(column) is \(value), \(what); it was left untouched (\(remedy))",
            details: .object([
                ("record", .string(rawValue)), ("path", .string(databasePath)), ("column", .string(column)),
                ("value", .int(value))
            ]))
    }

    /// STORAGE_ERROR "<noun> in <path> is damaged": a row whose clear columns do not decode.
    func damaged(in databasePath: String) -> StarlineError {
        StarlineError(
            .storage, "\(noun) in \(databasePath) is damaged",
            details: .object([("record", .string(rawValue)), ("path", .string(databasePath))]))
    }
}

/// Seals and opens the secrets of one `withState` call (S3): XChaCha20-Poly1305 under the key's sealing key,
/// with the record kind, `StoreKey.id` and a per-record binding (session id or OAuth state) as additional data.
///
/// The sealing key comes from the store key's custodian (`KeyCustody`): derived from `device.key` and the
/// machine id, or read from the desktop keyring. It is fetched once, when first needed, and wiped with the
/// sealer (`wipe()` at the end of the call): a `withState` that touches no secret reads neither the device
/// key, the machine id nor the keyring. (A keyring key is also kept by the store for the rest of the process:
/// each fetch is a D-Bus round trip.)
final class RecordSealer {
    private let store: SessionStore
    private let database: SQLiteDatabase
    private var sealingKey: SecretBytes?
    private var custodyRecord: CustodyRecord?

    init(store: SessionStore, database: SQLiteDatabase) {
        self.store = store
        self.database = database
    }

    func wipe() { sealingKey = nil }

    func seal(_ secret: String, _ kind: SessionRecordKind, binding: String) throws -> [UInt8] {
        var plaintext = Array(secret.utf8)
        defer { Sodium.wipe(&plaintext) }
        return XChaCha20Poly1305.seal(
            plaintext, additionalData: additionalData(kind, binding: binding),
            key: try key(creating: true))
    }

    func open(_ sealed: [UInt8], _ kind: SessionRecordKind, binding: String) throws -> String {
        let key = try key(creating: false)
        var plaintext: [UInt8]
        do {
            plaintext = try XChaCha20Poly1305.open(sealed, additionalData: additionalData(kind, binding: binding), key: key)
        } catch {
            let cause =
                try custody().custodian == .keyring
                ? "the keyring's key does not open it (store copied, or signed in again elsewhere)"
                : "machine id changed or store copied"
            throw StarlineError(
                .storage, "\(kind.noun) cannot be decrypted on this machine (\(cause))",
                details: .object([("record", .string(kind.rawValue)), ("path", .string(store.databasePath))]))
        }
        defer { Sodium.wipe(&plaintext) }
        return String(decoding: plaintext, as: UTF8.self)
    }

    /// This key's custody row (read once per call).
    func custody() throws -> CustodyRecord {
        if let custodyRecord { return custodyRecord }
        let record = try CustodyRecord.read(
            database, keyId: store.key.id,
            damaged: StarlineError(.storage, "the key custody record in \(store.databasePath) is damaged"))
        custodyRecord = record
        return record
    }

    /// Records `record` as this key's custody (in the enclosing transaction); the next seal or open uses it.
    func setCustody(_ record: CustodyRecord) throws {
        try record.write(database, keyId: store.key.id, now: SessionStore.now())
        custodyRecord = record
        sealingKey = nil
    }

    /// `starline-session-store/v1 \0 kind \0 StoreKey.id \0 binding`.
    private func additionalData(_ kind: SessionRecordKind, binding: String) -> [UInt8] {
        Array("starline-session-store/v1\u{0}\(kind.rawValue)\u{0}\(store.key.id)\u{0}\(binding)".utf8)
    }

    /// The sealing key. Sealing creates it on first use (the device key, or a keyring item); opening never
    /// does — a sealed record without its key is "locked", and a new key would not open it anyway.
    private func key(creating: Bool) throws -> SecretBytes {
        if let sealingKey { return sealingKey }
        let derived: SecretBytes
        switch try custody().custodian {
        case .file: derived = try fileKey(creating: creating)
        case .keyring: derived = try keyringKey(creating: creating)
        }
        sealingKey = derived
        return derived
    }

    private func fileKey(creating: Bool) throws -> SecretBytes {
        // The key this process derived from this very file (same inode, size, times and mode: a replaced,
        // rewritten or chmod-ed key file is read and checked again).
        let before = DeviceKeyStamp(path: store.deviceKeyPath)
        if let before, let cached = store.cachedFileKey(before) { return cached }
        let derived = try deriveFileKey(creating: creating)
        if let before, before == DeviceKeyStamp(path: store.deviceKeyPath) { store.cacheFileKey(before, derived) }
        return derived
    }

    private func deriveFileKey(creating: Bool) throws -> SecretBytes {
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
        return DeviceKey.sealingKey(deviceKey: deviceKey, machineId: machine.bytes)
    }

    private func keyringKey(creating: Bool) throws -> SecretBytes {
        var record = try custody()
        if let item = record.keyringItem {
            if let cached = store.cachedKeyringKey(item: item) { return cached }
            let key = try KeyringSealingKey.load(store, item: item)
            store.cacheKeyringKey(item: item, key)
            return key
        }
        guard creating else {
            throw StarlineError(
                .storage,
                """
                the session store names the keyring as its key's custodian but no keyring item; run sl-login clear and sign \
                in again
                """,
                details: .object([("path", .string(store.databasePath))]))
        }
        let (item, key) = try KeyringSealingKey.create(store)
        record.keyringItem = item
        try setCustody(record)
        store.cacheKeyringKey(item: item, key)
        return key
    }
}

/// What identifies the device key file's content for a cache: device, inode, size, mode, modification and
/// change times (lstat, not following a link). Any write, replacement or chmod changes one of them.
struct DeviceKeyStamp: Equatable, Sendable {
    let device: UInt64, inode: UInt64, size: Int64, mode: UInt32
    let modified: Int64, modifiedNanos: Int64, changed: Int64, changedNanos: Int64

    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        mode = UInt32(info.st_mode)
        modified = Int64(info.st_mtim.tv_sec)
        modifiedNanos = Int64(info.st_mtim.tv_nsec)
        changed = Int64(info.st_ctim.tv_sec)
        changedNanos = Int64(info.st_ctim.tv_nsec)
    }
}
