import Foundation
import StarlineCore
import StarlineCrypto
import StarlineMemory
import StarlineTestSupport
import Testing

@Suite("Memory vault: attachments")
final class VaultAttachmentTests: @unchecked Sendable {
    let fixture: VaultFixture
    init() throws { fixture = try VaultFixture() }

    @Test("W2 attachments round-trip at every chunk boundary; size and SHA-256 are recorded")
    func testW2AttachmentRoundTrip() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "files"))
        let chunk = 64 * 1024
        for size in [0, 1, chunk - 1, chunk, chunk + 1, 3 * chunk, 3 * chunk + 5] {
            let content = patternBytes(size, seed: UInt64(size) + 1)
            let updated = try vault.attach(note.id, from: try fixture.input(content), name: "file-\(size)")
            let info = try #require(updated.attachments.first { $0.name == "file-\(size)" })
            #expect(info.size == UInt64(size))
            #expect(info.digestName == "sha256" && info.digest == DigestHex.sha256(content))
            #expect(
                try fixture.output { try fixture.open().getAttachment(note.id, name: "file-\(size)", to: $0) } == content, "size \(size)")
        }
        #expect(try vault.show(note.id).version == 8)
        #expect(try vault.verify().attachments == 7)
    }

    @Test("W2 a large attachment streams through in chunks (8 MiB in, 8 MiB out, identical)")
    func testW2LargeAttachmentStreams() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "big"))
        let content = patternBytes(8 << 20)
        try vault.attach(note.id, from: try fixture.input(content), name: "big.bin")
        let file = try #require(try fixture.attachmentFiles().first)
        let onDisk = try AtomicFile.read(fixture.location.attachmentsPath + "/" + file)!
        // 128 chunks of 64 KiB, each 17 bytes longer, plus the 54-byte prefix and stream header.
        #expect(onDisk.count == content.count + 128 * 17 + 54)
        #expect(try fixture.output { try vault.getAttachment(note.id, name: "big.bin", to: $0) } == content)
    }

    @Test("attachment names are unique per note unless replaced; replacing removes the old file after commit")
    func replaceAndNames() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "x"))
        try vault.attach(note.id, from: try fixture.input([1]), name: "a.txt")
        let before = try fixture.attachmentFiles()
        #expect(starlineError { try vault.attach(note.id, from: try fixture.input([2]), name: "a.txt") }?.code == .usage)
        #expect(try fixture.attachmentFiles() == before, "the refused attach left no file")
        try vault.attach(note.id, from: try fixture.input([2, 2]), name: "a.txt", replace: true)
        let after = try fixture.attachmentFiles()
        #expect(after.count == 1 && after != before)
        #expect(try fixture.output { try vault.getAttachment(note.id, name: "a.txt", to: $0) } == [2, 2])
        #expect(starlineError { try vault.attach(note.id, from: try fixture.input([3]), name: "") }?.code == .usage)
        #expect(starlineError { try vault.attach(note.id, from: try fixture.input([3]), name: "bad\nname") }?.code == .usage)
        #expect(starlineError { _ = try fixture.output { try vault.getAttachment(note.id, name: "nope", to: $0) } }?.code == .notFound)
        #expect(starlineError { try vault.attach("ffffffff", from: try fixture.input([3]), name: "z") }?.code == .notFound)
    }

    @Test("removing a note removes its attachment files")
    func removeDeletesFiles() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "x"))
        let other = try vault.add(NoteDraft(body: "y"))
        try vault.attach(note.id, from: try fixture.input([1, 2, 3]), name: "one")
        try vault.attach(note.id, from: try fixture.input([4, 5, 6]), name: "two")
        try vault.attach(other.id, from: try fixture.input([7]), name: "kept")
        #expect(try fixture.attachmentFiles().count == 3)
        try vault.remove(note.id)
        #expect(try fixture.attachmentFiles().count == 1)
        #expect(try fixture.output { try vault.getAttachment(other.id, name: "kept", to: $0) } == [7])
    }
}

/// Digests in hex, as the vault reports attachments: SHA-256 now, BLAKE2b-256 for older records.
enum DigestHex {
    static func sha256(_ bytes: [UInt8]) -> String { hex(SHA256Stream.hash(bytes)) }
    static func blake2b(_ bytes: [UInt8]) -> String { hex(GenericHash.hash(bytes, length: 32)) }
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
