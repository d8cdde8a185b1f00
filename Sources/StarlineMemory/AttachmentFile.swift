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
/// both directions with one chunk in memory, whatever their size, and never rewritten: a new key or new
/// content is a new blob id.
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
    /// `AttachmentWriter`), one chunk in memory at a time.
    static func write(from input: Int32, inputName: String, directory: String, blobID: [UInt8], key: SecretBytes,
                      chunkSize: Int = defaultChunkSize) throws(StarlineError) -> AttachmentWriter.Written {
        let writer = try AttachmentWriter(directory: directory, blobID: blobID, key: key, chunkSize: chunkSize)
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        defer { Sodium.wipe(&buffer) }
        while true {
            let n = try readFull(input, into: &buffer, name: inputName)
            if n == 0 { break }
            try writer.append(buffer[0..<n])
        }
        return try writer.finish()
    }

    /// Decrypts the attachment file at `path` into `output` (nil: only check it), chunk by chunk, and checks
    /// its size and BLAKE2b-256 against the note's record. Any mismatch, a truncated or altered file, or a
    /// missing one is VAULT_CORRUPT naming the attachment; plaintext already written to `output` before the
    /// failure must be discarded by the caller (a command writing to a file writes a temporary one).
    static func read(_ path: String, entry: AttachmentEntry, noteID: String, to output: Int32?) throws(StarlineError) {
        try read(path, entry: entry, noteID: noteID) { (plain) throws(StarlineError) in
            guard let output, !plain.withUnsafeBytes({ FileBytes.write(fd: output, $0) }) else { return }
            let e = errno
            throw StarlineError(.writeFailed, "cannot write attachment '\(entry.name)': \(String(cString: strerror(e)))",
                                details: .object([("attachment", .string(entry.name)), ("errno", .int(Int64(e)))]))
        }
    }

    /// `read`, handing each verified plaintext chunk to `sink` (the buffer is wiped after the call).
    static func read(_ path: String, entry: AttachmentEntry, noteID: String,
                     sink: ([UInt8]) throws(StarlineError) -> Void) throws(StarlineError) {
        func corrupt(_ reason: String) -> StarlineError {
            VaultErrors.corruptAttachment(entry.name, record: noteID, file: path, reason)
        }
        let fd = try PrivateFiles.openNoFollow(path, O_RDONLY, what: "attachment file", action: "cannot read", missingIsNil: true)
        if fd < 0 { throw corrupt("its file is missing") }
        defer { close(fd) }
        let prefixCount = prefix(blobID: entry.blobID, chunkSize: 0).count
        var head = [UInt8](repeating: 0, count: prefixCount + SecretStream.headerBytes)
        let headCount = try readFull(fd, into: &head, name: path)
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
            throw corrupt("the file has \(info.st_size) bytes, \(UInt64(info.st_size) < expected ? "truncated from" : "more than") the \(expected) it should have")
        }
        var stream: SecretStreamDecryptor
        do {
            stream = try SecretStreamDecryptor(key: entry.fileKey, header: Array(head[ad.count...]))
        } catch {
            throw corrupt("its stream header is invalid")
        }
        var hasher = GenericHashStream(length: 32)
        var size: UInt64 = 0
        var buffer = [UInt8](repeating: 0, count: chunkSize + SecretStream.abytes)
        while true {
            let n = try readFull(fd, into: &buffer, name: path)
            if n == 0 { break }
            var plain: [UInt8]
            let isFinal: Bool
            do {
                (plain, isFinal) = try stream.pull(Array(buffer[0..<n]), additionalData: ad)
            } catch {
                throw corrupt("chunk \(size / UInt64(chunkSize)) does not authenticate (altered, reordered or from another file)")
            }
            hasher.update(plain)
            size += UInt64(plain.count)
            defer { Sodium.wipe(&plain) }
            try sink(plain)
            if isFinal {
                if try readFull(fd, into: &buffer, name: path) != 0 { throw corrupt("data follows its final chunk") }
                break
            }
            if n < buffer.count { throw corrupt("a short chunk is not marked final (truncated)") }
        }
        Sodium.wipe(&buffer)
        do { try stream.finish() } catch { throw corrupt("it is truncated: the final chunk is missing") }
        guard size == entry.size else { throw corrupt("it holds \(size) bytes, the record says \(entry.size)") }
        guard Sodium.constantTimeEquals(hasher.finalize(), entry.hash) else { throw corrupt("its BLAKE2b hash does not match the record") }
    }

    /// Reads until `buffer` is full or the input ends; returns the byte count.
    static func readFull(_ fd: Int32, into buffer: inout [UInt8], name: String) throws(StarlineError) -> Int {
        var used = 0
        let total = buffer.count
        while used < total {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + used, total - used) }
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
        return StarlineError(.storage, "\(action) \(path): \(String(cString: strerror(e)))",
                             details: .object([("path", .string(path)), ("errno", .int(Int64(e)))]))
    }
}
