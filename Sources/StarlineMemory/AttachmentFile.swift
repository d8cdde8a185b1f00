import Glibc
import StarlineCore
import StarlineCrypto

/// An attachment file, `attachments/<blob id>`: a secretstream (XChaCha20-Poly1305) under the attachment's
/// own random key, which only its sealed note holds. Layout (`docs/formats.md`):
///
///     "SLMATTCH" · u16 version (1) · blob id (16) · u32 chunk size C · secretstream header (24)
///     chunks of C plaintext bytes + 17, the last one (0…C bytes, tag FINAL) shorter or equal
///
/// The 30-byte prefix before the secretstream header is the additional data of every chunk, so a file
/// renamed to another blob id, or with another chunk size, does not authenticate. Files are streamed in
/// both directions a block of chunks (~1 MiB) at a time, whatever their size, and never rewritten: a new key
/// or new content is a new blob id.
enum AttachmentFile {
    static let magic = Array("SLMATTCH".utf8)
    static let formatVersion: UInt16 = 1
    static let defaultChunkSize = 64 * 1024

    static func prefix(blobID: [UInt8], chunkSize: Int) -> [UInt8] {
        var w = ByteWriter()
        w.raw(magic)
        w.u16(formatVersion)
        w.raw(blobID)
        w.u32(UInt32(chunkSize))
        return w.bytes
    }

    /// The file size an attachment of `size` plaintext bytes has: the prefix, the stream header, and 17
    /// bytes of tag per chunk (at least one chunk: an empty attachment is one empty final chunk).
    static func expectedFileSize(plaintextSize size: UInt64, chunkSize: Int) -> UInt64 {
        let c = UInt64(chunkSize)
        let chunks = size == 0 ? 1 : (size + c - 1) / c
        return UInt64(prefix(blobID: [UInt8](repeating: 0, count: 16), chunkSize: chunkSize).count + SecretStream.headerBytes)
            + size + chunks * UInt64(SecretStream.abytes)
    }

    /// Encrypts everything readable from `input` into a new temporary file in `directory` (see
    /// `AttachmentWriter`). A regular file is read on one thread and hashed on another (`BlockPipeline`) while
    /// this one encrypts and writes the blocks before; a pipe or terminal is read and hashed on this thread.
    /// Memory is a few blocks of ~1 MiB whatever the size.
    static func write(
        from input: Int32, inputName: String, directory: String, blobID: [UInt8], key: SecretBytes,
        chunkSize: Int = defaultChunkSize
    ) throws(StarlineError) -> AttachmentWriter.Written {
        let writer = try AttachmentWriter(directory: directory, blobID: blobID, key: key, chunkSize: chunkSize)
        var info = stat()
        let regular = fstat(input, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
        let hasher = AttachmentHasher(AttachmentWriter.digest, expectedBytes: regular ? Int(info.st_size) : nil)
        // The digest is the slowest stage (SHA-256 about as slow as the encryption), so it gets a thread of its own.
        let pipeline = BlockPipeline(
            buffers: 4, bufferBytes: writer.blockBytes, threaded: regular,
            fill: { (buffer) throws(StarlineError) -> Int in try readFull(input, into: buffer, name: inputName) },
            inspect: { plain in hasher.update(plain) })
        defer { pipeline.close() }
        var size: UInt64 = 0
        // The last block read is held until the next one (or the end) shows whether it holds the final chunk.
        var held: BlockPipeline.Block?
        while let block = try pipeline.next() {
            if let previous = held {
                try writer.seal(UnsafeRawBufferPointer(previous.bytes), final: false)
                pipeline.release(previous)
            }
            size += UInt64(block.bytes.count)
            held = block
        }
        // Every block was hashed before the consumer got it, and the threads have stopped: the hash is complete.
        pipeline.close()
        let last = held.map { UnsafeRawBufferPointer($0.bytes) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
        return try writer.finish(final: last, size: size, hash: hasher.finalize())
    }

    /// Decrypts the attachment file at `path` into `output` (nil: only check it) and checks its size and, with
    /// `checkHash`, the digest the note records (SHA-256, or BLAKE2b-256). Any mismatch, a truncated or altered file, or a
    /// missing one is VAULT_CORRUPT naming the attachment; plaintext already written to `output` before the
    /// failure must be discarded by the caller (a command writing to a file writes a temporary one).
    static func read(_ path: String, entry: AttachmentEntry, noteID: String, to output: Int32?, checkHash: Bool = true)
        throws(StarlineError)
    {
        try readBlocks(path, entry: entry, noteID: noteID, checkHash: checkHash) { (plain) throws(StarlineError) in
            guard let output, !FileBytes.write(fd: output, plain) else { return }
            let e = errno
            throw StarlineError(
                .writeFailed, "cannot write attachment '\(entry.name)': \(String(cString: strerror(e)))",
                details: .object([("attachment", .string(entry.name)), ("errno", .int(Int64(e)))]))
        }
    }

    /// `read` with its digest check, handing each verified block of plaintext to `sink` as an array (wiped
    /// after the call): the export and the rekey take it this way.
    static func read(
        _ path: String, entry: AttachmentEntry, noteID: String,
        sink: ([UInt8]) throws(StarlineError) -> Void
    ) throws(StarlineError) {
        try readBlocks(path, entry: entry, noteID: noteID, checkHash: true) { (plain) throws(StarlineError) in
            var copy = Array(plain)
            defer { Sodium.wipe(&copy) }
            try sink(copy)
        }
    }

    /// Decrypts the file a block of chunks at a time (read on a second thread, `BlockPipeline`), handing each
    /// block's plaintext to `sink` once all its chunks authenticated (the buffer is reused, then wiped).
    ///
    /// Every byte is authenticated by its chunk's Poly1305 tag under the file key, which only the sealed note
    /// holds; the chunk order, the final chunk coming last and nothing after it are checked, then the size.
    /// `checkHash` also recomputes the recorded digest of the plaintext: a second check of the same bytes
    /// that `verify`, the export and the rekey make, and that `get` leaves out (a pass as costly as the
    /// decryption itself).
    static func readBlocks(
        _ path: String, entry: AttachmentEntry, noteID: String, checkHash: Bool,
        sink: (UnsafeRawBufferPointer) throws(StarlineError) -> Void
    ) throws(StarlineError) {
        func corrupt(_ reason: String) -> StarlineError {
            VaultErrors.corruptAttachment(entry.name, record: noteID, file: path, reason)
        }
        let fd = try PrivateFiles.openNoFollow(path, O_RDONLY, what: "attachment file", action: "cannot read", missingIsNil: true)
        if fd < 0 { throw corrupt("its file is missing") }
        defer { close(fd) }
        let prefixCount = prefix(blobID: entry.blobID, chunkSize: 0).count
        var head = [UInt8](repeating: 0, count: prefixCount + SecretStream.headerBytes)
        let headCount = try head.withUnsafeMutableBytes { raw in
            Result { () throws(StarlineError) in try readFull(fd, into: raw, name: path) }
        }.get()
        guard headCount == head.count else { throw corrupt("the file is truncated (\(headCount) bytes)") }
        // The chunk size is the file's own (the last field of the prefix); the prefix is authenticated with
        // every chunk, so a changed size fails there.
        var sizeReader = ByteReader(Array(head[(prefixCount - 4)..<prefixCount]))
        let chunkSize = Int((try? sizeReader.u32()) ?? 0)
        let ad = prefix(blobID: entry.blobID, chunkSize: chunkSize)
        guard (1024...(16 << 20)).contains(chunkSize), Array(head[0..<prefixCount]) == ad else {
            throw corrupt("the file is not this attachment's (its prefix names another blob, version or chunk size)")
        }
        var info = stat()
        let expected = expectedFileSize(plaintextSize: entry.size, chunkSize: chunkSize)
        if fstat(fd, &info) == 0, UInt64(info.st_size) != expected {
            throw corrupt(
                "the file has \(info.st_size) bytes, \(UInt64(info.st_size) < expected ? "truncated from" : "more than") the \(expected) it should have"
            )
        }
        var stream: SecretStreamDecryptor
        do {
            stream = try SecretStreamDecryptor(key: entry.fileKey, header: Array(head[ad.count...]))
        } catch {
            throw corrupt("its stream header is invalid")
        }
        let sealedChunk = chunkSize + SecretStream.abytes
        let chunks = Swift.max(1, AttachmentWriter.blockChunks * defaultChunkSize / chunkSize)
        let plain = UnsafeMutableRawBufferPointer.allocate(byteCount: chunks * chunkSize, alignment: 64)
        let adBytes = UnsafeMutableRawBufferPointer.allocate(byteCount: ad.count, alignment: 1)
        adBytes.copyBytes(from: ad)
        defer {
            Sodium.wipe(plain)
            plain.deallocate()
            adBytes.deallocate()
        }
        // Declared after `defer { close(fd) }`, so the reader stops before the descriptor closes.
        let pipeline = BlockPipeline(
            buffers: 3, bufferBytes: chunks * sealedChunk, threaded: true,
            fill: { (buffer) throws(StarlineError) -> Int in try readFull(fd, into: buffer, name: path) })
        defer { pipeline.close() }
        let hasher = checkHash ? AttachmentHasher(entry.digest, expectedBytes: Int(clamping: entry.size)) : nil
        var size: UInt64 = 0
        var index: UInt64 = 0
        while let block = try pipeline.next() {
            var offset = 0
            var produced = 0
            while offset < block.bytes.count {
                if stream.sawFinal { throw corrupt("data follows its final chunk") }
                let n = Swift.min(sealedChunk, block.bytes.count - offset)
                let chunk = UnsafeRawBufferPointer(rebasing: block.bytes[offset..<offset + n])
                let pulled: (count: Int, isFinal: Bool)
                do {
                    pulled = try stream.pull(chunk, into: plain.baseAddress! + produced, additionalData: UnsafeRawBufferPointer(adBytes))
                } catch {
                    throw corrupt("chunk \(index) does not authenticate (altered, reordered or from another file)")
                }
                if !pulled.isFinal && n < sealedChunk { throw corrupt("a short chunk is not marked final (truncated)") }
                offset += n
                produced += pulled.count
                index += 1
            }
            pipeline.release(block)
            let verified = UnsafeRawBufferPointer(rebasing: plain[0..<produced])
            hasher?.update(verified)
            size += UInt64(produced)
            try sink(verified)
        }
        do { try stream.finish() } catch { throw corrupt("it is truncated: the final chunk is missing") }
        guard size == entry.size else { throw corrupt("it holds \(size) bytes, the record says \(entry.size)") }
        if let hasher {
            guard Sodium.constantTimeEquals(hasher.finalize(), entry.hash) else {
                throw corrupt("its \(entry.digest.displayName) hash does not match the record")
            }
        }
    }

    /// Reads until `buffer` is full or the input ends; returns the byte count.
    static func readFull(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, name: String) throws(StarlineError) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var used = 0
        let total = buffer.count
        while used < total {
            let n = Glibc.read(fd, base + used, total - used)
            if n < 0 {
                if errno == EINTR { continue }
                throw posixStorageError("cannot read", name)
            }
            if n == 0 { break }
            used += n
        }
        return used
    }

    static func posixStorageError(_ action: String, _ path: String) -> StarlineError {
        let e = errno
        return StarlineError(
            .storage, "\(action) \(path): \(String(cString: strerror(e)))",
            details: .object([("path", .string(path)), ("errno", .int(Int64(e)))]))
    }
}
