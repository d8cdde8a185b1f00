import StarlineCore
import StarlineCrypto

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
        let remedy = switch self {
        case .candidate: "sl-login clear removes it"
        case .pendingLogin: "sl-login cancel removes it"
        case .pendingRevocation: "remove \(databasePath) to start over, then sign in again"
        }
        return StarlineError(
            .corruptFile, "\(noun) in \(databasePath) is corrupt: \(column) is \(value), \(what); it was left untouched (\(remedy))",
            details: .object([("record", .string(rawValue)), ("path", .string(databasePath)), ("column", .string(column)),
                              ("value", .int(value))]))
    }

    /// STORAGE_ERROR "<noun> in <path> is damaged": a row whose clear columns do not decode.
    func damaged(in databasePath: String) -> StarlineError {
        StarlineError(
            .storage, "\(noun) in \(databasePath) is damaged",
            details: .object([("record", .string(rawValue)), ("path", .string(databasePath))]))
    }
}

/// Seals and opens the secrets of one `withState` call (S3): XChaCha20-Poly1305 under the sealing key
/// derived from `device.key` and the machine id, with the record kind, `StoreKey.id` and a per-record
/// binding (session id or OAuth state) as additional data.
///
/// The key is derived once, when first needed, and wiped with the sealer (`wipe()` at the end of the call):
/// a `withState` that touches no secret reads neither the device key nor the machine id.
final class RecordSealer {
    private let store: SessionStore
    private var sealingKey: SecretBytes?

    init(store: SessionStore) { self.store = store }

    func wipe() { sealingKey = nil }

    func seal(_ secret: String, _ kind: SessionRecordKind, binding: String) throws -> [UInt8] {
        var plaintext = Array(secret.utf8)
        defer { Sodium.wipe(&plaintext) }
        return XChaCha20Poly1305.seal(plaintext, additionalData: additionalData(kind, binding: binding),
                                      key: try key(creating: true))
    }

    func open(_ sealed: [UInt8], _ kind: SessionRecordKind, binding: String) throws -> String {
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

    /// `starline-session-store/v1 \0 kind \0 StoreKey.id \0 binding`.
    private func additionalData(_ kind: SessionRecordKind, binding: String) -> [UInt8] {
        Array("starline-session-store/v1\u{0}\(kind.rawValue)\u{0}\(store.key.id)\u{0}\(binding)".utf8)
    }

    /// The sealing key. Sealing creates the device key on first use; opening never does — a sealed record
    /// without its key is "locked", and a new key would not open it anyway.
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
}
