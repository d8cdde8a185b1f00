// Reading JSON text (RFC 8259) into a value; numbers that no Int64 or Double holds exactly stay text.

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
            pos = JSONStringBytes.plainEnd(bytes, from: pos)
            guard pos < bytes.count else { break }
            let b = bytes[pos]
            if b == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<pos])
                pos += 1
                guard let s = String(utf8Validating: slice) else { throw fail("invalid UTF-8 in string") }
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
                guard let s = String(utf8Validating: out) else { throw fail("invalid UTF-8 in string") }
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
