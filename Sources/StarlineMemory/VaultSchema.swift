import StarlineSQLite

/// The tables of `vault.db` (`docs/formats.md`). Only ids, versions, key epochs, attachment file ids and
/// blind tokens are clear; everything a user wrote is in `sealed`.
enum VaultSchema {
    static let migrations = [
        SQLiteMigration(
            version: 1, name: "memory vault",
            sql: """
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
                """)
    ]
}
