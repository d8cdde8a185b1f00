#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineCrypto
import StarlineKeyring

/// The vault's data key in the desktop keyring (W2, opt-in): `sl-memory unlock --keyring` checks the
/// passphrase once and stores the key under the memory schema — its own service, apart from the session
/// store's (seed 003: "记忆密钥使用另一 service") — so later commands need no passphrase while the keyring is
/// unlocked; `sl-memory lock --forget` removes it. A marker file (`<state>/memory/keyring-VAULTID`, nothing
/// secret in it) records the opt-in, so a vault that never chose the keyring never loads libsecret.
enum MemoryKeyring {
    static let schema = "cn.thestarline.Memory"

    static func attributes(_ vaultID: String) -> [String: String] { ["vault": vaultID] }

    static func markerPath(_ vaultID: String, environment: Environment) -> String {
        StarlinePaths(environment: environment).state + "/memory/keyring-" + vaultID
    }

    static func isChosen(vaultID: String, environment: Environment) -> Bool {
        access(markerPath(vaultID, environment: environment), F_OK) == 0
    }

    /// The stored key, or nil: not chosen, not stored, or the keyring is locked or unreachable (the command
    /// then asks for the passphrase or says the vault is locked — it never prompts the keyring).
    static func lookup(vaultID: String, environment: Environment) throws -> SecretBytes? {
        guard isChosen(vaultID: vaultID, environment: environment) else { return nil }
        guard let keyring = try? open(environment) else { return nil }
        if case .found(let key) = try keyring.lookup(attributes: attributes(vaultID)) { return key }
        return nil
    }

    static func store(_ key: SecretBytes, vaultID: String, environment: Environment) throws {
        try open(environment).store(secret: key, label: "Starline memory vault key (\(vaultID))", attributes: attributes(vaultID))
        let marker = markerPath(vaultID, environment: environment)
        try PrivateFiles.ensurePrivateDirectory(String(marker[..<(marker.lastIndex(of: "/") ?? marker.endIndex)]))
        try AtomicFile.write(Array("keyring\n".utf8), to: marker, mode: 0o600)
    }

    /// Removes the key and the opt-in. True when something was removed; STORAGE_LOCKED when the keyring is locked.
    static func forget(vaultID: String, environment: Environment) throws -> Bool {
        let marker = markerPath(vaultID, environment: environment)
        let chosen = access(marker, F_OK) == 0
        guard chosen else { return false }
        switch try open(environment).delete(attributes: attributes(vaultID)) {
        case .locked:
            throw StarlineError(
                .storageLocked, "the keyring is locked: unlock it and run sl-memory lock --forget again (the key stays in it until then)")
        case .deleted, .absent:
            unlink(marker)
            return true
        }
    }

    /// `status`: whether the key is in the keyring and readable now.
    static func state(vaultID: String, environment: Environment) -> String {
        guard isChosen(vaultID: vaultID, environment: environment) else { return "notChosen" }
        do {
            switch try open(environment).lookup(attributes: attributes(vaultID)) {
            case .found: return "stored"
            case .locked: return "locked"
            case .absent: return "missing"
            }
        } catch {
            return error.code == .keyringUnavailable ? "unavailable" : "error"
        }
    }

    private static func open(_ environment: Environment) throws(StarlineError) -> SecretServiceKeyring {
        try SecretServiceKeyring.open(busOf: environment, schemaName: schema)
    }
}
