import StarlineCore
import StarlineSQLite

/// The vault's errors, worded in one place. Corruption (VAULT_CORRUPT, exit 12) always names the part that
/// failed — the header, the manifest, a record id, an attachment — and is never confused with a wrong
/// passphrase (WRONG_PASSPHRASE, exit 13): that is only said after the header's checksum passed.
enum VaultErrors {
    static func corruptHeader(_ path: String, _ reason: String) -> StarlineError {
        StarlineError(
            .vaultCorrupt, "the memory vault header in \(path) is corrupt: \(reason)",
            details: .object([("part", .string("header")), ("path", .string(path)), ("reason", .string(reason))]))
    }

    static func corruptManifest(_ path: String, _ reason: String) -> StarlineError {
        StarlineError(
            .vaultCorrupt, "the memory vault manifest in \(path) is corrupt: \(reason)",
            details: .object([("part", .string("manifest")), ("path", .string(path)), ("reason", .string(reason))]))
    }

    static func corruptRecord(_ id: String, _ path: String, _ reason: String) -> StarlineError {
        StarlineError(
            .vaultCorrupt, "record \(id) in the memory vault \(path) is corrupt: \(reason)",
            details: .object([
                ("part", .string("record")), ("record", .string(id)), ("path", .string(path)),
                ("reason", .string(reason))
            ]))
    }

    static func corruptAttachment(_ name: String, record: String, file: String, _ reason: String) -> StarlineError {
        StarlineError(
            .vaultCorrupt, "attachment '\(name)' of record \(record) is corrupt: \(reason) (\(file))",
            details: .object([
                ("part", .string("attachment")), ("attachment", .string(name)), ("record", .string(record)),
                ("path", .string(file)), ("reason", .string(reason))
            ]))
    }

    static func wrongPassphrase(_ path: String) -> StarlineError {
        StarlineError(
            .wrongPassphrase, "wrong passphrase for the memory vault \(path)",
            details: .object([("path", .string(path))]))
    }

    static func wrongKey(_ path: String, _ reason: String) -> StarlineError {
        StarlineError(
            .wrongKey, "the key does not open the memory vault \(path): \(reason)",
            details: .object([("path", .string(path))]))
    }

    static func notFound(_ directory: String, _ reason: String) -> StarlineError {
        StarlineError(
            .vaultNotFound, "no memory vault in \(directory) (\(reason)); sl-memory init creates one",
            details: .object([("path", .string(directory))]))
    }

    static func noteNotFound(_ id: String) -> StarlineError {
        StarlineError(.notFound, "no note with id \(id)", details: .object([("id", .string(id))]))
    }

    /// A STORAGE_ERROR from SQLite that says the file itself is damaged (SQLITE_CORRUPT 11, SQLITE_NOTADB 26)
    /// becomes VAULT_CORRUPT: a vault whose database cannot be read is corrupt, never empty and never "locked".
    /// Other errors pass unchanged.
    static func classify(_ error: Error, path: String) -> Error {
        if let sqlite = error as? SQLiteError { return classify(sqlite.starlineError, path: path) }
        guard let error = error as? StarlineError, error.code == .storage,
            let code = error.details?["sqliteCode"]?.intValue
        else { return error }
        let primary = code & 0xff
        guard primary == 11 || primary == 26 else { return error }
        return StarlineError(
            .vaultCorrupt, "the memory vault database \(path) is corrupt: \(error.details?["sqliteMessage"]?.stringValue ?? error.message)",
            details: .object([("part", .string("database")), ("path", .string(path)), ("sqliteCode", .int(code))]))
    }
}
