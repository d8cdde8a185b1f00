import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
@testable import StarlineMemory
import StarlineTestSupport
import Testing

/// The block-at-a-time attachment streams (W2): ~1 MiB blocks of 64 KiB chunks, read and hashed on other
/// threads (`BlockPipeline`), with the file format unchanged.
@Suite("Memory vault: attachment streaming in blocks")
final class AttachmentStreamingTests: @unchecked Sendable {
    let fixture: VaultFixture
    init() throws { fixture = try VaultFixture() }

    static let chunk = AttachmentFile.defaultChunkSize
    static let block = AttachmentWriter.blockChunks * chunk
    static let sealedChunk = chunk + SecretStream.abytes
    /// The prefix and the secretstream header before the first chunk.
    static let headBytes = 30 + 24

    /// A pipe's read end that yields `bytes` then ends: written by a thread, so any size fits.
    func pipeInput(_ bytes: [UInt8]) -> Int32 {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        let writeEnd = fds[1]
        WorkerThreads.detach {
            _ = bytes.withUnsafeBytes { FileBytes.write(fd: writeEnd, $0) }
            close(writeEnd)
        }
        return fds[0]
    }

    @Test(
        """
        W2 sizes at and around the block size round-trip from a file (threaded) and from a pipe (inline); the file \
        has the format's size
        """)
    func blockBoundaries() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "blocks"))
        let c = Self.chunk, b = Self.block
        var count = 0
        for size in [0, 1, c + 1, b - 1, b, b + 1, 2 * b, 2 * b + c + 1] {
            for fromPipe in [false, true] {
                let content = patternBytes(size, seed: UInt64(size) * 2 + (fromPipe ? 1 : 0))
                let name = "f-\(size)-\(fromPipe)"
                let input = fromPipe ? pipeInput(content) : try fixture.input(content)
                defer { close(input) }
                let updated = try vault.attach(note.id, from: input, name: name)
                count += 1
                let info = try #require(updated.attachments.first { $0.name == name })
                #expect(info.size == UInt64(size), "\(name)")
                #expect(info.digestName == "sha256" && info.digest == DigestHex.sha256(content), "\(name)")
                #expect(try fixture.output { try vault.getAttachment(note.id, name: name, to: $0) } == content, "\(name)")
            }
        }
        // Every file on disk has exactly the size the format gives its plaintext size.
        let sizes = try fixture.attachmentFiles().map { name -> UInt64 in
            var info = stat()
            try #require(stat(fixture.location.attachmentsPath + "/" + name, &info) == 0)
            return UInt64(info.st_size)
        }
        let expected = try vault.show(note.id).attachments.map {
            AttachmentFile.expectedFileSize(plaintextSize: $0.size, chunkSize: Self.chunk)
        }
        #expect(sizes.sorted() == expected.sorted())
        #expect(try vault.verify().attachments == count)
    }

    @Test(
        """
        W2 a writer fed odd amounts (the import's and the rekey's way) makes the same plaintext, size and hash as one \
        fed a descriptor
        """)
    func appendInOddPieces() throws {
        try fixture.create()
        try PrivateFiles.ensurePrivateDirectory(fixture.location.attachmentsPath)
        let content = patternBytes(2 * Self.block + 3 * Self.chunk + 7, seed: 11)
        let blobID = Sodium.randomBytes(16)
        let key = SecretBytes(count: SecretStream.keyBytes)
        let writer = try AttachmentWriter(directory: fixture.location.attachmentsPath, blobID: blobID, key: key)
        var offset = 0
        for piece in [1, 7, Self.chunk - 8, Self.chunk + 1, Self.block, 3, Self.block + Self.chunk] where offset < content.count {
            let end = min(content.count, offset + piece)
            try writer.append(content[offset..<end])
            offset = end
        }
        try writer.append(content[offset...])
        let written = try writer.finish()
        #expect(written.size == UInt64(content.count))
        #expect(written.hash == SHA256Stream.hash(content) && written.digest == .sha256)
        let entry = AttachmentEntry(
            blobID: blobID, name: "odd", size: written.size, hash: written.hash, digest: written.digest, fileKey: key,
            addedAt: Timestamp(seconds: 0))
        #expect(try fixture.output { try AttachmentFile.read(written.temporaryPath, entry: entry, noteID: "n", to: $0) } == content)
    }

    @Test(
        """
        W2 files with another chunk size than 64 KiB (1 KiB: many chunks a block; 4 MiB: a chunk larger than a block) \
        still read
        """)
    func otherChunkSizes() throws {
        try fixture.create()
        try PrivateFiles.ensurePrivateDirectory(fixture.location.attachmentsPath)
        for (chunkSize, size) in [(1024, Self.block + 1024 * 3 + 1), (4 << 20, 2 * (4 << 20) + 5)] {
            let content = patternBytes(size, seed: UInt64(chunkSize))
            let blobID = Sodium.randomBytes(16)
            let key = SecretBytes(count: SecretStream.keyBytes)
            let written = try AttachmentFile.write(
                from: try fixture.input(content), inputName: "in", directory: fixture.location.attachmentsPath,
                blobID: blobID, key: key, chunkSize: chunkSize)
            let entry = AttachmentEntry(
                blobID: blobID, name: "c\(chunkSize)", size: written.size, hash: written.hash, digest: written.digest, fileKey: key,
                addedAt: Timestamp(seconds: 0))
            let onDisk = try AtomicFile.read(written.temporaryPath)!
            #expect(UInt64(onDisk.count) == AttachmentFile.expectedFileSize(plaintextSize: UInt64(size), chunkSize: chunkSize))
            #expect(
                try fixture.output { try AttachmentFile.read(written.temporaryPath, entry: entry, noteID: "n", to: $0) } == content,
                "chunk size \(chunkSize)")
        }
    }

    /// An attachment file in the vault's format from chunks given one by one: (plaintext size, final?), then
    /// `trailing` chunks of C + 17 random bytes (the encryptor pushes nothing after a final chunk). The entry
    /// records the size that makes the file's length the expected one.
    func craftedFile(_ chunks: [(Int, Bool)], trailing: Int = 0) throws -> (path: String, entry: AttachmentEntry) {
        try PrivateFiles.ensurePrivateDirectory(fixture.location.attachmentsPath)
        let blobID = Sodium.randomBytes(16)
        let key = SecretBytes(count: SecretStream.keyBytes)
        let ad = AttachmentFile.prefix(blobID: blobID, chunkSize: Self.chunk)
        var stream = SecretStreamEncryptor(key: key)
        var file = ad + stream.header
        var size = 0
        for (index, (count, final)) in chunks.enumerated() {
            file += stream.push(patternBytes(count, seed: UInt64(index)), final: final, additionalData: ad)
            size += count
        }
        for _ in 0..<trailing {
            file += Sodium.randomBytes(Self.sealedChunk)
            size += Self.chunk
        }
        let path = fixture.location.attachmentsPath + "/" + Hex.encode(blobID)
        try AtomicFile.write(file, to: path)
        let entry = AttachmentEntry(
            blobID: blobID, name: "crafted", size: UInt64(size), hash: [UInt8](repeating: 0, count: 32), digest: .sha256, fileKey: key,
            addedAt: Timestamp(seconds: 0))
        return (path, entry)
    }

    func corruptReason(_ path: String, _ entry: AttachmentEntry) -> String? {
        let error = starlineError {
            _ = try fixture.output { try AttachmentFile.read(path, entry: entry, noteID: "n", to: $0, checkHash: false) }
        }
        guard let error, error.code == .vaultCorrupt, error.details?["attachment"]?.stringValue == entry.name else { return nil }
        return error.details?["reason"]?.stringValue
    }

    @Test("W2 chunks swapped within a block and across a block boundary do not authenticate")
    func reorderedChunks() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "r"))
        try vault.attach(note.id, from: try fixture.input(patternBytes(2 * Self.block + 100, seed: 3)), name: "r.bin")
        let path = fixture.location.attachmentsPath + "/" + (try #require(try fixture.attachmentFiles().first))
        let original = try AtomicFile.read(path)!
        for (a, b) in [(3, 4), (AttachmentWriter.blockChunks - 1, AttachmentWriter.blockChunks)] {
            var bytes = original
            let start = { (i: Int) in Self.headBytes + i * Self.sealedChunk }
            let chunkA = Array(bytes[start(a)..<start(a + 1)])
            bytes.replaceSubrange(start(a)..<start(a + 1), with: bytes[start(b)..<start(b + 1)])
            bytes.replaceSubrange(start(b)..<start(b + 1), with: chunkA)
            try AtomicFile.write(bytes, to: path)
            let error = starlineError { _ = try fixture.output { try vault.getAttachment(note.id, name: "r.bin", to: $0) } }
            #expect(error?.code == .vaultCorrupt && error?.details?["attachment"]?.stringValue == "r.bin", "chunks \(a) and \(b) swapped")
            let reason = error?.details?["reason"]?.stringValue ?? ""
            #expect(reason.contains("chunk \(a) does not authenticate"), "chunks \(a) and \(b)")
        }
        try AtomicFile.write(original, to: path)
        #expect(
            try fixture.output { try vault.getAttachment(note.id, name: "r.bin", to: $0) } == patternBytes(2 * Self.block + 100, seed: 3))
    }

    @Test(
        """
        W2 streams of the right size but the wrong shape: no final chunk, data after the final chunk, a short chunk \
        not final
        """)
    func wrongShapes() throws {
        try fixture.create()
        let c = Self.chunk, blockChunks = AttachmentWriter.blockChunks
        // Whole blocks of non-final chunks: the stream ends without its final chunk.
        let noFinal = try craftedFile(Array(repeating: (c, false), count: blockChunks))
        #expect(corruptReason(noFinal.path, noFinal.entry)?.contains("final chunk is missing") == true)
        // The final chunk at the end of the first block, one more chunk after it in the second.
        let afterFinal = try craftedFile(Array(repeating: (c, false), count: blockChunks - 1) + [(c, true)], trailing: 1)
        #expect(corruptReason(afterFinal.path, afterFinal.entry)?.contains("data follows its final chunk") == true)
        // A short last chunk without the final tag, just past a block.
        let shortLast = try craftedFile(Array(repeating: (c, false), count: blockChunks) + [(100, false)])
        #expect(corruptReason(shortLast.path, shortLast.entry)?.contains("short chunk is not marked final") == true)
        // The same shapes made right read.
        let right = try craftedFile(Array(repeating: (c, false), count: blockChunks) + [(100, true)])
        #expect(corruptReason(right.path, right.entry) == nil)
    }

    @Test("W2 get leaves the BLAKE2b recomputation out; verify, the export and the rekey (checkHash) still compare it")
    func hashCheckedWhereAsked() throws {
        try fixture.create()
        var crafted = try craftedFile([(5000, true)])
        #expect(corruptReason(crafted.path, crafted.entry) == nil)
        let error = starlineError { try AttachmentFile.read(crafted.path, entry: crafted.entry, noteID: "n", to: nil) }
        let reason = error?.details?["reason"]?.stringValue ?? ""
        #expect(error?.code == .vaultCorrupt && reason.contains("SHA-256 hash does not match"), "\(reason)")
        crafted.entry.hash = SHA256Stream.hash(patternBytes(5000, seed: 0))
        try AttachmentFile.read(crafted.path, entry: crafted.entry, noteID: "n", to: nil)
        // An attachment recorded with BLAKE2b-256 (before SHA-256) is checked against BLAKE2b.
        crafted.entry.digest = .blake2b256
        let legacy = starlineError { try AttachmentFile.read(crafted.path, entry: crafted.entry, noteID: "n", to: nil) }
        let legacyReason = legacy?.details?["reason"]?.stringValue ?? ""
        #expect(legacy?.code == .vaultCorrupt && legacyReason.contains("BLAKE2b hash does not match"), "\(legacyReason)")
        crafted.entry.hash = GenericHash.hash(patternBytes(5000, seed: 0), length: 32)
        try AttachmentFile.read(crafted.path, entry: crafted.entry, noteID: "n", to: nil)
    }
}

/// `BlockPipeline` on its own: order, the end, failures and stopping early, threaded and inline.
@Suite("BlockPipeline: blocks in order, bounded, stoppable")
struct BlockPipelineTests {
    /// A fill over `total` bytes of a counter pattern (byte i is i % 251), failing at block `failAt`.
    final class Source: @unchecked Sendable {
        let total: Int
        let failAt: Int?
        private let lock = Locked((offset: 0, blocks: 0))
        init(total: Int, failAt: Int? = nil) { self.total = total; self.failAt = failAt }
        func fill(_ buffer: UnsafeMutableRawBufferPointer) throws(StarlineError) -> Int {
            let (start, block) = lock.withLock { s in (s.offset, s.blocks) }
            if let failAt, block == failAt { throw StarlineError(.storage, "read failed on purpose") }
            let count = min(buffer.count, total - start)
            for i in 0..<count { buffer[i] = UInt8((start + i) % 251) }
            lock.withLock { s in
                s.offset += count; s.blocks += 1
            }
            return count
        }
    }

    final class Seen: @unchecked Sendable {
        let bytes = Locked([UInt8]())
    }

    @Test(
        """
        blocks come in order and inspect sees each once before the consumer, threaded or inline, ending on or off a \
        block boundary
        """,
        arguments: [(0, false), (0, true), (100, true), (4096, true), (4096 * 5, true), (4096 * 5 + 1, true), (4096 * 5 + 1, false)])
    func inOrder(total: Int, threaded: Bool) throws {
        let source = Source(total: total)
        let seen = Seen()
        let pipeline = BlockPipeline(
            buffers: 3, bufferBytes: 4096, threaded: threaded,
            fill: { (buffer) throws(StarlineError) -> Int in try source.fill(buffer) },
            inspect: { bytes in seen.bytes.withLock { $0 += Array(bytes) } })
        defer { pipeline.close() }
        var got: [UInt8] = []
        var held: BlockPipeline.Block?
        while let block = try pipeline.next() {
            // Holding one block while asking for the next must not stall the pipeline.
            if let previous = held { got += Array(previous.bytes); pipeline.release(previous) }
            #expect(seen.bytes.withLock { $0.count } >= got.count + block.bytes.count)
            held = block
        }
        if let held { got += Array(held.bytes) }
        let expected = (0..<total).map { UInt8($0 % 251) }
        #expect(got == expected)
        #expect(seen.bytes.withLock { $0 } == expected)
    }

    @Test("a failing fill: the blocks before it arrive, then its error", arguments: [false, true])
    func failure(threaded: Bool) throws {
        let source = Source(total: 1 << 20, failAt: 2)
        let pipeline = BlockPipeline(
            buffers: 3, bufferBytes: 4096, threaded: threaded,
            fill: { (buffer) throws(StarlineError) -> Int in try source.fill(buffer) }, inspect: { _ in })
        defer { pipeline.close() }
        var blocks = 0
        let error = starlineError {
            while let block = try pipeline.next() {
                blocks += 1
                pipeline.release(block)
            }
        }
        #expect(blocks == 2)
        #expect(error?.code == .storage)
    }

    @Test("a consumer that stops early closes the pipeline while its reader still has input (no hang)")
    func stopEarly() throws {
        let source = Source(total: Int.max / 2)
        let finished = Locked(false)
        WorkerThreads.detach {
            let pipeline = BlockPipeline(
                buffers: 3, bufferBytes: 4096, threaded: true,
                fill: { (buffer) throws(StarlineError) -> Int in try source.fill(buffer) }, inspect: { _ in })
            _ = try? pipeline.next()
            pipeline.close()
            finished.withLockNotifying { $0 = true }
        }
        let deadline = MonotonicClock.nanoseconds() + 30_000_000_000
        #expect(finished.await(deadline: deadline) { $0 ? true : nil } == true)
    }
}
