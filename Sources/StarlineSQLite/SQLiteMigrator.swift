import StarlineCore

/// One numbered step of a store's schema. Applied once, in version order, in its own transaction together
/// with the bump of `PRAGMA user_version` to `version`: it happens entirely or not at all.
///
/// A migration's SQL runs on databases of every age, so it only ever adds to what the versions before it
/// left; never edit a migration that has shipped — add the next one.
public struct SQLiteMigration: Sendable {
    /// 1 for the first migration; each later one is greater than the one before.
    public let version: Int32
    /// What it does, for error messages ("initial schema", "add outbox index").
    public let name: String
    let apply: @Sendable (SQLiteDatabase) throws -> Void

    /// A migration that runs the `;`-separated statements of `sql`.
    public init(version: Int32, name: String, sql: String) {
        self.init(version: version, name: name) { database in try database.execute(sql) }
    }

    /// A migration that runs `apply` (for a step SQL alone cannot express, such as rewriting rows). It runs
    /// inside the migration's transaction and must not open one of its own.
    public init(version: Int32, name: String, _ apply: @escaping @Sendable (SQLiteDatabase) throws -> Void) {
        self.version = version
        self.name = name
        self.apply = apply
    }
}

/// Brings a database up to the newest of its migrations, and refuses one written by a newer program.
///
/// The schema version is `PRAGMA user_version` ("The user_version pragma will get or set the value of the
/// user-version integer at offset 60 in the database header ... SQLite makes no use of the user-version
/// itself"). It lives in the header page, so setting it inside a transaction commits or rolls back with
/// the transaction's DDL: a failed migration leaves the previous version and none of its schema.
public struct SQLiteMigrator: Sendable {
    public let migrations: [SQLiteMigration]

    /// `migrations` in order. Versions must be positive and strictly increasing (gaps are allowed): a list
    /// that is not is a programming error and stops the program.
    public init(_ migrations: [SQLiteMigration]) {
        var previous: Int32 = 0
        for migration in migrations {
            guard migration.version > previous else {
                fatalError("SQLiteMigrator: migration \(migration.version) (\(migration.name)) must be numbered above \(previous)")
            }
            previous = migration.version
        }
        self.migrations = migrations
    }

    /// The version a fully migrated database has; 0 without migrations.
    public var latestVersion: Int32 { migrations.last?.version ?? 0 }

    /// Applies the migrations above the database's version, oldest first, each in its own `BEGIN IMMEDIATE`
    /// transaction, and returns the versions it applied.
    ///
    /// An up-to-date database costs one read of the header and no transaction (so no write and no `fsync`):
    /// reopening is a no-op. Another process may migrate at the same time; the version is read again under
    /// the write lock, so each migration runs once.
    ///
    /// Throws STORAGE_ERROR "cannot open <name>: <path> was written by a newer Starline (schema N, this one
    /// knows M)" when the database is newer than `latestVersion` — without changing it — and "cannot open
    /// <name>: <path>: migration N (<name>) failed: …" when a migration fails (retryable when the database
    /// was busy). A `StarlineError` thrown by a closure migration passes unchanged.
    @discardableResult
    public func migrate(_ database: SQLiteDatabase, name: String) throws(StarlineError) -> [Int32] {
        let path = database.path
        let current: Int32
        do {
            current = try database.userVersion
        } catch {
            throw SQLiteStore.openFailure(name, path: path, error)
        }
        if current > latestVersion { throw newerSchema(name, path, current) }
        var applied: [Int32] = []
        for migration in migrations where migration.version > current {
            let ran: Bool
            do {
                ran = try database.transaction(.immediate) { () throws -> Bool in
                    // Another process may have migrated while we waited for the write lock.
                    let now = try database.userVersion
                    if now > latestVersion { throw newerSchema(name, path, now) }
                    if now >= migration.version { return false }
                    try migration.apply(database)
                    try database.setUserVersion(migration.version)
                    return true
                }
            } catch let error as StarlineError {
                throw error
            } catch let error as SQLiteError {
                throw failed(
                    migration, name, path, message: error.message, retryable: error.isBusy,
                    sqliteCode: error.extendedResultCode)
            } catch {
                throw failed(migration, name, path, message: "\(error)", retryable: false, sqliteCode: nil)
            }
            if ran { applied.append(migration.version) }
        }
        return applied
    }

    private func newerSchema(_ name: String, _ path: String, _ version: Int32) -> StarlineError {
        StarlineError(
            .storage,
            "cannot open \(name): \(path) was written by a newer Starline (schema \(version), this one knows \(latestVersion))",
            details: .object([
                ("path", .string(path)),
                ("schemaVersion", .int(Int64(version))),
                ("knownSchemaVersion", .int(Int64(latestVersion)))
            ]))
    }

    private func failed(
        _ migration: SQLiteMigration, _ name: String, _ path: String, message: String,
        retryable: Bool, sqliteCode: Int32?
    ) -> StarlineError {
        var details: [(String, JSON)] = [
            ("path", .string(path)),
            ("migration", .int(Int64(migration.version))),
            ("migrationName", .string(migration.name))
        ]
        if let sqliteCode {
            details.append(("sqliteCode", .int(Int64(sqliteCode))))
            details.append(("sqliteMessage", .string(message)))
        }
        return StarlineError(
            .storage, "cannot open \(name): \(path): migration \(migration.version) (\(migration.name)) failed: \(message)",
            retryable: retryable, details: .object(details))
    }
}
