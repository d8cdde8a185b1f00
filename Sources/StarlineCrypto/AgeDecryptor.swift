import StarlineCore

/// Whether the input of `AgeDecryptor` is ASCII-armored.
public enum AgeArmorMode: Sendable {
    /// Armored when the first byte is `-` or whitespace (a binary age file starts with
    /// "age-encryption.org/"), as `age -d` detects it.
    case detect
    /// Must be armored: anything else is `AGE_ARMOR_INVALID`.
    case required
    /// Binary only.
    case binary
}

/// What a successful decryption found.
public struct AgeDecryptionReport: Sendable, Equatable {
    /// Plaintext bytes written to the output.
    public var plaintextBytes: Int
    /// The scrypt work factor of the file.
    public var workFactor: Int
    public var armored: Bool
}

/// Reads an age v1 file protected by a passphrase (one scrypt stanza), strictly by the spec, streaming:
/// the header is parsed and its MAC checked before any plaintext is written, then the payload is
/// decrypted one 64 KiB chunk at a time, each chunk verified before it is written.
///
/// **The output is unconfirmed until `decrypt` returns.** A damaged or truncated file fails at the chunk
/// where it is damaged, after the chunks before it were written: a caller that must not act on part of a
/// file (an import that "checks the whole package before writing") decrypts into a temporary file or a
/// buffer, or runs `verify` first, and commits only after `decrypt` returned normally.
///
/// Errors: `AGE_WRONG_PASSPHRASE` (exit 13) when the passphrase does not open the stanza;
/// `AGE_UNSUPPORTED_RECIPIENT` for files without a scrypt stanza (X25519 and other recipients);
/// `AGE_WORK_FACTOR_TOO_HIGH` before any scrypt work; `AGE_HEADER_INVALID`, `AGE_HEADER_MAC_INVALID`,
/// `AGE_PAYLOAD_INVALID`, `AGE_ARMOR_INVALID` for damaged files (exit 12); the input's and output's own
/// errors unchanged.
public struct AgeDecryptor: Sendable {
    /// age's own limit: "import accepts work factors up to 22 (as age does)". 2^22 is 4 GiB of memory.
    public static let defaultMaximumWorkFactor = 22

    private let passphrase: SecretBytes
    public let maximumWorkFactor: Int
    public var armor: AgeArmorMode

    public init(passphrase: SecretBytes, maximumWorkFactor: Int = AgeDecryptor.defaultMaximumWorkFactor, armor: AgeArmorMode = .detect) {
        precondition(
            AgeEncryptor.workFactorRange.contains(maximumWorkFactor),
            "age maximum work factor must be in \(AgeEncryptor.workFactorRange)")
        self.passphrase = passphrase
        self.maximumWorkFactor = maximumWorkFactor
        self.armor = armor
    }

    /// Decrypts `input` to `output`. Slow for the scrypt work (seconds at high work factors): call it off
    /// the main actor. See the type's note: the output counts only once this returns.
    @discardableResult
    public func decrypt(from input: AgeReader, to output: AgeWriter) throws(StarlineError) -> AgeDecryptionReport {
        let passphrase = self.passphrase
        var workFactor = 0
        let (count, armored) = try Self.run(input, output, armor: armor, maximumWorkFactor: maximumWorkFactor) {
            (header, scrypt) throws(StarlineError) -> SecretBytes in
            guard let scrypt else { throw Self.noPassphraseStanza(header) }
            workFactor = scrypt.workFactor
            return try AgeScrypt.unwrap(scrypt, passphrase: passphrase)
        }
        return AgeDecryptionReport(plaintextBytes: count, workFactor: workFactor, armored: armored)
    }

    /// Checks the whole file — passphrase, header, MAC, every chunk, armor — and keeps nothing.
    @discardableResult
    public func verify(from input: AgeReader) throws(StarlineError) -> AgeDecryptionReport {
        try decrypt(from: input, to: .discarding)
    }

    /// The plaintext of a whole age file in memory (small files).
    public func decrypt(_ file: [UInt8]) throws(StarlineError) -> [UInt8] {
        let collector = ByteCollector()
        try decrypt(from: .bytes(file), to: collector.writer)
        return collector.bytes
    }

    /// The same parser, checks and payload decryption with a known file key instead of a passphrase: for
    /// test vectors of other recipient types. The scrypt stanza checks that need no passphrase still apply.
    @discardableResult
    static func decrypt(
        from input: AgeReader, to output: AgeWriter, fileKey: SecretBytes, armor: AgeArmorMode = .detect,
        maximumWorkFactor: Int = defaultMaximumWorkFactor
    ) throws(StarlineError) -> Int {
        try run(input, output, armor: armor, maximumWorkFactor: maximumWorkFactor) { (_, _) throws(StarlineError) -> SecretBytes in
            // Every native recipient "MUST check that the body length is exactly 32 bytes", which pins the
            // file key to 16 bytes.
            guard fileKey.count == AgeScrypt.fileKeyBytes else {
                throw .ageHeader("the file key is \(fileKey.count) bytes instead of \(AgeScrypt.fileKeyBytes)")
            }
            return fileKey
        }.plaintextBytes
    }

    private static func run(
        _ input: AgeReader, _ output: AgeWriter, armor: AgeArmorMode, maximumWorkFactor: Int,
        fileKey: (AgeHeader, AgeScrypt.Parameters?) throws(StarlineError) -> SecretBytes
    )
        throws(StarlineError) -> (plaintextBytes: Int, armored: Bool)
    {
        let raw = AgeInputBuffer(input)
        let armored: Bool
        switch armor {
        case .required: armored = true
        case .binary: armored = false
        case .detect:
            if let first = try raw.peek() { armored = first == UInt8(ascii: "-") || AgeArmor.isWhitespace(first) } else { armored = false }
        }
        let source = armored ? AgeInputBuffer(AgeArmorReader(raw).reader) : raw
        let header = try AgeHeader.read(from: source)
        let scrypt = try AgeScrypt.parameters(in: header, maximumWorkFactor: maximumWorkFactor)
        let key = try fileKey(header, scrypt)
        try header.verifyMAC(fileKey: key)
        let count = try AgePayloadDecryptor.decrypt(source, fileKey: key, to: output)
        return (count, armored)
    }

    /// "no identity matched": the file is for recipients we do not implement (X25519, post-quantum,
    /// plugins) — age "MUST ignore unrecognized stanzas", so none of them is an error in itself.
    private static func noPassphraseStanza(_ header: AgeHeader) -> StarlineError {
        var types: [String] = []
        for stanza in header.stanzas where !types.contains(stanza.type) { types.append(stanza.type) }
        return StarlineError(
            .ageUnsupportedRecipient,
            "this age file is not passphrase-protected (its recipients: \(types.map { printable(Array($0.utf8)) }.joined(separator: ", ")))",
            details: .object([("recipientTypes", .array(types.map { .string(printable(Array($0.utf8))) }))]))
    }
}
