import StarlineCore

/// The scanner's value grammar: any JSON value skipped and validated as strictly as the JSON parser reads it
/// (RFC 8259: literals, numbers, strings with their escapes and UTF-8, nesting depth).
extension WorkspaceScanner {
    /// Skips one value, validating it.
    mutating func value() -> Bool {
        guard pos < b.count else { return false }
        switch b[pos] {
        case UInt8(ascii: "{"):
            depth += 1
            guard depth <= 512 else { return false }
            pos += 1
            space()
            if pos < b.count, b[pos] == UInt8(ascii: "}") { pos += 1; depth -= 1; return true }
            while true {
                space()
                guard pos < b.count, b[pos] == UInt8(ascii: "\""), string() else { return false }
                space()
                guard pos < b.count, b[pos] == UInt8(ascii: ":") else { return false }
                pos += 1
                space()
                guard value() else { return false }
                space()
                guard pos < b.count else { return false }
                if b[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if b[pos] == UInt8(ascii: "}") { pos += 1; break }
                return false
            }
            depth -= 1
            return true
        case UInt8(ascii: "["):
            depth += 1
            guard depth <= 512 else { return false }
            pos += 1
            space()
            if pos < b.count, b[pos] == UInt8(ascii: "]") { pos += 1; depth -= 1; return true }
            while true {
                space()
                guard value() else { return false }
                space()
                guard pos < b.count else { return false }
                if b[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if b[pos] == UInt8(ascii: "]") { pos += 1; break }
                return false
            }
            depth -= 1
            return true
        case UInt8(ascii: "\""): return string()
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        case UInt8(ascii: "-"), 0x30...0x39: return number()
        default: return false
        }
    }

    mutating func literal(_ word: StaticString) -> Bool {
        let n = word.utf8CodeUnitCount
        guard pos + n <= b.count else { return false }
        let p = word.utf8Start
        for i in 0..<n where b[pos + i] != p[i] { return false }
        pos += n
        return true
    }

    mutating func number() -> Bool {
        if b[pos] == UInt8(ascii: "-") { pos += 1 }
        guard pos < b.count, b[pos] >= 0x30, b[pos] <= 0x39 else { return false }
        if b[pos] == 0x30 {
            pos += 1
            if pos < b.count, b[pos] >= 0x30, b[pos] <= 0x39 { return false }
        } else {
            while pos < b.count, b[pos] >= 0x30, b[pos] <= 0x39 { pos += 1 }
        }
        if pos < b.count, b[pos] == UInt8(ascii: ".") {
            pos += 1
            guard pos < b.count, b[pos] >= 0x30, b[pos] <= 0x39 else { return false }
            while pos < b.count, b[pos] >= 0x30, b[pos] <= 0x39 { pos += 1 }
        }
        if pos < b.count, b[pos] == UInt8(ascii: "e") || b[pos] == UInt8(ascii: "E") {
            pos += 1
            if pos < b.count, b[pos] == UInt8(ascii: "+") || b[pos] == UInt8(ascii: "-") { pos += 1 }
            guard pos < b.count, b[pos] >= 0x30, b[pos] <= 0x39 else { return false }
            while pos < b.count, b[pos] >= 0x30, b[pos] <= 0x39 { pos += 1 }
        }
        return true
    }

    /// A string starting at the quote; escapes and UTF-8 validated (surrogate escapes paired);
    /// `pos` after the closing quote.
    mutating func string() -> Bool {
        pos += 1
        while pos < b.count {
            pos = JSONStringBytes.plainEnd(b, from: pos)
            guard pos < b.count else { return false }
            let c = b[pos]
            if c == UInt8(ascii: "\"") { pos += 1; return true }
            if c < 0x20 { return false }
            if c == UInt8(ascii: "\\") {
                pos += 1
                guard pos < b.count else { return false }
                switch b[pos] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    pos += 1
                case UInt8(ascii: "u"):
                    pos += 1
                    guard let unit = hex4() else { return false }
                    if (0xD800...0xDBFF).contains(unit) {
                        guard pos + 1 < b.count, b[pos] == UInt8(ascii: "\\"), b[pos + 1] == UInt8(ascii: "u") else { return false }
                        pos += 2
                        guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return false }
                    } else if (0xDC00...0xDFFF).contains(unit) {
                        return false
                    }
                default: return false
                }
                continue
            }
            if c < 0x80 { pos += 1; continue }
            guard utf8Sequence() else { return false }
        }
        return false
    }

    mutating func hex4() -> UInt32? {
        guard pos + 4 <= b.count else { return nil }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = b[pos]
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x61...0x66: d = UInt32(c - 0x57)
            case 0x41...0x46: d = UInt32(c - 0x37)
            default: return nil
            }
            v = v << 4 | d
            pos += 1
        }
        return v
    }

    /// One well-formed UTF-8 sequence of two to four bytes (no overlongs, no surrogates, ≤ U+10FFFF).
    mutating func utf8Sequence() -> Bool {
        let c = b[pos]
        func cont(_ i: Int, _ lo: UInt8 = 0x80, _ hi: UInt8 = 0xBF) -> Bool { i < b.count && b[i] >= lo && b[i] <= hi }
        switch c {
        case 0xC2...0xDF:
            guard cont(pos + 1) else { return false }
            pos += 2
        case 0xE0:
            guard cont(pos + 1, 0xA0), cont(pos + 2) else { return false }
            pos += 3
        case 0xE1...0xEC, 0xEE...0xEF:
            guard cont(pos + 1), cont(pos + 2) else { return false }
            pos += 3
        case 0xED:
            guard cont(pos + 1, 0x80, 0x9F), cont(pos + 2) else { return false }
            pos += 3
        case 0xF0:
            guard cont(pos + 1, 0x90), cont(pos + 2), cont(pos + 3) else { return false }
            pos += 4
        case 0xF1...0xF3:
            guard cont(pos + 1), cont(pos + 2), cont(pos + 3) else { return false }
            pos += 4
        case 0xF4:
            guard cont(pos + 1, 0x80, 0x8F), cont(pos + 2), cont(pos + 3) else { return false }
            pos += 4
        default:
            return false
        }
        return true
    }
}
