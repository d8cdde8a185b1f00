import StarlineCore

/// One recipient stanza: "-> " and its space-separated arguments (the first names the recipient type),
/// then a base64 body wrapped at 64 columns.
struct AgeStanza {
    var arguments: [String]
    var body: [UInt8]

    var type: String { arguments[0] }
}

/// The textual header of an age v1 file, parsed strictly by the spec's ABNF:
///
///     header = v1-line 1*stanza end
///     v1-line = %s"age-encryption.org/v1" LF
///     end = "--- " 43base64char LF
///     stanza = arg-line *full-line final-line
///     arg-line = "-> " argument *(SP argument) LF
///     argument = 1*VCHAR
///     full-line = 64base64char LF
///     final-line = *63base64char LF
struct AgeHeader {
    static let versionLine = Array("age-encryption.org/v1".utf8)
    static let versionPrefix = Array("age-encryption.org/".utf8)
    /// Every line of the header is at most this long; the whole header at most `maximumSize`. Far above any
    /// real header (a post-quantum stanza's argument line is about 1.5 KiB), and a bound on what a damaged
    /// or hostile file can make us buffer before the MAC is checked.
    static let maximumLineLength = 64 * 1024
    static let maximumSize = 1024 * 1024
    static let columns = 64

    var stanzas: [AgeStanza]
    /// "The MAC is computed ... over the whole header up to and including the `---` mark (excluding the
    /// space following it)": the exact bytes read, kept for verification.
    var macInput: [UInt8]
    var mac: [UInt8]

    /// Reads the header from `input`, leaving it at the first byte of the payload (the nonce).
    static func read(from input: AgeInputBuffer) throws(StarlineError) -> AgeHeader {
        var macInput: [UInt8] = []
        func line(_ what: String) throws(StarlineError) -> [UInt8] {
            switch try input.readLine(maximumLength: maximumLineLength) {
            case .terminated(let bytes):
                macInput += bytes
                macInput.append(0x0A)
                guard macInput.count <= maximumSize else { throw .ageHeader("the header is larger than \(maximumSize) bytes") }
                return bytes
            case .unterminated: throw .ageHeader("the file ends inside the header (\(what) has no line feed)")
            case .endOfInput: throw .ageHeader(macInput.isEmpty ? "the file is empty" : "the file ends before the header's MAC line")
            case .tooLong: throw .ageHeader("a header line is longer than \(maximumLineLength) bytes")
            }
        }

        // "The version line always starts with "age-encryption.org/", is followed by an arbitrary version
        // string, and ends with a line feed"; "This document only specifies the v1 format."
        let version = try line("the version line")
        guard version == versionLine else {
            if version.starts(with: versionPrefix) {
                throw .ageHeader(
                    "unsupported format version \"\(printable(version.dropFirst(versionPrefix.count)))\" (only v1 is supported)")
            }
            throw .ageHeader("not an age file (the first line is not \"age-encryption.org/v1\")")
        }

        var stanzas: [AgeStanza] = []
        while true {
            let next = try line("a stanza")
            // "each section of the header can be parsed by looking at its first three characters"
            if next.starts(with: Array("---".utf8)) {
                macInput.removeLast(next.count - 3 + 1)  // up to and including "---", without " MAC\n"
                let mac = try parseMAC(next)
                guard !stanzas.isEmpty else { throw .ageHeader("the header has no recipient stanza") }
                return AgeHeader(stanzas: stanzas, macInput: macInput, mac: mac)
            }
            guard next.starts(with: Array("-> ".utf8)) else {
                throw .ageHeader("unexpected line in the header (neither a stanza \"-> \" nor the MAC line \"--- \")")
            }
            let arguments = try parseArguments(next.dropFirst(3))
            // "a base64-encoded body wrapped at 64 columns. The body MUST end with a line shorter than 64
            // characters, which MAY be empty."
            var body: [UInt8] = []
            while true {
                let bodyLine = try line("a stanza body line")
                guard bodyLine.count <= columns else { throw .ageHeader("a stanza body line is longer than \(columns) columns") }
                guard bodyLine.allSatisfy(AgeBase64.isAlphabet), let decoded = AgeBase64.decode(bodyLine) else {
                    throw .ageHeader("a stanza body line is not canonical unpadded base64")
                }
                body += decoded
                if bodyLine.count < columns { break }
            }
            stanzas.append(AgeStanza(arguments: arguments, body: body))
        }
    }

    /// `argument = 1*VCHAR`, separated by single spaces.
    private static func parseArguments(_ bytes: ArraySlice<UInt8>) throws(StarlineError) -> [String] {
        let parts = bytes.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.allSatisfy({ !$0.isEmpty }) else {
            throw .ageHeader("a stanza has an empty argument (or no arguments)")
        }
        guard parts.allSatisfy({ $0.allSatisfy { (0x21...0x7E).contains($0) } }) else {
            throw .ageHeader("a stanza argument has a character other than printable ASCII")
        }
        return parts.map { String(decoding: $0, as: UTF8.self) }
    }

    /// `end = "--- " 43base64char LF`: 43 characters are the canonical encoding of the 32-byte HMAC-SHA-256.
    private static func parseMAC(_ line: [UInt8]) throws(StarlineError) -> [UInt8] {
        guard line.count == 4 + 43, line[3] == 0x20, let mac = AgeBase64.decode(line[4...]), mac.count == 32 else {
            throw .ageHeader("the MAC line is not \"--- \" followed by a canonical base64 HMAC")
        }
        return mac
    }

    /// The header bytes for `stanzas`, up to and including the "---" mark (the MAC input).
    static func encodeWithoutMAC(_ stanzas: [AgeStanza]) -> [UInt8] {
        var out = versionLine + [0x0A]
        for stanza in stanzas {
            out += Array("-> ".utf8) + Array(stanza.arguments.joined(separator: " ").utf8) + [0x0A]
            let encoded = AgeBase64.encode(stanza.body)
            var offset = 0
            // Full 64-column lines, then a shorter final line, empty when the body fills its last line.
            while true {
                let n = Swift.min(columns, encoded.count - offset)
                out += encoded[offset..<(offset + n)] + [0x0A]
                offset += n
                if n < columns { break }
            }
        }
        return out + Array("---".utf8)
    }

    /// The complete header, MAC line included, for `stanzas` under the file's header MAC key.
    static func encode(_ stanzas: [AgeStanza], fileKey: SecretBytes) -> [UInt8] {
        let macInput = encodeWithoutMAC(stanzas)
        let mac = HMACSHA256.authenticate(macInput, key: macKey(fileKey: fileKey))
        return macInput + [0x20] + AgeBase64.encode(mac) + [0x0A]
    }

    /// "HMAC key = HKDF-SHA-256(ikm = file key, salt = empty, info = "header")"
    static func macKey(fileKey: SecretBytes) -> SecretBytes {
        HKDF.deriveKey(ikm: fileKey, salt: [], info: Array("header".utf8))
    }

    /// Checks the header MAC under the unwrapped file key, in constant time.
    func verifyMAC(fileKey: SecretBytes) throws(StarlineError) {
        guard HMACSHA256.verify(mac, for: macInput, key: Self.macKey(fileKey: fileKey)) else {
            throw StarlineError(.ageHeaderMACInvalid, "the age header MAC does not match: the header was altered")
        }
    }
}

/// Bytes for an error message: printable ASCII kept, anything else as `?`, at most 40 characters.
func printable(_ bytes: some Collection<UInt8>) -> String {
    String(decoding: bytes.prefix(40).map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
}
