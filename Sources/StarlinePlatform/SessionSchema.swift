import StarlineSQLite

/// The tables of `sessions.db`, as numbered migrations (`PRAGMA user_version`).
///
/// Version 1 is the schema the store had before it had migrations: such files already say
/// `user_version = 1`, so they open unchanged; its `IF NOT EXISTS` also adopts a file that has the tables
/// but version 0. Add a change as the next migration; never edit one that has shipped.
enum SessionSchema {
    static let migrations = [
        SQLiteMigration(
            version: 1, name: "initial schema",
            sql: """
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
                """),
        // Key custody (S3): where each key's sealing key lives. No row = the file custodian (every store before this).
        // `keyring_item` names the Secret Service item holding the key; `orphan_item` one whose delete failed
        // (S13), retried by `sl-login clear`.
        SQLiteMigration(
            version: 2, name: "key custody",
            sql: """
                CREATE TABLE custody (
                    store_key TEXT PRIMARY KEY NOT NULL,
                    custodian TEXT NOT NULL,
                    keyring_item TEXT,
                    orphan_item TEXT,
                    updated_at INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
    ]
}
