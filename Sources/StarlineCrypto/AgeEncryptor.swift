import StarlineCore

/// Writes an age v1 file (https://age-encryption.org/v1) protected by a passphrase: a header with exactly
/// one scrypt stanza and its MAC, then the STREAM payload, optionally in ASCII armor. `age -d` opens it.
///
/// Push-style and constant in memory: `write` as often as needed, then `finish` — the file is complete
/// only after `finish` (a decryptor rejects a file without its final chunk). The header is written when
/// the encryptor is created, after the scrypt work (about 0.5 s and 256 MiB at work factor 18): create it
/// off the main actor.
///
///     let encryptor = try AgeEncryptor(passphrase: code, output: .fileDescriptor(fd, name: path))
///     try encryptor.write(bytes) …
///     try encryptor.finish()
public final class AgeEncryptor {
    /// The work factor age itself uses (log2 of scrypt's N): 2^18, about 256 MiB.
    public static let defaultWorkFactor = 18
    /// Work factors this encryptor can write (scrypt needs 1 KiB × 2^factor of memory).
    public static let workFactorRange = 1...30

    private let payload: AgePayloadEncryptor
    private let armor: AgeArmorWriter?
    public private(set) var isFinished = false

    /// Generates a file key, wraps it under `passphrase` with a new salt, and writes the header (and the
    /// BEGIN line when `armored`) to `output`.
    public init(
        passphrase: SecretBytes, workFactor: Int = AgeEncryptor.defaultWorkFactor, armored: Bool = false,
        output: AgeWriter
    ) throws(StarlineError) {
        precondition(Self.workFactorRange.contains(workFactor), "age scrypt work factor must be in \(Self.workFactorRange)")
        // "The file key MUST be generated as 16 bytes of CSPRNG output. It MUST NOT be reused across
        // multiple files."
        let fileKey = SecretBytes(count: AgeScrypt.fileKeyBytes)
        let stanza = try AgeScrypt.stanza(fileKey: fileKey, passphrase: passphrase, workFactor: workFactor)
        let armor = armored ? try AgeArmorWriter(output) : nil
        let sink = armor?.writer ?? output
        try sink.write(AgeHeader.encode([stanza], fileKey: fileKey))
        payload = try AgePayloadEncryptor(fileKey: fileKey, output: sink)
        self.armor = armor
    }

    /// Encrypts more plaintext. Output is written in whole 64 KiB chunks as they fill.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(StarlineError) {
        precondition(!isFinished, "AgeEncryptor.write after finish")
        try payload.write(bytes)
    }

    public func write(_ bytes: [UInt8]) throws(StarlineError) {
        try bytes.withBytes { (b) throws(StarlineError) in try write(b) }
    }

    /// Writes the final chunk (and the armor's END line). Nothing may be written afterwards.
    public func finish() throws(StarlineError) {
        precondition(!isFinished, "AgeEncryptor.finish called twice")
        isFinished = true
        try payload.finish()
        try armor?.finish()
    }

    /// Encrypts everything `input` yields to `output`, 64 KiB at a time.
    public static func encrypt(
        from input: AgeReader, to output: AgeWriter, passphrase: SecretBytes,
        workFactor: Int = defaultWorkFactor, armored: Bool = false
    ) throws(StarlineError) {
        let encryptor = try AgeEncryptor(passphrase: passphrase, workFactor: workFactor, armored: armored, output: output)
        var buffer = [UInt8](repeating: 0, count: AgePayload.chunkSize)
        defer { Sodium.wipe(&buffer) }
        while true {
            let n = try buffer.withMutableBytes { (b) throws(StarlineError) in try input.read(b) }
            precondition(n >= 0 && n <= buffer.count, "AgeReader returned an impossible count")
            if n == 0 { break }
            try buffer.withBytes { (b) throws(StarlineError) in try encryptor.write(UnsafeRawBufferPointer(rebasing: b[0..<n])) }
        }
        try encryptor.finish()
    }

    /// The whole age file for `plaintext`, in memory (small data; stream anything large).
    public static func encrypt(
        _ plaintext: [UInt8], passphrase: SecretBytes, workFactor: Int = defaultWorkFactor,
        armored: Bool = false
    ) throws(StarlineError) -> [UInt8] {
        let collector = ByteCollector()
        try encrypt(from: .bytes(plaintext), to: collector.writer, passphrase: passphrase, workFactor: workFactor, armored: armored)
        return collector.bytes
    }
}
