import StarlineCore
import StarlineCrypto

/// A note's sealed payload, and how it is sealed: XChaCha20-Poly1305 under the epoch's record key, with
/// `starline-memory/v1 record \0 vault id \0 kind \0 id \0 version` as additional data — a ciphertext moved
/// to another row, another version or another vault does not authenticate.
struct NotePayload {
    /// 2 names each attachment's digest (`AttachmentDigest`) after it; 1, written before SHA-256, has none:
    /// its attachments' digests are BLAKE2b-256. Both are read.
    static let payloadVersion: UInt8 = 2
    static let kind = "note"

    var createdAt: Timestamp
    var updatedAt: Timestamp
    var title: String
    var body: String
    var tags: [String]
    var attachments: [AttachmentEntry]

    func note(id: String, version: Int) -> MemoryNote {
        MemoryNote(
            id: id, version: version, createdAt: createdAt, updatedAt: updatedAt, title: title, body: body, tags: tags,
            attachments: attachments.map(\.info))
    }

    func summary(id: String, version: Int) -> MemoryNoteSummary {
        MemoryNoteSummary(
            id: id, version: version, createdAt: createdAt, updatedAt: updatedAt, title: title, tags: tags,
            attachments: attachments.map(\.info))
    }

    static func additionalData(vaultID: [UInt8], id: String, version: Int) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array("starline-memory/v1 record\u{0}".utf8))
        w.raw(vaultID)
        w.raw(Array("\u{0}\(kind)\u{0}\(id)\u{0}\(version)".utf8))
        return w.bytes
    }

    func sealed(id: String, version: Int, keys: EpochKeys, vaultID: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: body.utf8.count + title.utf8.count + 128)
        w.u8(Self.payloadVersion)
        w.i64(createdAt.seconds)
        w.i64(updatedAt.seconds)
        w.string(title)
        w.string(body)
        w.u32(UInt32(tags.count))
        for tag in tags { w.string(tag) }
        w.u32(UInt32(attachments.count))
        for a in attachments {
            w.raw(a.blobID)
            w.string(a.name)
            w.u64(a.size)
            w.raw(a.hash)
            w.u8(a.digest.rawValue)
            a.fileKey.withUnsafeBytes { w.raw($0) }
            w.i64(a.addedAt.seconds)
        }
        defer { w.wipe() }
        return XChaCha20Poly1305.seal(
            w.bytes, additionalData: Self.additionalData(vaultID: vaultID, id: id, version: version),
            key: keys.recordKey)
    }

    /// Opens a record's ciphertext; VAULT_CORRUPT naming the record when it does not authenticate (altered,
    /// truncated, swapped with another row or version) or does not parse.
    static func open(
        _ sealed: [UInt8], id: String, version: Int, keys: EpochKeys, vaultID: [UInt8],
        path: String
    ) throws(StarlineError) -> NotePayload {
        var plain: [UInt8]
        do {
            plain = try XChaCha20Poly1305.open(
                sealed, additionalData: additionalData(vaultID: vaultID, id: id, version: version),
                key: keys.recordKey)
        } catch {
            throw VaultErrors.corruptRecord(
                id, path, "it does not authenticate (altered, truncated, or moved from another record or version)")
        }
        defer { Sodium.wipe(&plain) }
        var r = ByteReader(plain)
        do {
            let version = try r.u8()
            guard version == 1 || version == payloadVersion else { throw ByteReader.Malformed() }
            let created = Timestamp(seconds: try r.i64()), updated = Timestamp(seconds: try r.i64())
            let title = try r.string(), body = try r.string()
            var tags: [String] = []
            for _ in 0..<(try r.count(minimumItemBytes: 4)) { tags.append(try r.string()) }
            var attachments: [AttachmentEntry] = []
            for _ in 0..<(try r.count(minimumItemBytes: 16 + 4 + 8 + 32 + 32 + 8)) {
                let blob = try r.raw(16), name = try r.string(), size = try r.u64(), hash = try r.raw(32)
                var digest = AttachmentDigest.blake2b256
                if version != 1 {
                    guard let named = AttachmentDigest(rawValue: try r.u8()) else { throw ByteReader.Malformed() }
                    digest = named
                }
                var keyBytes = try r.raw(SecretStream.keyBytes)
                let fileKey = SecretBytes(copying: keyBytes)
                Sodium.wipe(&keyBytes)
                attachments.append(
                    AttachmentEntry(
                        blobID: blob, name: name, size: size, hash: hash, digest: digest, fileKey: fileKey,
                        addedAt: Timestamp(seconds: try r.i64())))
            }
            try r.expectEnd()
            return NotePayload(createdAt: created, updatedAt: updated, title: title, body: body, tags: tags, attachments: attachments)
        } catch {
            throw VaultErrors.corruptRecord(id, path, "its payload does not parse")
        }
    }
}
