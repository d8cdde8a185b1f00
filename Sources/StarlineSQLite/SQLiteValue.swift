/// A value stored in or bound to SQLite, one case per SQLite storage class.
public enum SQLiteValue: Sendable, Equatable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    public var isNull: Bool { if case .null = self { true } else { false } }
    public var int64Value: Int64? { if case .integer(let v) = self { v } else { nil } }
    /// A REAL, or an INTEGER converted to `Double`.
    public var doubleValue: Double? {
        switch self {
        case .real(let v): v
        case .integer(let v): Double(v)
        default: nil
        }
    }
    public var stringValue: String? { if case .text(let v) = self { v } else { nil } }
    public var blobValue: [UInt8]? { if case .blob(let v) = self { v } else { nil } }
}

extension SQLiteValue: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral, ExpressibleByFloatLiteral,
    ExpressibleByNilLiteral
{
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(nilLiteral: ()) { self = .null }
}
