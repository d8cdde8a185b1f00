/// One result row: the values and their column names, detached from the statement.
///
/// Reads go by column name (`row.string("session_id")`), so a query and the code that reads it cannot
/// drift apart silently when a column is added or reordered. The typed getters answer nil for SQL NULL
/// and for another storage class — the caller decides whether that is a damaged record — but a name
/// that is not a column of the row is a bug (the SELECT and the reader disagree), and it stops the
/// program with a message naming the column and the row's columns, as an index out of range does.
/// Only `row["name"]` and `index(of:)` probe: they answer nil for a missing column.
public struct SQLiteRow: Sendable, Equatable {
    public let columnNames: [String]
    public let values: [SQLiteValue]

    public init(columnNames: [String], values: [SQLiteValue]) {
        self.columnNames = columnNames
        self.values = values
    }

    public var count: Int { values.count }

    public subscript(index: Int) -> SQLiteValue { values[index] }

    /// The value of the first column named `name` (exact match first, then ASCII case-insensitive like SQLite
    /// itself), or nil when there is no such column. The one lookup by name that does not insist.
    public subscript(name: String) -> SQLiteValue? {
        index(of: name).map { values[$0] }
    }

    public func index(of name: String) -> Int? {
        if let i = columnNames.firstIndex(of: name) { return i }
        let lowered = name.lowercased()
        return columnNames.firstIndex { $0.lowercased() == lowered }
    }

    /// The value of column `name`; stops the program when the row has no such column.
    public func value(_ name: String) -> SQLiteValue {
        guard let i = index(of: name) else {
            // fatalError, not preconditionFailure: its message is kept in optimized builds too.
            fatalError("SQLiteRow has no column named '\(name)' (columns: \(columnNames.joined(separator: ", ")))")
        }
        return values[i]
    }

    // Typed getters by name: nil for NULL or another storage class; an unknown name stops the program.
    public func int64(_ column: String) -> Int64? { value(column).int64Value }
    public func int(_ column: String) -> Int? { int64(column).flatMap { Int(exactly: $0) } }
    public func double(_ column: String) -> Double? { value(column).doubleValue }
    public func string(_ column: String) -> String? { value(column).stringValue }
    public func blob(_ column: String) -> [UInt8]? { value(column).blobValue }
    public func bool(_ column: String) -> Bool? { int64(column).map { $0 != 0 } }
    public func isNull(_ column: String) -> Bool { value(column).isNull }

    public func int64(_ index: Int) -> Int64? { values[index].int64Value }
    public func int(_ index: Int) -> Int? { int64(index).flatMap { Int(exactly: $0) } }
    public func double(_ index: Int) -> Double? { values[index].doubleValue }
    public func string(_ index: Int) -> String? { values[index].stringValue }
    public func blob(_ index: Int) -> [UInt8]? { values[index].blobValue }
    public func bool(_ index: Int) -> Bool? { int64(index).map { $0 != 0 } }
}
