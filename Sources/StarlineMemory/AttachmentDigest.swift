import StarlineCore
import StarlineCrypto

/// Which digest of its plaintext an attachment's record keeps (32 bytes either way): what `show` prints
/// under the digest's name, what `verify`, the export and the rekey check the bytes against, and what an
/// export package carries.
///
/// Attachments are written with SHA-256: it runs on the CPU's SHA extensions through libcrypto, in about
/// 60 % of BLAKE2b's time, and the digest is the slowest stage of `attach` (W2). Attachments recorded with
/// BLAKE2b-256 (note payload version 1) keep it: their bytes are checked against it as before.
enum AttachmentDigest: UInt8, Sendable {
    case blake2b256 = 0
    case sha256 = 1

    /// The key under which the hex digest is printed and exported (`b2sum -l 256` / `sha256sum` compute
    /// the same value from the file `get` writes).
    var key: String {
        switch self {
        case .blake2b256: "blake2b"
        case .sha256: "sha256"
        }
    }

    /// The algorithm, for messages.
    var displayName: String {
        switch self {
        case .blake2b256: "BLAKE2b"
        case .sha256: "SHA-256"
        }
    }

    /// The digest of a package's attachment object: its "sha256" or "blake2b" key (one of them).
    static func named(_ key: String) -> AttachmentDigest? {
        [.sha256, .blake2b256].first { $0.key == key }
    }
}

/// A digest being computed over an attachment's plaintext, block by block. One stage uses it at a time
/// (`BlockPipeline`'s inspector thread, or the thread that reads); the caller finalizes it once all blocks
/// went through.
final class AttachmentHasher: @unchecked Sendable {
    // @unchecked: its streams are mutated by one stage only (the pipeline's inspector thread, or the reading
    // thread when there is none) and finalized after that stage has finished, so never by two threads at once.
    let digest: AttachmentDigest
    private var blake2b: GenericHashStream?
    private var sha256: SHA256Stream?

    /// Below this many bytes, SHA-256 stays on libsodium: loading libcrypto costs ~3.5 ms, what libsodium's
    /// portable SHA-256 takes for about 1 MiB.
    static let libcryptoFrom = 512 * 1024

    /// `expectedBytes`: the input's size when known (a regular file), nil when not (a pipe).
    init(_ digest: AttachmentDigest, expectedBytes: Int? = nil) {
        self.digest = digest
        switch digest {
        case .blake2b256: blake2b = GenericHashStream(length: 32)
        case .sha256: sha256 = SHA256Stream(libcrypto: (expectedBytes ?? .max) >= Self.libcryptoFrom)
        }
    }

    func update(_ bytes: UnsafeRawBufferPointer) {
        switch digest {
        case .blake2b256: blake2b!.update(bytes)
        case .sha256: sha256!.update(bytes)
        }
    }

    func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The 32-byte digest of everything added. Call once.
    func finalize() -> [UInt8] {
        switch digest {
        case .blake2b256: blake2b!.finalize()
        case .sha256: sha256!.finalize()
        }
    }
}
