import Glibc
import StarlineCore
import StarlineCrypto

/// Writes one attachment file (`AttachmentFile` layout) to a temporary file in the attachments directory:
/// bytes are appended in any amounts, encrypted a block of chunks at a time into one reused buffer and
/// written with one `write`, and `finish` syncs the file and hands back its path, plaintext size and
/// SHA-256 (`AttachmentDigest`). The caller renames it into place under the vault's lock. A writer dropped without `finish`
/// removes its file.
///
/// Every chunk but the last holds exactly C plaintext bytes, so a reader splits the file without lengths;
/// a full block is therefore held back until more bytes arrive or `finish` marks its last chunk final.
/// `AttachmentFile.write` drives `seal` and `finish(final:size:hash:)` directly, from a `BlockPipeline`
/// that reads and hashes on another thread.
final class AttachmentWriter {
    struct Written {
        var temporaryPath: String
        var size: UInt64
        var hash: [UInt8]
        var digest: AttachmentDigest { AttachmentWriter.digest }
    }

    /// The digest every attachment is written with now (`AttachmentDigest`).
    static let digest = AttachmentDigest.sha256

    /// Plaintext chunks sealed per `write`: 16 × 64 KiB, so a large file is written in ~1 MiB calls.
    static let blockChunks = 16

    let temporaryPath: String
    /// The plaintext bytes of one block (`blockChunks` chunks): what `seal` takes at most.
    let blockBytes: Int
    private let fd: Int32
    private let slot: Int32
    private let ad: [UInt8]
    private let chunkSize: Int
    private var stream: SecretStreamEncryptor
    /// `append`'s digest, made on the first `append` (`AttachmentFile.write` digests on its own thread).
    private lazy var hasher = AttachmentHasher(Self.digest)
    /// `append`'s plaintext block, allocated on the first `append`; wiped when freed.
    private var pending: UnsafeMutableRawBufferPointer?
    private var pendingCount = 0
    private let sealed: UnsafeMutableRawBufferPointer
    private var size: UInt64 = 0
    private var done = false
    /// Bytes written to the file, and how far writeback was asked to start (`startWriteback`).
    private var fileOffset = 0
    private var writebackOffset = 0
    /// Writeback is started every this many bytes written.
    static let writebackStride = 8 << 20

    init(directory: String, blobID: [UInt8], key: SecretBytes, chunkSize: Int = AttachmentFile.defaultChunkSize) throws(StarlineError) {
        let temp = "\(directory)/.tmp-\(getpid())-\(Hex.encode(Sodium.randomBytes(8)))"
        // Tracked before it exists, so a signal removes it whenever it comes (Interrupts).
        slot = Interrupts.track(temp)
        do {
            fd = try PrivateFiles.openNoFollow(
                temp, O_CREAT | O_EXCL | O_WRONLY, mode: 0o600, what: "attachment file", action: "cannot write")
        } catch {
            Interrupts.untrack(slot)
            throw error
        }
        temporaryPath = temp
        self.chunkSize = chunkSize
        let chunks = Swift.max(1, Self.blockChunks * AttachmentFile.defaultChunkSize / chunkSize)
        blockBytes = chunks * chunkSize
        sealed = .allocate(byteCount: chunks * (chunkSize + SecretStream.abytes), alignment: 64)
        ad = AttachmentFile.prefix(blobID: blobID, chunkSize: chunkSize)
        stream = SecretStreamEncryptor(key: key)
        try output(ad + stream.header)
    }

    deinit {
        if let pending {
            Sodium.wipe(pending)
            pending.deallocate()
        }
        sealed.deallocate()
        if !done {
            close(fd)
            unlink(temporaryPath)
        }
        Interrupts.untrack(slot)
    }

    func append(_ bytes: ArraySlice<UInt8>) throws(StarlineError) {
        // withUnsafeBytes rethrows `any Error`; a Result keeps the error typed.
        try bytes.withUnsafeBytes { raw in Result { () throws(StarlineError) in try append(raw) } }.get()
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws(StarlineError) {
        precondition(!done, "AttachmentWriter.append after finish")
        hasher.update(bytes)
        size += UInt64(bytes.count)
        let block = pendingBlock()
        var offset = 0
        while offset < bytes.count {
            // A full block is sealed only now that more bytes follow it: until then it may hold the final chunk.
            if pendingCount == block.count {
                try seal(UnsafeRawBufferPointer(block), final: false)
                pendingCount = 0
            }
            let n = Swift.min(bytes.count - offset, block.count - pendingCount)
            (block.baseAddress! + pendingCount).copyMemory(from: bytes.baseAddress! + offset, byteCount: n)
            pendingCount += n
            offset += n
        }
    }

    /// Seals what `append` holds (its last chunk final), syncs and closes the file.
    func finish() throws(StarlineError) -> Written {
        let block = pendingBlock()
        return try finish(final: UnsafeRawBufferPointer(rebasing: block[0..<pendingCount]), size: size, hash: hasher.finalize())
    }

    /// Seals `final` (at most `blockBytes`; its last chunk gets the FINAL tag, and an empty one is the empty
    /// final chunk of an empty attachment), then syncs and closes the file: one fsync for the whole file,
    /// before the caller renames it into place and commits. `size` and `hash` describe all the plaintext.
    func finish(final: UnsafeRawBufferPointer, size: UInt64, hash: [UInt8]) throws(StarlineError) -> Written {
        precondition(!done, "AttachmentWriter.finish called twice")
        try seal(final, final: true)
        if let pending { Sodium.wipe(pending) }
        if fsync(fd) != 0 { throw AttachmentFile.posixStorageError("cannot write", temporaryPath) }
        done = true
        if close(fd) != 0 {
            unlink(temporaryPath)
            throw AttachmentFile.posixStorageError("cannot write", temporaryPath)
        }
        return Written(temporaryPath: temporaryPath, size: size, hash: hash)
    }

    /// Encrypts `plain` (at most `blockBytes`) chunk by chunk into the sealed buffer and writes it with one
    /// call. Unless `final`, `plain` is whole chunks and none is the last; with `final` its last chunk (or
    /// one empty chunk) gets the FINAL tag.
    func seal(_ plain: UnsafeRawBufferPointer, final: Bool) throws(StarlineError) {
        precondition(
            !done && plain.count <= blockBytes && (final || (plain.count > 0 && plain.count % chunkSize == 0)),
            "AttachmentWriter.seal: not whole chunks")
        var offset = 0
        var out = 0
        ad.withUnsafeBytes { adBytes in
            repeat {
                let n = Swift.min(chunkSize, plain.count - offset)
                let chunk = UnsafeRawBufferPointer(rebasing: plain[offset..<offset + n])
                offset += n
                out += stream.push(chunk, into: sealed.baseAddress! + out, final: final && offset == plain.count, additionalData: adBytes)
            } while offset < plain.count
        }
        try output(UnsafeRawBufferPointer(rebasing: sealed[0..<out]))
    }

    private func pendingBlock() -> UnsafeMutableRawBufferPointer {
        if let pending { return pending }
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: blockBytes, alignment: 64)
        pending = block
        return block
    }

    private func output(_ bytes: [UInt8]) throws(StarlineError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(StarlineError) in try output(raw) } }.get()
    }

    private func output(_ bytes: UnsafeRawBufferPointer) throws(StarlineError) {
        guard FileBytes.write(fd: fd, bytes) else { throw AttachmentFile.posixStorageError("cannot write", temporaryPath) }
        fileOffset += bytes.count
        if fileOffset - writebackOffset >= Self.writebackStride { startWriteback() }
    }

    /// Starts writing the pages written since the last call to the disk now, so the one fsync in `finish`
    /// finds little left to do instead of a whole large file (on ext4, 256 MiB: fsync ~0.1 s → ~5 ms).
    /// Durability still comes from that fsync; this only moves the disk's work to while we encrypt.
    /// On Linux, POSIX_FADV_DONTNEED "initiates writeback of dirty pages in the range" (WB_SYNC_NONE: it
    /// does not wait) and then drops the range's clean pages (an encrypted file we will not read back soon;
    /// tmpfs pages are never clean, so nothing is lost there). `sync_file_range` would do only the first
    /// part, but the Glibc module does not declare it (_GNU_SOURCE). Advice that fails changes nothing.
    private func startWriteback() {
        _ = posix_fadvise(fd, off_t(writebackOffset), off_t(fileOffset - writebackOffset), POSIX_FADV_DONTNEED)
        writebackOffset = fileOffset
    }
}
