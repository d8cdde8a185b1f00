import CSQLite
import StarlineCore

/// A compiled statement, finalized when the object goes away.
///
/// It keeps its `SQLiteDatabase` alive, so the connection is never closed under it. Not Sendable: step,
/// bind and reset change shared cursor state, so a statement belongs to one thread.
public final class SQLiteStatement {
    public let database: SQLiteDatabase
    public let sql: String
    /// The `sqlite3_stmt*` handle, non-nil for the whole life of the object.
    let handle: OpaquePointer
    /// False for a statement borrowed from the database's cache, which finalizes it itself.
    private let ownsHandle: Bool

    init(database: SQLiteDatabase, sql: String) throws(SQLiteError) {
        self.database = database
        self.sql = sql
        self.handle = try Self.compile(database: database, sql: sql)
        self.ownsHandle = true
    }

    /// Wraps a handle from `SQLiteDatabase`'s statement cache without taking ownership.
    init(database: SQLiteDatabase, sql: String, cachedHandle: OpaquePointer) {
        self.database = database
        self.sql = sql
        self.handle = cachedHandle
        self.ownsHandle = false
    }

    static func compile(database: SQLiteDatabase, sql: String) throws(SQLiteError) -> OpaquePointer {
        try database.withConnectionLock { () throws(SQLiteError) -> OpaquePointer in
            var statement: OpaquePointer?
            var trailingSQL = false
            let rc = sql.withCString { cSQL in
                var tail: UnsafePointer<CChar>?
                // -1: read up to the NUL terminator. The tail tells us whether more statements follow.
                let rc = sqlite3_prepare_v2(database.handle, cSQL, -1, &statement, &tail)
                if let tail { trailingSQL = !Self.isBlank(tail) }
                return rc
            }
            if rc == SQLITE_OK && trailingSQL {
                sqlite3_finalize(statement)
                throw SQLiteError(
                    extendedResultCode: SQLITE_MISUSE,
                    message: "prepare() takes one statement; use execute() for several", sql: sql)
            }
            guard rc == SQLITE_OK else {
                // "If there is an error, *ppStmt is set to NULL."
                throw database.error(rc, sql: sql)
            }
            guard let statement else {
                // "If the input text contains no SQL (if the input is an empty string or a comment) then
                // *ppStmt is set to NULL."
                throw SQLiteError(extendedResultCode: SQLITE_MISUSE, message: "no SQL statement", sql: sql)
            }
            return statement
        }
    }

    deinit {
        // "Invoking sqlite3_finalize() on a NULL pointer is a harmless no-op"; ours is never NULL. Its return
        // value repeats the last step error, which has already been reported.
        if ownsHandle { sqlite3_finalize(handle) }
    }

    /// True when `text` (the tail after the first statement) holds only whitespace, `;` and SQL comments,
    /// which SQLite would compile to nothing. Anything else is a second statement that `prepare` would
    /// silently ignore, so we refuse it.
    private static func isBlank(_ text: UnsafePointer<CChar>) -> Bool {
        var p = text
        while p.pointee != 0 {
            let c = UInt8(bitPattern: p.pointee)
            if c == UInt8(ascii: " ") || c == UInt8(ascii: "\n") || c == UInt8(ascii: "\t") || c == UInt8(ascii: "\r")
                || c == UInt8(ascii: ";")
            {
                p += 1
            } else if c == UInt8(ascii: "-") && (p + 1).pointee == CChar(UInt8(ascii: "-")) {
                while p.pointee != 0 && p.pointee != CChar(UInt8(ascii: "\n")) { p += 1 }
            } else if c == UInt8(ascii: "/") && (p + 1).pointee == CChar(UInt8(ascii: "*")) {
                p += 2
                while p.pointee != 0 && !(p.pointee == CChar(UInt8(ascii: "*")) && (p + 1).pointee == CChar(UInt8(ascii: "/"))) {
                    p += 1
                }
                if p.pointee != 0 { p += 2 }
            } else {
                return false
            }
        }
        return true
    }

    /// Number of `?` / `?NNN` / `:name` parameters.
    public var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

    public var columnCount: Int { Int(sqlite3_column_count(handle)) }

    public var columnNames: [String] {
        (0..<Int32(columnCount)).map { String(cString: sqlite3_column_name(handle, $0)) }
    }

    /// Binds `values` to parameters 1…n. The count must match the statement's parameters exactly.
    public func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        guard values.count == parameterCount else {
            throw SQLiteError(
                extendedResultCode: SQLITE_RANGE,
                message: "statement has \(parameterCount) parameters, \(values.count) values given", sql: sql)
        }
        try database.withConnectionLock { () throws(SQLiteError) in
            sqlite3_clear_bindings(handle)
            for (i, value) in values.enumerated() {
                try bind(value, at: Int32(i + 1))
            }
        }
    }

    /// Binds one value to the 1-based parameter `index`.
    public func bind(_ value: SQLiteValue, at index: Int32) throws(SQLiteError) {
        try database.withConnectionLock { () throws(SQLiteError) in
            // SQLITE_TRANSIENT: "SQLite makes its own private copy of the data immediately, before the
            // sqlite3_bind_*() routine returns" — the Swift buffers below only live for the closure.
            let rc: Int32
            switch value {
            case .null:
                rc = sqlite3_bind_null(handle, index)
            case .integer(let v):
                rc = sqlite3_bind_int64(handle, index, v)
            case .real(let v):
                rc = sqlite3_bind_double(handle, index, v)
            case .text(let v):
                // Pass the byte count, not -1, so text with embedded NULs survives. The pointer is never NULL
                // (a NULL pointer would bind SQL NULL instead of the empty string).
                var utf8 = Array(v.utf8)
                utf8.append(0)
                rc = utf8.withUnsafeBufferPointer { buffer in
                    buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                        sqlite3_bind_text64(handle, index, $0, UInt64(buffer.count - 1), starline_sqlite_transient(), UInt8(SQLITE_UTF8))
                    }
                }
            case .blob(let v):
                if v.isEmpty {
                    // A NULL data pointer would bind SQL NULL; a zero-length zeroblob is an empty BLOB.
                    rc = sqlite3_bind_zeroblob(handle, index, 0)
                } else {
                    rc = v.withUnsafeBytes {
                        sqlite3_bind_blob64(handle, index, $0.baseAddress, UInt64($0.count), starline_sqlite_transient())
                    }
                }
            }
            if rc != SQLITE_OK { throw database.error(rc, sql: sql) }
        }
    }

    /// Rewinds the statement so it can run again; bindings are kept.
    public func reset() {
        // The return value repeats the error of the last step, already reported by `step`.
        sqlite3_reset(handle)
    }

    /// Advances to the next row: true when a row is available, false when the statement is done.
    public func step() throws(SQLiteError) -> Bool {
        try database.withConnectionLock { () throws(SQLiteError) -> Bool in
            let rc = sqlite3_step(handle)
            switch rc {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            default:
                let error = database.error(rc, sql: sql)
                // Release locks and let the statement be re-run.
                sqlite3_reset(handle)
                throw error
            }
        }
    }

    /// The value of column `index` (0-based) of the current row.
    public func column(_ index: Int32) -> SQLiteValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT:
            // "call sqlite3_column_text() first to force the result into the desired format, then invoke
            // sqlite3_column_bytes() to find the size of the result."
            guard let text = sqlite3_column_text(handle, index) else { return .text("") }
            let count = Int(sqlite3_column_bytes(handle, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            // "The return value from sqlite3_column_blob() for a zero-length BLOB is a NULL pointer."
            guard let blob = sqlite3_column_blob(handle, index) else { return .blob([]) }
            let count = Int(sqlite3_column_bytes(handle, index))
            return .blob(Array(UnsafeRawBufferPointer(start: blob, count: count)))
        default:
            return .null
        }
    }

    /// Binds `params`, runs the statement to completion, discarding rows, and resets it.
    public func run(_ params: [SQLiteValue] = []) throws(SQLiteError) {
        try database.withConnectionLock { () throws(SQLiteError) in
            reset()
            try bind(params)
            defer { reset() }
            while try step() {}
        }
    }

    /// Binds `params`, collects every row, and resets the statement.
    public func query(_ params: [SQLiteValue] = []) throws(SQLiteError) -> [SQLiteRow] {
        try database.withConnectionLock { () throws(SQLiteError) -> [SQLiteRow] in
            reset()
            try bind(params)
            defer { reset() }
            let names = columnNames
            var rows: [SQLiteRow] = []
            while try step() {
                rows.append(SQLiteRow(columnNames: names, values: (0..<Int32(names.count)).map(column)))
            }
            return rows
        }
    }
}

@available(*, unavailable, message: "a statement's cursor state belongs to one thread; share the SQLiteDatabase instead")
extension SQLiteStatement: Sendable {}
