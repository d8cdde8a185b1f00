import StarlineCore

/// Reads values of a D-Bus message by signature, in the message's byte order ('l' or 'B'). Every length is
/// checked against the buffer and every container nests at most 32 deep, so a hostile peer gets a
/// DATA_ERROR, never a crash or an unbounded allocation.
struct DBusReader {
    let bytes: [UInt8]
    let bigEndian: Bool
    var offset = 0
    private var depth = 0

    init(_ bytes: [UInt8]) throws(StarlineError) {
        guard let order = bytes.first, order == UInt8(ascii: "l") || order == UInt8(ascii: "B") else {
            throw Self.malformed("unknown byte order")
        }
        self.bytes = bytes
        bigEndian = order == UInt8(ascii: "B")
    }

    static func malformed(_ what: String) -> StarlineError {
        StarlineError(.data, "unexpected message from the Secret Service: \(what)")
    }

    static func alignment(of type: String) -> Int {
        switch type.utf8.first {
        case UInt8(ascii: "y"), UInt8(ascii: "g"), UInt8(ascii: "v"): 1
        case UInt8(ascii: "n"), UInt8(ascii: "q"): 2
        case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("), UInt8(ascii: "{"): 8
        default: 4
        }
    }

    mutating func align(_ n: Int) { offset = (offset + n - 1) / n * n }

    mutating func take(_ count: Int) throws(StarlineError) -> ArraySlice<UInt8> {
        guard count >= 0, offset <= bytes.count, count <= bytes.count - offset else { throw Self.malformed("a value runs past the end") }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func uint16() throws(StarlineError) -> UInt16 {
        align(2)
        let b = try take(2)
        let v = b.reversed().reduce(UInt16(0)) { $0 << 8 | UInt16($1) }  // little-endian
        return bigEndian ? v.byteSwapped : v
    }

    mutating func uint32() throws(StarlineError) -> UInt32 {
        align(4)
        let b = try take(4)
        let v = b.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }  // little-endian
        return bigEndian ? v.byteSwapped : v
    }

    mutating func uint64() throws(StarlineError) -> UInt64 {
        align(8)
        let b = try take(8)
        let v = b.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return bigEndian ? v.byteSwapped : v
    }

    mutating func text(_ length: Int) throws(StarlineError) -> String {
        let utf8 = try take(length)
        guard try take(1).first == 0, let s = String(validating: Array(utf8), as: UTF8.self) else { throw Self.malformed("a string that is not UTF-8 or not terminated") }
        return s
    }

    mutating func read(_ type: String) throws(StarlineError) -> DBusValue {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 32 else { throw Self.malformed("values nested too deeply") }
        let t = Array(type.utf8)
        switch t.first {
        case UInt8(ascii: "y"): return .byte(try take(1).first!)
        case UInt8(ascii: "b"): return .boolean(try uint32() != 0)
        case UInt8(ascii: "n"): return .int32(Int32(Int16(bitPattern: try uint16())))
        case UInt8(ascii: "q"): return .uint32(UInt32(try uint16()))
        case UInt8(ascii: "i"): return .int32(Int32(bitPattern: try uint32()))
        case UInt8(ascii: "u"), UInt8(ascii: "h"): return .uint32(try uint32())
        case UInt8(ascii: "x"): return .int64(Int64(bitPattern: try uint64()))
        case UInt8(ascii: "t"), UInt8(ascii: "d"): return .uint64(try uint64())
        case UInt8(ascii: "s"): return .string(try text(Int(try uint32())))
        case UInt8(ascii: "o"): return .objectPath(try text(Int(try uint32())))
        case UInt8(ascii: "g"): return .signature(try text(Int(try take(1).first!)))
        case UInt8(ascii: "v"):
            let signature = try text(Int(try take(1).first!))
            guard try DBusSignature.split(signature).count == 1 else { throw Self.malformed("a variant of more than one type") }
            return .variant(signature: signature, try read(signature))
        case UInt8(ascii: "a"):
            let element = String(type.dropFirst())
            let length = Int(try uint32())
            // "The maximum length of an array is 2 to the 26th power (67108864) bytes."
            guard length <= 1 << 26 else { throw Self.malformed("an array longer than D-Bus allows") }
            align(Self.alignment(of: element))
            if element == "y" { return .bytes(Array(try take(length))) }
            let end = offset + length
            guard end <= bytes.count else { throw Self.malformed("an array runs past the end") }
            var items: [DBusValue] = []
            while offset < end { items.append(try read(element)) }
            guard offset == end else { throw Self.malformed("an array's elements overrun its length") }
            return .array(elementSignature: element, items)
        case UInt8(ascii: "("):
            align(8)
            var fields: [DBusValue] = []
            for field in try DBusSignature.split(String(type.dropFirst().dropLast())) { fields.append(try read(field)) }
            return .structure(fields)
        case UInt8(ascii: "{"):
            align(8)
            let parts = try DBusSignature.split(String(type.dropFirst().dropLast()))
            guard parts.count == 2 else { throw Self.malformed("a dictionary entry without a key and a value") }
            return .dictEntry(try read(parts[0]), try read(parts[1]))
        default:
            throw Self.malformed("the type '\(type)' is not supported")
        }
    }
}
