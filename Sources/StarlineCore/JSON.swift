#if canImport(Glibc)
import Glibc
#endif

/// A JSON value whose objects keep their key order, so output field order is stable
/// and unknown fields of files we rewrite survive in place.
///
/// The suite writes and reads JSON through this type rather than Foundation's
/// `JSONSerialization`, which is not part of FoundationEssentials and reorders keys.
public enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    /// A number kept as its source text because neither `.int` nor `.double` holds its value exactly: an
    /// integer beyond 64 bits (`12345678901234567891`), a magnitude beyond a Double (`1e400`), more digits
    /// than a Double carries, `-0`. Only the parser makes it, and it is written back as that text, so a number
    /// in a file that is rewritten keeps its meaning whether or not anyone reads it.
    case number(String)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b
        case let (.int(a), .double(b)), let (.double(b), .int(a)): return Double(a) == b
        case let (.number(a), .number(b)): return a == b || JSONNumberText.decimal(a) == JSONNumberText.decimal(b)
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    public subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.0 == key })?.1
    }

    public subscript(index: Int) -> JSON? {
        guard case .array(let items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }

    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var arrayValue: [JSON]? { if case .array(let a) = self { a } else { nil } }
    public var objectValue: [(String, JSON)]? { if case .object(let o) = self { o } else { nil } }
    public var isNull: Bool { if case .null = self { true } else { false } }
    public var intValue: Int64? {
        switch self {
        case .int(let i): i
        case .double(let d) where d.rounded() == d && abs(d) < 9.2e18: Int64(d)
        case .number(let text): Int64(text)
        default: nil
        }
    }
    /// For `.number`, the nearest Double (infinite beyond its range).
    public var doubleValue: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        case .number(let text): Double(text)
        default: nil
        }
    }
}
