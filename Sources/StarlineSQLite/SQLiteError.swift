import CSQLite
import StarlineCore

/// A failed SQLite call: the result code and `sqlite3_errmsg` text of the connection, and the SQL
/// that failed when there was one.
///
/// The message comes from SQLite and never contains bound parameter values, so it is safe to show;
/// the SQL text is kept for debugging but deliberately left out of `starlineError`, because a
/// statement run through `execute` could carry literal values.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The primary result code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT`, …): the low 8 bits of the extended code.
    public var resultCode: Int32
    /// The extended result code (`SQLITE_CONSTRAINT_UNIQUE`, `SQLITE_BUSY_SNAPSHOT`, …).
    public var extendedResultCode: Int32
    /// `sqlite3_errmsg()` at the time of the failure, or our own text for failures detected before SQLite ran.
    public var message: String
    /// The statement that failed, if any.
    public var sql: String?

    public init(extendedResultCode: Int32, message: String, sql: String? = nil) {
        // "The primary result code is always the least significant 8 bits of the extended result code."
        self.resultCode = extendedResultCode & 0xff
        self.extendedResultCode = extendedResultCode
        self.message = message
        self.sql = sql
    }

    /// Reads the error state of `connection` after a call returned `code`.
    ///
    /// The caller must hold the connection's mutex (see `SQLiteDatabase.withConnectionLock`): "If a
    /// separate thread performs a new SQLite API call on the same database connection while the first
    /// thread is getting the error message, the results are undefined" (sqlite3_errmsg docs).
    init(connection: OpaquePointer?, code: Int32, sql: String? = nil) {
        guard let connection else {
            self.init(extendedResultCode: code, message: String(cString: sqlite3_errstr(code)), sql: sql)
            return
        }
        let extended = sqlite3_extended_errcode(connection)
        // `sqlite3_extended_errcode` describes the most recent failing call on the connection. If it does not
        // belong to `code` (the primary codes differ), trust `code` and SQLite's generic text for it.
        if extended & 0xff == code & 0xff {
            self.init(extendedResultCode: extended, message: String(cString: sqlite3_errmsg(connection)), sql: sql)
        } else {
            self.init(extendedResultCode: code, message: String(cString: sqlite3_errstr(code)), sql: sql)
        }
    }

    /// The other connection holds the lock we need and the busy timeout ran out. Retrying later may succeed.
    public var isBusy: Bool { resultCode == SQLITE_BUSY }
    /// A UNIQUE, NOT NULL, CHECK, FOREIGN KEY or PRIMARY KEY constraint failed.
    public var isConstraint: Bool { resultCode == SQLITE_CONSTRAINT }

    public var description: String {
        "SQLite error \(extendedResultCode): \(message)"
    }

    /// The suite's error for this failure: `STORAGE_ERROR`, retryable when the database was busy.
    public var starlineError: StarlineError {
        StarlineError(
            .storage,
            isBusy ? "database is busy (locked by another process): \(message)" : "database error: \(message)",
            retryable: isBusy,
            details: .object([
                ("sqliteCode", .int(Int64(extendedResultCode))),
                ("sqliteMessage", .string(message))
            ]))
    }
}
