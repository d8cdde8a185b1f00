import StarlineCore
import StarlineSQLite

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

/// The tables of `vault.db` (`docs/formats.md`). Only ids, versions, key epochs, attachment file ids and
/// blind tokens are clear; everything a user wrote is in `sealed`.
enum VaultSchema {
    static let migrations = [
        SQLiteMigration(version: 1, name: "memory vault", sql: """
            CREATE TABLE vault_header (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                bytes BLOB NOT NULL
            );
            CREATE TABLE manifest (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                counter INTEGER NOT NULL,
                key_epoch INTEGER NOT NULL,
                sealed BLOB NOT NULL
            );
            CREATE TABLE records (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                version INTEGER NOT NULL,
                key_epoch INTEGER NOT NULL,
                blobs BLOB NOT NULL,
                sealed BLOB NOT NULL
            );
            CREATE INDEX records_by_epoch ON records (key_epoch);
            CREATE TABLE search_tokens (
                token BLOB NOT NULL,
                record_id TEXT NOT NULL,
                PRIMARY KEY (token, record_id)
            ) WITHOUT ROWID;
            CREATE INDEX search_tokens_by_record ON search_tokens (record_id);
            """),
    ]
}
