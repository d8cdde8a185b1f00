import StarlineCore

/// Where a vault and its pin live. The vault directory holds `vault.db` (+ `-wal`, `-shm`, `.lock`) and
/// `attachments/`; the pin (and the open fingerprint beside it) is outside it, in the state directory, so
/// restoring an older copy of the vault directory does not restore the pin with it.
public struct VaultLocation: Sendable, Equatable {
    public var directory: String
    public var pinPath: String

    public init(directory: String, pinPath: String) {
        self.directory = directory
        self.pinPath = pinPath
    }

    /// The defaults (README, Environment and files): `<data>/memory/` and `<state>/memory/pin`.
    public init(paths: StarlinePaths) {
        self.init(directory: paths.data + "/memory", pinPath: paths.state + "/memory/pin")
    }

    public var databasePath: String { directory + "/vault.db" }
    /// The open fingerprint (`VaultFingerprint`), beside the pin: like it, not restored with the vault.
    public var fingerprintPath: String { pinPath + ".fingerprint" }
    public var attachmentsPath: String { directory + "/attachments" }
    func blobPath(_ name: String) -> String { attachmentsPath + "/" + name }
}
