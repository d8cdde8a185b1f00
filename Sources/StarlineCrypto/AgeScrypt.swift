import StarlineCore

/// The scrypt recipient type of age: the file key wrapped under a passphrase.
///
///     -> scrypt ajMFur+EJLGaohv/dLRGnw 18
///     8SHBz/ldWnjyGFQqfjat6uNBarWqqEMDS7W8X7+Xq5Q
///
/// "The first is the string `scrypt`, the second is a base64-encoded salt computed by the recipient
/// implementation as 16 bytes from a CSPRNG, and the third is the base-two logarithm of the scrypt work
/// factor in decimal."
enum AgeScrypt {
    static let type = "scrypt"
    static let saltBytes = 16
    static let fileKeyBytes = 16
    /// ChaCha20-Poly1305 of the 16-byte file key: "MUST check that the body length is exactly 32 bytes".
    static let bodyBytes = fileKeyBytes + 16
    static let saltLabel = Array("age-encryption.org/v1/scrypt".utf8)

    /// What a well-formed scrypt stanza says.
    struct Parameters {
        var salt: [UInt8]
        var workFactor: Int
        var body: [UInt8]
    }

    /// "wrap key = scrypt(N = work factor, r = 8, p = 1, dkLen = 32, S = "age-encryption.org/v1/scrypt" ||
    /// salt, P = passphrase)"
    private static func wrapKey(passphrase: SecretBytes, salt: [UInt8], workFactor: Int) throws(StarlineError) -> SecretBytes {
        try Scrypt.deriveKey(passphrase: passphrase, salt: saltLabel + salt, logN: workFactor, r: 8, p: 1, length: 32)
    }

    /// "where the ChaCha20-Poly1305 nonce is fixed as 12 0x00 bytes"
    private static let zeroNonce = [UInt8](repeating: 0, count: 12)

    /// A new stanza wrapping `fileKey`: "A new salt MUST be generated for each stanza and each file."
    static func stanza(fileKey: SecretBytes, passphrase: SecretBytes, workFactor: Int) throws(StarlineError) -> AgeStanza {
        let salt = Sodium.randomBytes(saltBytes)
        let key = try wrapKey(passphrase: passphrase, salt: salt, workFactor: workFactor)
        let body = ChaCha20Poly1305.seal(fileKey, nonce: zeroNonce, key: key)
        return AgeStanza(arguments: [type, String(decoding: AgeBase64.encode(salt), as: UTF8.self), String(workFactor)], body: body)
    }

    /// Finds and checks the header's scrypt stanza without the passphrase: nil when there is none. Every
    /// check that needs no secret is made here, before any scrypt work, so a malformed or too costly stanza
    /// is refused at once.
    ///
    /// Stanzas are recognised by their first argument, exactly ("Scrypt" is some other, unknown type).
    static func parameters(in header: AgeHeader, maximumWorkFactor: Int) throws(StarlineError) -> Parameters? {
        guard let stanza = header.stanzas.first(where: { $0.type == type }) else { return nil }
        // "An scrypt stanza, if present, MUST be the only stanza in the header ... The identity
        // implementation MUST reject headers where an scrypt stanza is present alongside any other stanza."
        guard header.stanzas.count == 1 else {
            throw .ageHeader("a scrypt stanza must be the only stanza in the header (found \(header.stanzas.count) stanzas)")
        }
        // "MUST reject any scrypt stanza that has more or less than three arguments, where the second
        // argument is not a canonical base64 encoding of a 16-byte value, or where the third argument is not
        // a decimal number composed of only digits with no leading zeroes (`^[1-9][0-9]*$`)."
        guard stanza.arguments.count == 3 else {
            throw .ageHeader("a scrypt stanza has \(stanza.arguments.count - 1) arguments instead of 2 (salt and work factor)")
        }
        guard let salt = AgeBase64.decode(Array(stanza.arguments[1].utf8)), salt.count == saltBytes else {
            throw .ageHeader("the scrypt salt is not the canonical base64 encoding of \(saltBytes) bytes")
        }
        let digits = Array(stanza.arguments[2].utf8)
        guard let first = digits.first, (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(first),
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else {
            throw .ageHeader("the scrypt work factor \"\(printable(digits))\" is not a decimal number without leading zeros")
        }
        // "SHOULD apply an upper limit to the work factor": checked before anything costly. More than two
        // digits is above any limit (and may not even fit an Int).
        guard digits.count <= 2, let workFactor = Int(stanza.arguments[2]), workFactor <= maximumWorkFactor else {
            throw StarlineError(
                .ageWorkFactorTooHigh,
                "the file's scrypt work factor \(printable(digits)) is above the limit of \(maximumWorkFactor)",
                details: .object([("workFactor", .string(String(printable(digits)))), ("limit", .int(maximumWorkFactor))]))
        }
        // "it MUST check that the body length is exactly 32 bytes before attempting to decrypt it, to
        // mitigate partitioning oracle attacks."
        guard stanza.body.count == bodyBytes else {
            throw .ageHeader("the scrypt stanza body is \(stanza.body.count) bytes instead of \(bodyBytes)")
        }
        return Parameters(salt: salt, workFactor: workFactor, body: stanza.body)
    }

    /// Unwraps the file key with `passphrase`: `AGE_WRONG_PASSPHRASE` when the body does not open.
    static func unwrap(_ parameters: Parameters, passphrase: SecretBytes) throws(StarlineError) -> SecretBytes {
        let key = try wrapKey(passphrase: passphrase, salt: parameters.salt, workFactor: parameters.workFactor)
        do {
            return try ChaCha20Poly1305.openSecret(parameters.body, nonce: zeroNonce, key: key)
        } catch {
            throw StarlineError(.ageWrongPassphrase, "the passphrase does not open this age file")
        }
    }
}
