import StarlineCore

/// Serialises `JSON` straight into bytes, in exactly the layout of `JSON.serialized` (compact, or
/// pretty with two-space indentation), for the big documents of this tool: the whole workspace file
/// and listings of thousands of records. Building one large `String` by appending scalar views costs
/// time proportional to the square of the output size, which made rewriting a 10,000-task file take
/// minutes; this writer is linear.
struct JSONWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 64 * 1024) { bytes.reserveCapacity(capacity) }

    mutating func write(_ value: JSON, pretty: Bool, indent: Int = 0) {
        switch value {
        case .null: append("null")
        case .bool(let b): append(b ? "true" : "false")
        case .int(let i): append(String(i))
        case .double(let d):
            if d.isFinite {
                if d.rounded() == d && abs(d) < 1e15 { append(String(Int64(d))) } else { append("\(d)") }
            } else {
                append("null")
            }
        case .string(let s): writeString(s)
        case .array(let items):
            if items.isEmpty { append("[]"); return }
            bytes.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                if pretty { newline(indent + 1) }
                write(item, pretty: pretty, indent: indent + 1)
            }
            if pretty { newline(indent) }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            if members.isEmpty { append("{}"); return }
            bytes.append(UInt8(ascii: "{"))
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                if pretty { newline(indent + 1) }
                writeString(key)
                if pretty { append(": ") } else { bytes.append(UInt8(ascii: ":")) }
                write(value, pretty: pretty, indent: indent + 1)
            }
            if pretty { newline(indent) }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    mutating func newline(_ indent: Int) {
        bytes.append(0x0A)
        for _ in 0..<(indent * 2) { bytes.append(0x20) }
    }

    mutating func append(_ s: String) {
        var s = s
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// A JSON string with the escapes of `JSON.serialized`: quote, backslash, the C0 controls and DEL,
    /// and U+2028/U+2029 (so the output is also valid JavaScript).
    mutating func writeString(_ string: String) {
        var s = string
        bytes.append(UInt8(ascii: "\""))
        s.withUTF8 { utf8 in
            var plainStart = 0
            var i = 0
            let n = utf8.count
            while i < n {
                let b = utf8[i]
                var escape: StaticString? = nil
                var width = 1
                switch b {
                case UInt8(ascii: "\""): escape = "\\\""
                case UInt8(ascii: "\\"): escape = "\\\\"
                case 0x0A: escape = "\\n"
                case 0x0D: escape = "\\r"
                case 0x09: escape = "\\t"
                case 0x08: escape = "\\b"
                case 0x0C: escape = "\\f"
                case 0xE2 where i + 2 < n && utf8[i + 1] == 0x80 && (utf8[i + 2] == 0xA8 || utf8[i + 2] == 0xA9):
                    escape = utf8[i + 2] == 0xA8 ? "\\u2028" : "\\u2029"
                    width = 3
                case 0x00..<0x20, 0x7F:
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plainStart..<i]))
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                              hex[Int(b >> 4)], hex[Int(b & 0x0F)]])
                    i += 1
                    plainStart = i
                    continue
                default: break
                }
                if let escape {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plainStart..<i]))
                    escape.withUTF8Buffer { bytes.append(contentsOf: $0) }
                    i += width
                    plainStart = i
                } else {
                    i += 1
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plainStart..<n]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// One document followed by a newline.
    static func document(_ value: JSON, pretty: Bool) -> [UInt8] {
        var w = JSONWriter()
        w.write(value, pretty: pretty)
        w.bytes.append(0x0A)
        return w.bytes
    }
}
