import StarlineCore

/// The D-Bus Specification's limits on what a peer may send, and this reader's own budget. Every loop and
/// every recursion of the reader is bounded by one of them, so a hostile or broken bus costs at most one
/// message's bytes and a bounded amount of work before it gets a DATA_ERROR.
enum DBusLimits {
    /// "The maximum length of a message, including header, header alignment padding, and body is 2 to the
    /// 27th power or 134217728."
    static let messageBytes = 1 << 27
    /// "The maximum length of an array is 2 to the 26th power (67108864) bytes."
    static let arrayBytes = 1 << 26
    /// "The maximum length of a signature is 255."
    static let signatureBytes = 255
    /// "Arrays have a maximum depth of 32 array type codes"; "Structs have a maximum depth of 32 open
    /// parentheses" (dict entries count as structs) — within one signature.
    static let arrayDepth = 32
    static let structDepth = 32
    /// "The maximum depth of container type nesting is therefore 64": across variants too, whose signatures
    /// travel in the data and would otherwise nest without limit (libdbus and GLib count the same way).
    static let containerDepth = 64
    /// Values decoded from one message (header fields and body). The Secret Service replies this reader
    /// waits for hold a handful (one item path, one secret); without a budget, 128 MiB of one-byte elements
    /// (`ay` aside, which is kept as one array) would become tens of millions of values and gigabytes.
    static let valuesPerMessage = 1 << 16
    /// Messages that are not the awaited reply (signals, replies from others, unknown types) tolerated while
    /// waiting for one reply: a peer that floods us makes the read fail instead of keeping it busy.
    static let ignoredMessagesPerCall = 64
}

/// Signatures: validating one and splitting it into its complete types ("a{ss}ao" → ["a{ss}", "ao"]), as
/// the specification's "Valid Signatures" section requires — only known type codes, no empty structure,
/// dictionary entries only as array elements with a basic key, the nesting limits, at most 255 bytes.
enum DBusSignature {
    static func split(_ signature: String) throws(StarlineError) -> [String] {
        let codes = Array(signature.utf8)
        guard codes.count <= DBusLimits.signatureBytes else { throw DBusReader.malformed("a signature longer than 255 bytes") }
        var types: [String] = []
        var index = 0
        while index < codes.count {
            let end = try completeType(codes, from: index)
            // completeType consumes at least one code or throws; checked so that no loop here can spin.
            guard end > index else { throw DBusReader.malformed("a signature that does not advance") }
            types.append(String(decoding: codes[index..<end], as: UTF8.self))
            index = end
        }
        return types
    }

    /// The type codes of the basic types: fixed-size numbers, strings, object paths, signatures, fds.
    static func isBasic(_ code: UInt8) -> Bool {
        switch code {
        case UInt8(ascii: "y"), UInt8(ascii: "b"), UInt8(ascii: "n"), UInt8(ascii: "q"), UInt8(ascii: "i"), UInt8(ascii: "u"),
            UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "h"), UInt8(ascii: "s"), UInt8(ascii: "o"),
            UInt8(ascii: "g"):
            true
        default: false
        }
    }

    /// The end (exclusive, always > `start`) of the complete type starting at `start`. Recursion is bounded
    /// by the two depth limits (and the signature's 255 bytes).
    static func completeType(
        _ s: [UInt8], from start: Int, arrays: Int = 0, structs: Int = 0,
        arrayElement: Bool = false
    ) throws(StarlineError) -> Int {
        guard start < s.count else { throw DBusReader.malformed("a truncated signature") }
        let code = s[start]
        if isBasic(code) || code == UInt8(ascii: "v") { return start + 1 }
        switch code {
        case UInt8(ascii: "a"):
            guard arrays < DBusLimits.arrayDepth else { throw DBusReader.malformed("arrays nested more than 32 deep in a signature") }
            return try completeType(s, from: start + 1, arrays: arrays + 1, structs: structs, arrayElement: true)
        case UInt8(ascii: "("):
            guard structs < DBusLimits.structDepth else { throw DBusReader.malformed("structures nested more than 32 deep in a signature") }
            var index = start + 1
            var fields = 0
            while index < s.count, s[index] != UInt8(ascii: ")") {
                index = try completeType(s, from: index, arrays: arrays, structs: structs + 1)
                fields += 1
            }
            guard index < s.count else { throw DBusReader.malformed("an unclosed structure in a signature") }
            // "Empty structures are not allowed; there must be at least one type code between the parentheses."
            // An empty structure has no bytes, so an array of them would never advance.
            guard fields > 0 else { throw DBusReader.malformed("an empty structure '()', which D-Bus forbids") }
            return index + 1
        case UInt8(ascii: "{"):
            // "A DICT_ENTRY ... may only appear as the element type of an array"; "The first single complete
            // type (the "key") must be a basic type rather than a container type."
            guard arrayElement else { throw DBusReader.malformed("a dictionary entry outside an array") }
            guard structs < DBusLimits.structDepth else { throw DBusReader.malformed("structures nested more than 32 deep in a signature") }
            guard start + 1 < s.count, isBasic(s[start + 1]) else {
                throw DBusReader.malformed("a dictionary entry whose key is not a basic type")
            }
            let valueEnd = try completeType(s, from: start + 2, arrays: arrays, structs: structs + 1)
            guard valueEnd < s.count, s[valueEnd] == UInt8(ascii: "}") else {
                throw DBusReader.malformed("a dictionary entry without exactly a key and a value")
            }
            return valueEnd + 1
        default:
            throw DBusReader.malformed("the type code '\(Unicode.Scalar(code))' in a signature")
        }
    }
}
