import StarlineCore
import StarlineCrypto
import Testing
@testable import StarlineMemory

/// The record payload parser on payloads a vault could hold (found by fuzz/Sources/fuzz-vault).
@Suite struct RecordPayloadTests {
    let vaultID = [UInt8](repeating: 7, count: 16)

    @Test("A record whose times are outside years 0001–9999 opens, and its note prints (no trap in rfc3339)")
    func recordTimesOutsideTheRangePrint() throws {
        let keys = EpochKeys(epoch: 1, dataKey: SecretBytes(copying: [UInt8](repeating: 9, count: 32)), vaultID: vaultID)
        let payload = NotePayload(
            createdAt: Timestamp(seconds: -70_000_000_000), updatedAt: Timestamp(seconds: .max),
            title: "t", body: "b", tags: [], attachments: [])
        let sealed = payload.sealed(id: "n", version: 1, keys: keys, vaultID: vaultID)
        let opened = try NotePayload.open(sealed, id: "n", version: 1, keys: keys, vaultID: vaultID, path: "vault.db")
        let note = opened.note(id: "n", version: 1)
        #expect(note.createdAt.rfc3339 == "0001-01-01T00:00:00Z")
        #expect(note.updatedAt.rfc3339 == "9999-12-31T23:59:59Z")
    }

    /// Payload version 1, as vaults were written before attachments had SHA-256: no digest byte after the
    /// hash. Frozen here, byte for byte, so the reader keeps opening it.
    func legacyPayload(_ attachment: AttachmentEntry, keys: EpochKeys) -> [UInt8] {
        var w = ByteWriter()
        w.u8(1)
        w.i64(1_700_000_000)
        w.i64(1_700_000_100)
        w.string("old note")
        w.string("body")
        w.u32(1)
        w.string("tag")
        w.u32(1)
        w.raw(attachment.blobID)
        w.string(attachment.name)
        w.u64(attachment.size)
        w.raw(attachment.hash)
        attachment.fileKey.withUnsafeBytes { w.raw($0) }
        w.i64(attachment.addedAt.seconds)
        return XChaCha20Poly1305.seal(
            w.bytes, additionalData: NotePayload.additionalData(vaultID: vaultID, id: "n", version: 3), key: keys.recordKey)
    }

    @Test(
        """
        W2 a version-1 payload opens with BLAKE2b digests, and keeps them when sealed again; an unknown digest is \
        corrupt
        """)
    func w2LegacyPayloadKeepsBLAKE2b() throws {
        let keys = EpochKeys(epoch: 1, dataKey: SecretBytes(copying: [UInt8](repeating: 9, count: 32)), vaultID: vaultID)
        let content = Array("attached before SHA-256".utf8)
        let old = AttachmentEntry(
            blobID: Sodium.randomBytes(16), name: "old.txt", size: UInt64(content.count), hash: GenericHash.hash(content, length: 32),
            digest: .blake2b256, fileKey: SecretBytes(count: SecretStream.keyBytes), addedAt: Timestamp(seconds: 1_700_000_050))
        let opened = try NotePayload.open(
            legacyPayload(old, keys: keys), id: "n", version: 3, keys: keys, vaultID: vaultID, path: "vault.db")
        let info = try #require(opened.note(id: "n", version: 3).attachments.first)
        #expect(opened.title == "old note" && opened.tags == ["tag"] && info.name == "old.txt" && info.size == UInt64(content.count))
        #expect(info.digestName == "blake2b" && info.digest == Hex.encode(GenericHash.hash(content, length: 32)))
        #expect(opened.attachments[0].fileKey == old.fileKey)

        // An edit seals version 2, naming the digest: still BLAKE2b.
        var edited = opened
        edited.attachments.append(
            AttachmentEntry(
                blobID: Sodium.randomBytes(16), name: "new.txt", size: 3, hash: SHA256Stream.hash([1, 2, 3]), digest: .sha256,
                fileKey: SecretBytes(count: SecretStream.keyBytes), addedAt: Timestamp(seconds: 1_700_000_200)))
        let sealed = edited.sealed(id: "n", version: 4, keys: keys, vaultID: vaultID)
        let reopened = try NotePayload.open(sealed, id: "n", version: 4, keys: keys, vaultID: vaultID, path: "vault.db")
        #expect(reopened.attachments.map(\.digest) == [.blake2b256, .sha256])
        #expect(reopened.attachments.map(\.hash) == [old.hash, SHA256Stream.hash([1, 2, 3])])

        // A digest byte that names no algorithm does not parse.
        var plain = try XChaCha20Poly1305.open(
            sealed, additionalData: NotePayload.additionalData(vaultID: vaultID, id: "n", version: 4), key: keys.recordKey)
        let digestOffset = 1 + 8 + 8 + (4 + 8) + (4 + 4) + 4 + (4 + 3) + 4 + 16 + (4 + 7) + 8 + 32
        #expect(plain[digestOffset] == AttachmentDigest.blake2b256.rawValue)
        plain[digestOffset] = 7
        let forged = XChaCha20Poly1305.seal(
            plain, additionalData: NotePayload.additionalData(vaultID: vaultID, id: "n", version: 4), key: keys.recordKey)
        #expect(throws: StarlineError.self) {
            try NotePayload.open(forged, id: "n", version: 4, keys: keys, vaultID: vaultID, path: "vault.db")
        }
    }
}
