import Glibc
import StarlineCore
import StarlineCrypto

/// Writes one attachment file (`AttachmentFile` layout) to a temporary file in the attachments directory:
/// bytes are appended in any amounts, encrypted and written a chunk at a time, and `finish` syncs the file
/// and hands back its path, plaintext size and BLAKE2b-256. The caller renames it into place under the
/// vault's lock. A writer dropped without `finish` removes its file.
///
/// Every chunk but the last holds exactly C plaintext bytes, so a reader splits the file without lengths;
/// a full chunk is therefore held back until more bytes arrive or `finish` marks it final.
final class AttachmentWriter {
    struct Written {
        var temporaryPath: String
        var size: UInt64
        var hash: [UInt8]
    }

    let temporaryPath: String
    private let fd: Int32
    private let slot: Int32
    private let ad: [UInt8]
    private let chunkSize: Int
    private var stream: SecretStreamEncryptor
    private var hasher = GenericHashStream(length: 32)
    private var pending: [UInt8] = []
    private var size: UInt64 = 0
    private var done = false

    init(directory: String, blobID: [UInt8], key: SecretBytes, chunkSize: Int = AttachmentFile.defaultChunkSize) throws(StarlineError) {
        let temp = "\(directory)/.tmp-\(getpid())-\(Hex.encode(Sodium.randomBytes(8)))"
        // Tracked before it exists, so a signal removes it whenever it comes (Interrupts).
        slot = Interrupts.track(temp)
        do {
            fd = try PrivateFiles.openNoFollow(temp, O_CREAT | O_EXCL | O_WRONLY, mode: 0o600, what: "attachment file", action: "cannot write")
        } catch {
            Interrupts.untrack(slot)
            throw error
        }
        temporaryPath = temp
        self.chunkSize = chunkSize
        ad = AttachmentFile.prefix(blobID: blobID, chunkSize: chunkSize)
        stream = SecretStreamEncryptor(key: key)
        pending.reserveCapacity(chunkSize * 2)
        try output(ad + stream.header)
    }

    deinit {
        Sodium.wipe(&pending)
        if !done {
            close(fd)
            unlink(temporaryPath)
        }
        Interrupts.untrack(slot)
    }

    func append(_ bytes: ArraySlice<UInt8>) throws(StarlineError) {
        precondition(!done, "AttachmentWriter.append after finish")
        hasher.update(bytes)
        size += UInt64(bytes.count)
        pending.append(contentsOf: bytes)
        // Strictly more than one chunk: the last full chunk waits to learn whether it is the final one.
        var start = 0
        while pending.count - start > chunkSize {
            try push(pending[start..<start + chunkSize], final: false)
            start += chunkSize
        }
        if start > 0 {
            let rest = Array(pending[start...])
            Sodium.wipe(&pending)
            pending = rest
        }
    }

    /// Pushes the last chunk as final, syncs and closes the file.
    func finish() throws(StarlineError) -> Written {
        precondition(!done, "AttachmentWriter.finish called twice")
        try push(pending[...], final: true)
        Sodium.wipe(&pending)
        if fsync(fd) != 0 { throw AttachmentFile.posixStorageError("cannot write", temporaryPath) }
        done = true
        if close(fd) != 0 {
            unlink(temporaryPath)
            throw AttachmentFile.posixStorageError("cannot write", temporaryPath)
        }
        return Written(temporaryPath: temporaryPath, size: size, hash: hasher.finalize())
    }

    private func push(_ chunk: ArraySlice<UInt8>, final: Bool) throws(StarlineError) {
        var plain = Array(chunk)
        defer { Sodium.wipe(&plain) }
        try output(stream.push(plain, final: final, additionalData: ad))
    }

    private func output(_ bytes: [UInt8]) throws(StarlineError) {
        guard bytes.withUnsafeBytes({ FileBytes.write(fd: fd, $0) }) else { throw AttachmentFile.posixStorageError("cannot write", temporaryPath) }
    }
}
