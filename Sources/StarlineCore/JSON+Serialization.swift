// Writing a value as JSON text, compact or pretty, escaping what JavaScript cannot take raw.

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
                i = JSONStringBytes.plainEnd(bytes, from: i)
                guard i < n else { break }
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
                case 0xC2, 0xD8, 0xE2, 0xEF:
                    // U+2028 / U+2029 (valid JSON, but line terminators in JavaScript), and the characters that are
                    // hidden or act on a terminal (TerminalText: C1 controls, bidi controls, zero-width): the same
                    // value for a parser, a visible escape on a terminal.
                    if let (scalar, length) = JSON.decodeScalar(bytes, i), TerminalText.isHidden(scalar) {
                        escape = JSON.unicodeEscape(scalar)
                        width = length
                    }
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

    /// The scalar of the two- or three-byte UTF-8 sequence at `i` (the string is valid UTF-8), and its length.
    private static func decodeScalar(_ bytes: UnsafeBufferPointer<UInt8>, _ i: Int) -> (UInt32, Int)? {
        let b = bytes[i]
        if b < 0xE0 {
            guard i + 1 < bytes.count else { return nil }
            return (UInt32(b & 0x1F) << 6 | UInt32(bytes[i + 1] & 0x3F), 2)
        }
        guard b < 0xF0, i + 2 < bytes.count else { return nil }
        return (UInt32(b & 0x0F) << 12 | UInt32(bytes[i + 1] & 0x3F) << 6 | UInt32(bytes[i + 2] & 0x3F), 3)
    }

    private static func unicodeEscape(_ v: UInt32) -> [UInt8] {
        let hex = Array("0123456789abcdef".utf8)
        return [0x5C, 0x75, hex[Int(v >> 12 & 15)], hex[Int(v >> 8 & 15)], hex[Int(v >> 4 & 15)], hex[Int(v & 15)]]
    }
}
