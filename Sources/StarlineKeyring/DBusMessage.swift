import StarlineCore

/// A value of the D-Bus wire format (the D-Bus Specification, "Type System"), for the few messages the
/// keyring's read path exchanges. `bytes` is an `ay`, kept as one array (a secret travels as one).
indirect enum DBusValue: Equatable {
    case byte(UInt8), boolean(Bool), int32(Int32), uint32(UInt32), int64(Int64), uint64(UInt64)
    case string(String), objectPath(String), signature(String)
    case array(elementSignature: String, [DBusValue])
    case bytes([UInt8])
    case structure([DBusValue])
    case dictEntry(DBusValue, DBusValue)
    case variant(signature: String, DBusValue)

    var string: String? {
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s): s
        default: nil
        }
    }

    var elements: [DBusValue]? {
        switch self {
        case .array(_, let items), .structure(let items): items
        default: nil
        }
    }
}

/// One D-Bus message: the header's fixed part and fields, and the body's values.
struct DBusMessage {
    enum Kind: UInt8 { case methodCall = 1, methodReturn = 2, error = 3, signal = 4 }

    var kind: Kind
    var serial: UInt32
    var path: String?
    var interface: String?
    var member: String?
    var destination: String?
    var errorName: String?
    var replySerial: UInt32?
    var signature: String
    var body: [DBusValue]

    /// A method call ("The NO_REPLY_EXPECTED and NO_AUTO_START flags" are left clear: the bus may start the
    /// Secret Service on demand, as libsecret lets it).
    static func call(serial: UInt32, destination: String, path: String, interface: String, member: String,
                     signature: String = "", body: [DBusValue] = []) -> DBusMessage {
        DBusMessage(kind: .methodCall, serial: serial, path: path, interface: interface, member: member, destination: destination,
                    errorName: nil, replySerial: nil, signature: signature, body: body)
    }

    /// The message in little-endian wire format.
    func encoded() throws(StarlineError) -> [UInt8] {
        var body = DBusWriter()
        for (value, type) in zip(self.body, try DBusSignature.split(signature)) { try body.write(value, type) }
        var header = DBusWriter()
        header.bytes = [UInt8(ascii: "l"), kind.rawValue, 0, 1]
        header.uint32(UInt32(body.bytes.count))
        header.uint32(serial)
        var fields: [DBusValue] = []
        func field(_ code: UInt8, _ signature: String, _ value: DBusValue?) {
            if let value { fields.append(.structure([.byte(code), .variant(signature: signature, value)])) }
        }
        field(1, "o", path.map(DBusValue.objectPath))
        field(2, "s", interface.map(DBusValue.string))
        field(3, "s", member.map(DBusValue.string))
        field(6, "s", destination.map(DBusValue.string))
        if !signature.isEmpty { field(8, "g", .signature(signature)) }
        try header.write(.array(elementSignature: "(yv)", fields), "a(yv)")
        header.align(8)
        return header.bytes + body.bytes
    }

    /// Parses one whole message (`bytes` holds exactly it); DATA_ERROR for anything malformed.
    static func decode(_ bytes: [UInt8]) throws(StarlineError) -> DBusMessage {
        var reader = try DBusReader(bytes)
        guard bytes.count >= 16, let kind = Kind(rawValue: bytes[1]) else { throw DBusReader.malformed("unknown message type") }
        reader.offset = 4
        let bodyLength = Int(try reader.uint32())
        let serial = try reader.uint32()
        var message = DBusMessage(kind: kind, serial: serial, signature: "", body: [])
        for field in try reader.read("a(yv)").elements ?? [] {
            guard case .structure(let pair) = field, pair.count == 2, case .byte(let code) = pair[0],
                  case .variant(_, let value) = pair[1] else { continue }
            switch code {
            case 1: message.path = value.string
            case 2: message.interface = value.string
            case 3: message.member = value.string
            case 4: message.errorName = value.string
            case 5: if case .uint32(let s) = value { message.replySerial = s }
            case 6: message.destination = value.string
            case 8: message.signature = value.string ?? ""
            default: break
            }
        }
        reader.align(8)
        guard reader.offset + bodyLength == bytes.count else { throw DBusReader.malformed("the body length does not match the message") }
        for type in try DBusSignature.split(message.signature) { message.body.append(try reader.read(type)) }
        return message
    }

    private init(kind: Kind, serial: UInt32, path: String? = nil, interface: String? = nil, member: String? = nil,
                 destination: String? = nil, errorName: String? = nil, replySerial: UInt32? = nil, signature: String, body: [DBusValue]) {
        self.kind = kind
        self.serial = serial
        self.path = path
        self.interface = interface
        self.member = member
        self.destination = destination
        self.errorName = errorName
        self.replySerial = replySerial
        self.signature = signature
        self.body = body
    }
}

/// Signatures: splitting one into its complete types ("a{ss}ao" → ["a{ss}", "ao"]).
enum DBusSignature {
    static func split(_ signature: String) throws(StarlineError) -> [String] {
        let scalars = Array(signature.utf8)
        var types: [String] = []
        var index = 0
        while index < scalars.count {
            let end = try completeType(scalars, from: index)
            types.append(String(decoding: scalars[index..<end], as: UTF8.self))
            index = end
        }
        return types
    }

    /// The end (exclusive) of the complete type starting at `start`.
    static func completeType(_ s: [UInt8], from start: Int, depth: Int = 0) throws(StarlineError) -> Int {
        guard start < s.count, depth < 32 else { throw DBusReader.malformed("a truncated or too deeply nested signature") }
        switch s[start] {
        case UInt8(ascii: "a"): return try completeType(s, from: start + 1, depth: depth + 1)
        case UInt8(ascii: "("), UInt8(ascii: "{"):
            let close = s[start] == UInt8(ascii: "(") ? UInt8(ascii: ")") : UInt8(ascii: "}")
            var index = start + 1
            while index < s.count, s[index] != close { index = try completeType(s, from: index, depth: depth + 1) }
            guard index < s.count else { throw DBusReader.malformed("an unclosed structure in a signature") }
            return index + 1
        default: return start + 1
        }
    }
}

/// Writes values in little-endian wire format. Offsets are from the start of the buffer, which is the start
/// of the message (the header is padded to 8, so the body's alignment is the same either way).
struct DBusWriter {
    var bytes: [UInt8] = []

    mutating func align(_ n: Int) { while bytes.count % n != 0 { bytes.append(0) } }
    mutating func uint32(_ v: UInt32) { align(4); withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }

    mutating func write(_ value: DBusValue, _ type: String) throws(StarlineError) {
        let t = Array(type.utf8)
        switch (t.first, value) {
        case (UInt8(ascii: "y"), .byte(let b)): bytes.append(b)
        case (UInt8(ascii: "u"), .uint32(let v)): uint32(v)
        case (UInt8(ascii: "b"), .boolean(let v)): uint32(v ? 1 : 0)
        case (UInt8(ascii: "s"), .string(let s)), (UInt8(ascii: "o"), .objectPath(let s)):
            let utf8 = Array(s.utf8)
            uint32(UInt32(utf8.count))
            bytes += utf8 + [0]
        case (UInt8(ascii: "g"), .signature(let s)):
            let utf8 = Array(s.utf8)
            guard utf8.count < 256 else { throw DBusReader.malformed("a signature longer than 255 bytes") }
            bytes += [UInt8(utf8.count)] + utf8 + [0]
        case (UInt8(ascii: "v"), .variant(let signature, let inner)):
            try write(.signature(signature), "g")
            try write(inner, signature)
        case (UInt8(ascii: "a"), .bytes(let data)) where type == "ay":
            uint32(UInt32(data.count))
            bytes += data
        case (UInt8(ascii: "a"), .array(_, let items)):
            let element = String(type.dropFirst())
            uint32(0)
            let lengthAt = bytes.count - 4
            align(DBusReader.alignment(of: element))
            let start = bytes.count
            for item in items { try write(item, element) }
            let length = UInt32(bytes.count - start)
            withUnsafeBytes(of: length.littleEndian) { for (i, b) in $0.enumerated() { bytes[lengthAt + i] = b } }
        case (UInt8(ascii: "("), .structure(let items)), (UInt8(ascii: "{"), .structure(let items)):
            align(8)
            let inner = String(type.dropFirst().dropLast())
            for (item, itemType) in zip(items, try DBusSignature.split(inner)) { try write(item, itemType) }
        case (UInt8(ascii: "{"), .dictEntry(let key, let val)):
            try write(.structure([key, val]), type)
        default:
            throw StarlineError(.internalError, "cannot write \(value) as D-Bus type \(type)")
        }
    }
}
