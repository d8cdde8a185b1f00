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
    /// The unique name of the connection that sent it, which the bus sets ("the message bus ... will
    /// always set the SENDER field to the unique name of the sending connection", so it cannot be forged).
    var sender: String?
    var signature: String
    var body: [DBusValue]

    /// A method call ("The NO_REPLY_EXPECTED and NO_AUTO_START flags" are left clear: the bus may start the
    /// Secret Service on demand, as libsecret lets it).
    static func call(
        serial: UInt32, destination: String, path: String, interface: String, member: String,
        signature: String = "", body: [DBusValue] = []
    ) -> DBusMessage {
        DBusMessage(
            kind: .methodCall, serial: serial, path: path, interface: interface, member: member, destination: destination,
            errorName: nil, replySerial: nil, signature: signature, body: body)
    }

    /// A method return or an error answering `call` (what a bus or a service sends).
    static func reply(
        to call: DBusMessage, serial: UInt32, sender: String?, errorName: String? = nil,
        signature: String = "", body: [DBusValue] = []
    ) -> DBusMessage {
        DBusMessage(
            kind: errorName == nil ? .methodReturn : .error, serial: serial, destination: call.sender, errorName: errorName,
            replySerial: call.serial, sender: sender, signature: signature, body: body)
    }

    /// The message in little-endian wire format.
    func encoded() throws(StarlineError) -> [UInt8] {
        var body = DBusWriter()
        for (value, type) in zip(self.body, try DBusSignature.split(signature)) { try body.write(value, type) }
        return try encoded(body: body.bytes)
    }

    /// The header (fields as they are, `signature` unchecked) followed by `body`, already marshalled.
    func encoded(body: [UInt8]) throws(StarlineError) -> [UInt8] {
        var header = DBusWriter()
        header.bytes = [UInt8(ascii: "l"), kind.rawValue, 0, 1]
        header.uint32(UInt32(body.count))
        header.uint32(serial)
        var fields: [DBusValue] = []
        func field(_ code: UInt8, _ signature: String, _ value: DBusValue?) {
            if let value { fields.append(.structure([.byte(code), .variant(signature: signature, value)])) }
        }
        field(1, "o", path.map(DBusValue.objectPath))
        field(2, "s", interface.map(DBusValue.string))
        field(3, "s", member.map(DBusValue.string))
        field(4, "s", errorName.map(DBusValue.string))
        field(5, "u", replySerial.map(DBusValue.uint32))
        field(6, "s", destination.map(DBusValue.string))
        field(7, "s", sender.map(DBusValue.string))
        if !signature.isEmpty { field(8, "g", .signature(signature)) }
        try header.write(.array(elementSignature: "(yv)", fields), "a(yv)")
        header.align(8)
        return header.bytes + body
    }

    /// The length of the whole message that starts with this 16-byte fixed header (the byte order, type,
    /// flags, version, body length, serial, and the header fields' array length): what a connection reads
    /// before decoding. DATA_ERROR beyond the specification's limits, so nothing larger is ever buffered.
    static func frameLength(_ fixed: [UInt8]) throws(StarlineError) -> Int {
        guard fixed.count >= 16 else { throw DBusReader.malformed("a truncated message header") }
        var header = try DBusReader(Array(fixed.prefix(16)))
        try header.seek(to: 4)
        let bodyLength = Int(try header.uint32())
        try header.seek(to: 12)
        let fieldsLength = Int(try header.uint32())
        guard fieldsLength <= DBusLimits.arrayBytes, bodyLength <= DBusLimits.messageBytes else {
            throw DBusReader.malformed("a message longer than D-Bus allows")
        }
        let total = (16 + fieldsLength + 7) / 8 * 8 + bodyLength
        guard total <= DBusLimits.messageBytes else { throw DBusReader.malformed("a message longer than D-Bus allows") }
        return total
    }

    /// The type each header field must have ("Header Fields"); a field of another type makes the message
    /// invalid. Unknown fields "must be ignored".
    private static let fieldTypes: [UInt8: String] = [1: "o", 2: "s", 3: "s", 4: "s", 5: "u", 6: "s", 7: "s", 8: "g", 9: "u"]

    /// Parses one whole message (`bytes` holds exactly it); DATA_ERROR for anything malformed. The body is
    /// parsed only when `readingBody` says so after the header: a message the caller will ignore costs no
    /// more than its header.
    static func decode(_ bytes: [UInt8], readingBody: (DBusMessage) -> Bool = { _ in true }) throws(StarlineError) -> DBusMessage {
        var reader = try DBusReader(bytes)
        guard bytes.count >= 16, let kind = Kind(rawValue: bytes[1]) else { throw DBusReader.malformed("unknown message type") }
        guard bytes[3] == 1 else { throw DBusReader.malformed("major protocol version \(bytes[3]), not 1") }
        try reader.seek(to: 4)
        let bodyLength = Int(try reader.uint32())
        let serial = try reader.uint32()
        guard serial != 0 else { throw DBusReader.malformed("a message with serial 0") }
        var message = DBusMessage(kind: kind, serial: serial, signature: "", body: [])
        for field in try reader.read("a(yv)").elements ?? [] {
            guard case .structure(let pair) = field, pair.count == 2, case .byte(let code) = pair[0],
                case .variant(let signature, let value) = pair[1]
            else { continue }
            guard let expected = fieldTypes[code] else { continue }
            guard signature == expected else {
                throw DBusReader.malformed("header field \(code) of type '\(signature)', not '\(expected)'")
            }
            switch code {
            case 1: message.path = value.string
            case 2: message.interface = value.string
            case 3: message.member = value.string
            case 4: message.errorName = value.string
            case 5: if case .uint32(let s) = value { message.replySerial = s }
            case 6: message.destination = value.string
            case 7: message.sender = value.string
            case 8: message.signature = value.string ?? ""
            default: break
            }
        }
        try reader.align(8)
        guard bodyLength <= bytes.count - reader.offset, reader.offset + bodyLength == bytes.count else {
            throw DBusReader.malformed("the body length does not match the message")
        }
        guard readingBody(message) else { return message }
        for type in try DBusSignature.split(message.signature) { message.body.append(try reader.read(type)) }
        guard reader.offset == bytes.count else { throw DBusReader.malformed("the body holds more than its signature says") }
        return message
    }

    private init(
        kind: Kind, serial: UInt32, path: String? = nil, interface: String? = nil, member: String? = nil,
        destination: String? = nil, errorName: String? = nil, replySerial: UInt32? = nil, sender: String? = nil,
        signature: String, body: [DBusValue]
    ) {
        self.kind = kind
        self.serial = serial
        self.path = path
        self.interface = interface
        self.member = member
        self.destination = destination
        self.errorName = errorName
        self.replySerial = replySerial
        self.sender = sender
        self.signature = signature
        self.body = body
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
