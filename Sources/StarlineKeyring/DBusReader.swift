import StarlineCore

/// Reads values of a D-Bus message by signature, in the message's byte order ('l' or 'B').
///
/// A hostile peer gets a DATA_ERROR, never a crash, a spin or an unbounded allocation: every length is
/// checked against the buffer; every loop consumes bytes or fails (an array element that reads nothing is
/// an error, and the signatures that could make one — `()` — are refused by `DBusSignature`); containers
/// nest at most 64 deep across variants; and one reader decodes at most `DBusLimits.valuesPerMessage` values.
/// So the work is bounded by the message's bytes (at most 128 MiB, checked when it is framed) and the budget.
struct DBusReader {
    let bytes: [UInt8]
    let bigEndian: Bool
    private(set) var offset = 0
    private var containers = 0
    private var values = 0

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

    /// Moves to `offset` (forward only: the reader never goes back, so it examines each byte at most once).
    mutating func seek(to position: Int) throws(StarlineError) {
        guard position >= offset, position <= bytes.count else { throw Self.malformed("a value runs past the end") }
        offset = position
    }

    /// Skips the padding to the next multiple of `n`, which must be inside the message.
    mutating func align(_ n: Int) throws(StarlineError) {
        let aligned = (offset + n - 1) / n * n
        guard aligned <= bytes.count else { throw Self.malformed("a value runs past the end") }
        offset = aligned
    }

    mutating func take(_ count: Int) throws(StarlineError) -> ArraySlice<UInt8> {
        guard count >= 0, offset <= bytes.count, count <= bytes.count - offset else { throw Self.malformed("a value runs past the end") }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func uint16() throws(StarlineError) -> UInt16 {
        try align(2)
        let b = try take(2)
        let v = b.reversed().reduce(UInt16(0)) { $0 << 8 | UInt16($1) }  // little-endian
        return bigEndian ? v.byteSwapped : v
    }

    mutating func uint32() throws(StarlineError) -> UInt32 {
        try align(4)
        let b = try take(4)
        let v = b.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }  // little-endian
        return bigEndian ? v.byteSwapped : v
    }

    mutating func uint64() throws(StarlineError) -> UInt64 {
        try align(8)
        let b = try take(8)
        let v = b.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return bigEndian ? v.byteSwapped : v
    }

    /// A string of `length` bytes and its terminating NUL: "must be valid UTF-8 ... must not contain
    /// embedded nul bytes".
    mutating func text(_ length: Int) throws(StarlineError) -> String {
        let utf8 = try take(length)
        guard try take(1).first == 0, !utf8.contains(0), let s = String(validating: Array(utf8), as: UTF8.self) else {
            throw Self.malformed("a string that is not UTF-8 or not terminated")
        }
        return s
    }

    /// A signature value: one length byte, the codes and a NUL; it must itself be a valid signature.
    mutating func signature() throws(StarlineError) -> (text: String, types: [String]) {
        let text = try self.text(Int(try take(1).first!))
        return (text, try DBusSignature.split(text))
    }

    /// One value of the complete type `type` (a type `DBusSignature.split` returned).
    mutating func read(_ type: String) throws(StarlineError) -> DBusValue {
        values += 1
        guard values <= DBusLimits.valuesPerMessage else {
            throw Self.malformed("more than \(DBusLimits.valuesPerMessage) values in one message")
        }
        let t = Array(type.utf8)
        switch t.first {
        case UInt8(ascii: "y"): return .byte(try take(1).first!)
        case UInt8(ascii: "b"):
            // "Only 0 and 1 are valid values."
            let value = try uint32()
            guard value <= 1 else { throw Self.malformed("a boolean that is neither 0 nor 1") }
            return .boolean(value == 1)
        case UInt8(ascii: "n"): return .int32(Int32(Int16(bitPattern: try uint16())))
        case UInt8(ascii: "q"): return .uint32(UInt32(try uint16()))
        case UInt8(ascii: "i"): return .int32(Int32(bitPattern: try uint32()))
        case UInt8(ascii: "u"), UInt8(ascii: "h"): return .uint32(try uint32())
        case UInt8(ascii: "x"): return .int64(Int64(bitPattern: try uint64()))
        case UInt8(ascii: "t"), UInt8(ascii: "d"): return .uint64(try uint64())
        case UInt8(ascii: "s"): return .string(try text(Int(try uint32())))
        case UInt8(ascii: "o"): return .objectPath(try text(Int(try uint32())))
        case UInt8(ascii: "g"): return .signature(try signature().text)
        case UInt8(ascii: "v"):
            let (signature, types) = try self.signature()
            guard types.count == 1 else { throw Self.malformed("a variant of other than one type") }
            return .variant(signature: signature, try contained(types[0]))
        case UInt8(ascii: "a"):
            let element = String(type.dropFirst())
            let length = Int(try uint32())
            guard length <= DBusLimits.arrayBytes else { throw Self.malformed("an array longer than D-Bus allows") }
            // The length excludes the padding before the first element.
            try align(Self.alignment(of: element))
            if element == "y" { return .bytes(Array(try take(length))) }
            guard length <= bytes.count - offset else { throw Self.malformed("an array runs past the end") }
            let end = offset + length
            var items: [DBusValue] = []
            while offset < end {
                let before = offset
                items.append(try contained(element))
                // Every element occupies bytes; one that read none would repeat forever.
                guard offset > before else { throw Self.malformed("an array element of no bytes") }
            }
            guard offset == end else { throw Self.malformed("an array's elements overrun its length") }
            return .array(elementSignature: element, items)
        case UInt8(ascii: "("):
            try align(8)
            let fields = try DBusSignature.split(String(type.dropFirst().dropLast()))
            guard !fields.isEmpty else { throw Self.malformed("an empty structure '()', which D-Bus forbids") }
            var members: [DBusValue] = []
            for field in fields { members.append(try contained(field)) }
            return .structure(members)
        case UInt8(ascii: "{"):
            try align(8)
            let parts = try DBusSignature.split(String(type.dropFirst().dropLast()))
            guard parts.count == 2 else { throw Self.malformed("a dictionary entry without a key and a value") }
            return .dictEntry(try contained(parts[0]), try contained(parts[1]))
        default:
            throw Self.malformed("the type '\(type.prefix(40))' is not supported")
        }
    }

    /// A value inside a container: one level deeper, at most `DBusLimits.containerDepth`.
    private mutating func contained(_ type: String) throws(StarlineError) -> DBusValue {
        containers += 1
        defer { containers -= 1 }
        guard containers <= DBusLimits.containerDepth else { throw Self.malformed("values nested more than 64 deep") }
        return try read(type)
    }
}
