import StarlineCore
import StarlineCrypto

/// A note of the vault, decrypted. Everything but `id` and `version` is sealed on disk.
public struct MemoryNote: Sendable, Equatable {
    /// A version 4 UUID, lowercase; commands accept any unique prefix (`MemoryVault.resolve`).
    public var id: String
    /// 1 when added; +1 with every change (edit, attach).
    public var version: Int
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    public var title: String
    public var body: String
    public var tags: [String]
    public var attachments: [MemoryAttachment]
}

/// What `list` shows of a note: everything but the body.
public struct MemoryNoteSummary: Sendable, Equatable {
    public var id: String
    public var version: Int
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    public var title: String
    public var tags: [String]
    public var attachments: [MemoryAttachment]
}

/// An attachment as a note lists it. Its file key stays inside the vault.
public struct MemoryAttachment: Sendable, Equatable {
    /// The name given when attaching; unique within its note.
    public var name: String
    /// Size of the plaintext in bytes.
    public var size: UInt64
    /// The digest of the plaintext, hex: SHA-256, or BLAKE2b-256 for an attachment recorded before SHA-256.
    public var digest: String
    /// "sha256" or "blake2b": the key `show` prints `digest` under.
    public var digestName: String
    public var addedAt: Timestamp
}

/// The sealed form of an attachment reference, with the secretstream key of its file.
struct AttachmentEntry {
    /// 16 random bytes; the file is `attachments/<hex>`. A rewritten file gets a new id.
    var blobID: [UInt8]
    var name: String
    var size: UInt64
    /// The plaintext's digest, by `digest`.
    var hash: [UInt8]
    var digest: AttachmentDigest
    var fileKey: SecretBytes
    var addedAt: Timestamp

    var blobName: String { Hex.encode(blobID) }
    var info: MemoryAttachment {
        MemoryAttachment(name: name, size: size, digest: Hex.encode(hash), digestName: digest.key, addedAt: addedAt)
    }
}
