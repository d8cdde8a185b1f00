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

    public static func int(_ value: Int) -> JSON { .int(Int64(value)) }

    /// `.string(value)` or `.null` for nil.
    public static func optional(_ value: String?) -> JSON { value.map(JSON.string) ?? .null }

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

    /// Sets `key`, replacing an existing member in place or appending a new one.
    public mutating func set(_ key: String, _ value: JSON) {
        guard case .object(var members) = self else { return }
        if let i = members.lastIndex(where: { $0.0 == key }) { members[i].1 = value } else { members.append((key, value)) }
        self = .object(members)
    }

    public mutating func remove(_ key: String) {
        guard case .object(var members) = self else { return }
        members.removeAll { $0.0 == key }
        self = .object(members)
    }
}

// MARK: - Serialization

extension JSON {
    public enum Style: Sendable { case compact, pretty }

    public func serialized(_ style: Style = .compact) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out, style: style, indent: 0)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the UTF-8 text to `out` (bytes, not `String`: appending to a String's unicode-scalar view
    /// made serialization quadratic in the output size).
    public func write(to out: inout [UInt8], style: Style, indent: Int) {
        switch self {
        case .null: out += JSON.nullBytes
        case .bool(let b): out += b ? JSON.trueBytes : JSON.falseBytes
        case .int(let i): out += String(i).utf8
        case .double(let d):
            if d.isFinite {
                if d.rounded() == d && abs(d) < 1e15 { out += String(Int64(d)).utf8 } else { out += "\(d)".utf8 }
            } else {
                out += JSON.nullBytes
            }
        case .number(let text): out += text.utf8
        case .string(let s): JSON.writeString(s, to: &out)
        case .array(let items):
            if items.isEmpty { out += [0x5B, 0x5D]; return }
            out.append(0x5B)
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(0x2C) }
                if style == .pretty { JSON.newline(&out, indent + 1) }
                item.write(to: &out, style: style, indent: indent + 1)
            }
            if style == .pretty { JSON.newline(&out, indent) }
            out.append(0x5D)
        case .object(let members):
            if members.isEmpty { out += [0x7B, 0x7D]; return }
            out.append(0x7B)
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out.append(0x2C) }
                if style == .pretty { JSON.newline(&out, indent + 1) }
                JSON.writeString(key, to: &out)
                out.append(0x3A)
                if style == .pretty { out.append(0x20) }
                value.write(to: &out, style: style, indent: indent + 1)
            }
            if style == .pretty { JSON.newline(&out, indent) }
            out.append(0x7D)
        }
    }

    private static let nullBytes = Array("null".utf8)
    private static let trueBytes = Array("true".utf8)
    private static let falseBytes = Array("false".utf8)

    private static func newline(_ out: inout [UInt8], _ indent: Int) {
        out.append(0x0A)
        out.append(contentsOf: repeatElement(0x20, count: indent * 2))
    }

    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(0x22)
        var copy = s
        copy.withUTF8 { bytes in
            var i = 0
            var plainStart = 0
            let n = bytes.count
            while i < n {
                let b = bytes[i]
                var escape: [UInt8]?
                var width = 1
                switch b {
                case 0x22: escape = [0x5C, 0x22]
                case 0x5C: escape = [0x5C, 0x5C]
                case 0x0A: escape = [0x5C, 0x6E]
                case 0x0D: escape = [0x5C, 0x72]
                case 0x09: escape = [0x5C, 0x74]
                case 0x08: escape = [0x5C, 0x62]
                case 0x0C: escape = [0x5C, 0x66]
                case 0x00..<0x20, 0x7F: escape = JSON.unicodeEscape(UInt32(b))
                case 0xE2 where i + 2 < n && bytes[i + 1] == 0x80 && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9):
                    // U+2028 / U+2029: valid JSON, but line terminators in JavaScript.
                    escape = JSON.unicodeEscape(bytes[i + 2] == 0xA8 ? 0x2028 : 0x2029)
                    width = 3
                default: break
                }
                if let escape {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[plainStart..<i]))
                    out += escape
                    i += width
                    plainStart = i
                } else {
                    i += 1
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[plainStart..<n]))
        }
        out.append(0x22)
    }

    private static func unicodeEscape(_ v: UInt32) -> [UInt8] {
        let hex = Array("0123456789abcdef".utf8)
        return [0x5C, 0x75, hex[Int(v >> 12 & 15)], hex[Int(v >> 8 & 15)], hex[Int(v >> 4 & 15)], hex[Int(v & 15)]]
    }
}

// MARK: - Parsing

extension JSON {
    /// Parses one JSON document (RFC 8259). Throws `DATA_ERROR` with the byte offset on bad input.
    public static func parse(_ text: String) throws -> JSON {
        var copy = text
        return try copy.withUTF8 { buffer in try parse(bytes: buffer) }
    }

    public static func parse<C: Collection>(_ bytes: C) throws -> JSON where C.Element == UInt8 {
        if let result = try bytes.withContiguousStorageIfAvailable({ buffer in try parse(bytes: buffer) }) {
            return result
        }
        let array = Array(bytes)
        return try array.withUnsafeBufferPointer { buffer in try parse(bytes: buffer) }
    }

    public static func parse(bytes: UnsafeBufferPointer<UInt8>) throws -> JSON {
        var parser = JSONParser(bytes: bytes)
        let value = try parser.parseDocument()
        return value
    }
}

struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var pos = 0
    var depth = 0
    static let maxDepth = 512

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    func fail(_ what: String) -> StarlineError {
        StarlineError(.data, "invalid JSON at byte \(pos): \(what)", details: .object([("offset", .int(pos))]))
    }

    mutating func parseDocument() throws -> JSON {
        // A UTF-8 byte order mark is tolerated, as RFC 8259 allows parsers to.
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { pos = 3 }
        skipSpace()
        let value = try parseValue()
        skipSpace()
        if pos != bytes.count { throw fail("unexpected trailing data") }
        return value
    }

    mutating func skipSpace() {
        while pos < bytes.count {
            switch bytes[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws -> JSON {
        guard pos < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[pos] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    mutating func expectWord(_ word: String) throws {
        for b in word.utf8 {
            guard pos < bytes.count, bytes[pos] == b else { throw fail("invalid literal") }
            pos += 1
        }
    }

    mutating func enter() throws {
        depth += 1
        if depth > JSONParser.maxDepth { throw fail("nesting deeper than \(JSONParser.maxDepth)") }
    }

    mutating func parseObject() throws -> JSON {
        try enter()
        pos += 1
        var members: [(String, JSON)] = []
        skipSpace()
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "}") { pos += 1; depth -= 1; return .object(members) }
        while true {
            skipSpace()
            guard pos < bytes.count, bytes[pos] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try parseString()
            skipSpace()
            guard pos < bytes.count, bytes[pos] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            pos += 1
            skipSpace()
            let value = try parseValue()
            members.append((key, value))
            skipSpace()
            guard pos < bytes.count else { throw fail("unexpected end of input") }
            if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
            if bytes[pos] == UInt8(ascii: "}") { pos += 1; break }
            throw fail("expected ',' or '}'")
        }
        depth -= 1
        return .object(members)
    }

    mutating func parseArray() throws -> JSON {
        try enter()
        pos += 1
        var items: [JSON] = []
        skipSpace()
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "]") { pos += 1; depth -= 1; return .array(items) }
        while true {
            skipSpace()
            items.append(try parseValue())
            skipSpace()
            guard pos < bytes.count else { throw fail("unexpected end of input") }
            if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
            if bytes[pos] == UInt8(ascii: "]") { pos += 1; break }
            throw fail("expected ',' or ']'")
        }
        depth -= 1
        return .array(items)
    }

    mutating func parseString() throws -> String {
        pos += 1
        let start = pos
        // Fast path: no escapes.
        while pos < bytes.count {
            let b = bytes[pos]
            if b == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<pos])
                pos += 1
                guard let s = String(validating: slice, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
                return s
            }
            if b == UInt8(ascii: "\\") || b < 0x20 { break }
            pos += 1
        }
        var out = [UInt8](UnsafeBufferPointer(rebasing: bytes[start..<pos]))
        while pos < bytes.count {
            let b = bytes[pos]
            if b == UInt8(ascii: "\"") {
                pos += 1
                guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
                return s
            }
            if b < 0x20 { throw fail("control character in string") }
            if b != UInt8(ascii: "\\") { out.append(b); pos += 1; continue }
            pos += 1
            guard pos < bytes.count else { break }
            let e = bytes[pos]
            pos += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try parseHex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard pos + 1 < bytes.count, bytes[pos] == UInt8(ascii: "\\"), bytes[pos + 1] == UInt8(ascii: "u") else {
                        throw fail("unpaired surrogate")
                    }
                    pos += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw fail("unpaired surrogate")
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid escape") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default: throw fail("invalid escape")
            }
        }
        throw fail("unterminated string")
    }

    mutating func parseHex4() throws -> UInt32 {
        guard pos + 4 <= bytes.count else { throw fail("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[pos]
            let d: UInt32
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(b - 48)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(b - 87)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(b - 55)
            default: throw fail("invalid \\u escape")
            }
            v = v << 4 | d
            pos += 1
        }
        return v
    }

    mutating func parseNumber() throws -> JSON {
        let start = pos
        var isInteger = true
        if bytes[pos] == UInt8(ascii: "-") { pos += 1 }
        guard pos < bytes.count, isDigit(bytes[pos]) else { throw fail("invalid number") }
        if bytes[pos] == UInt8(ascii: "0") {
            pos += 1
            if pos < bytes.count, isDigit(bytes[pos]) { throw fail("leading zero in number") }
        } else {
            while pos < bytes.count, isDigit(bytes[pos]) { pos += 1 }
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            guard pos < bytes.count, isDigit(bytes[pos]) else { throw fail("invalid number") }
            while pos < bytes.count, isDigit(bytes[pos]) { pos += 1 }
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "e") || bytes[pos] == UInt8(ascii: "E") {
            isInteger = false
            pos += 1
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "+") || bytes[pos] == UInt8(ascii: "-") { pos += 1 }
            guard pos < bytes.count, isDigit(bytes[pos]) else { throw fail("invalid number") }
            while pos < bytes.count, isDigit(bytes[pos]) { pos += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<pos]), as: UTF8.self)
        if isInteger, let i = Int64(text), i != 0 || bytes[start] != UInt8(ascii: "-") { return .int(i) }
        guard let d = Double(text) else { throw fail("invalid number") }
        // Kept as a Double only when writing it back gives the same decimal value.
        let value = JSON.double(d)
        guard d.isFinite, JSONNumberText.decimal(value.serialized()) == JSONNumberText.decimal(text) else { return .number(text) }
        return value
    }

    @inline(__always) func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
}

/// The decimal value of a JSON number's text, canonical: sign, significant digits without leading or
/// trailing zeros, and the exponent of the last digit. `1.50`, `15e-1` and `1.5` are the same value.
enum JSONNumberText {
    struct Decimal: Equatable {
        var negative: Bool
        var digits: [UInt8]
        var exponent: Int
    }

    static func decimal(_ text: String) -> Decimal? {
        var negative = false
        var digits: [UInt8] = []
        var exponent = 0
        var fraction = false
        var explicit = 0
        var explicitNegative = false
        var inExponent = false
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "-") where !inExponent: negative = true
            case UInt8(ascii: "-"): explicitNegative = true
            case UInt8(ascii: "+"): break
            case UInt8(ascii: "."): fraction = true
            case UInt8(ascii: "e"), UInt8(ascii: "E"): inExponent = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if inExponent {
                    // Saturate: a 400-digit exponent is as out of reach as a 9-digit one.
                    explicit = min(explicit * 10 + Int(c - 48), 1_000_000_000)
                } else {
                    if digits.isEmpty && c == UInt8(ascii: "0") {
                        if fraction { exponent -= 1 }
                        continue
                    }
                    digits.append(c)
                    if fraction { exponent -= 1 }
                }
            default: return nil
            }
        }
        exponent += explicitNegative ? -explicit : explicit
        while let last = digits.last, last == UInt8(ascii: "0") { digits.removeLast(); exponent += 1 }
        if digits.isEmpty { exponent = 0 }
        return Decimal(negative: negative, digits: digits, exponent: exponent)
    }
}
