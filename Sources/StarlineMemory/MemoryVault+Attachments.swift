import Glibc
import StarlineCore
import StarlineCrypto

extension MemoryVault {
    /// Longest attachment name, in UTF-8 bytes.
    public static let maxAttachmentNameBytes = 1024

    /// Streams everything readable from `input` into a new attachment `name` of the note (the version goes
    /// up by one), with constant memory whatever its size. The file is written and synced before the
    /// change's transaction and renamed into place inside it; if the change does not commit, it is removed.
    /// `replace` swaps an attachment of the same name (its old file is removed after COMMIT); without it a
    /// taken name is USAGE.
    @discardableResult
    public func attach(
        _ id: String, from input: Int32, name: String, inputName: String = "the input",
        replace: Bool = false
    ) throws -> MemoryNote {
        let blobID = Sodium.randomBytes(16)
        let fileKey = SecretBytes(count: SecretStream.keyBytes)
        return try attach(id, name: name, replace: replace, blobID: blobID, fileKey: fileKey) {
            try AttachmentFile.write(from: input, inputName: inputName, directory: location.attachmentsPath, blobID: blobID, key: fileKey)
        }
    }

    /// `attach` with the file made by `produce` (an `AttachmentWriter` for `blobID` under `fileKey`, in the
    /// attachments directory): the import streams decoded chunks into one of its own.
    func attach(
        _ id: String, name: String, replace: Bool = false, blobID: [UInt8], fileKey: SecretBytes,
        produce: () throws -> AttachmentWriter.Written
    ) throws -> MemoryNote {
        guard !name.isEmpty, name.utf8.count <= Self.maxAttachmentNameBytes, !name.unicodeScalars.contains(where: { $0.value < 0x20 })
        else {
            throw StarlineError(
                .usage, "an attachment name must be 1 to \(Self.maxAttachmentNameBytes) bytes without control characters",
                details: .object([("name", .string(name))]))
        }
        // Fail before streaming a large input into a note that does not exist or a name that is taken.
        let target = try show(id)
        if !replace, target.attachments.contains(where: { $0.name == name }) { throw nameTaken(name, target.id) }

        try PrivateFiles.ensurePrivateDirectory(location.attachmentsPath)
        let written = try produce()
        var renamed = false
        do {
            try faults.crashIf(.afterAttachmentWrite)
            let time = now()
            return try write("attach a file in the memory vault") { change in
                let row = try resolveRow(change.db, target.id)
                var p = try payload(row, manifest: change.manifest)
                if let old = p.attachments.firstIndex(where: { $0.name == name }) {
                    guard replace else { throw nameTaken(name, row.id) }
                    change.obsoleteFiles.append(location.blobPath(p.attachments[old].blobName))
                    p.attachments.remove(at: old)
                }
                let entry = AttachmentEntry(
                    blobID: blobID, name: name, size: written.size, hash: written.hash, digest: written.digest, fileKey: fileKey,
                    addedAt: time)
                try place(written.temporaryPath, as: entry, in: change)
                renamed = true
                p.attachments.append(entry)
                p.updatedAt = time
                try put(change, id: row.id, version: row.version + 1, p)
                return p.note(id: row.id, version: row.version + 1)
            }
        } catch {
            if !renamed && !VaultFaults.isCrash(error) { unlink(written.temporaryPath) }
            throw error
        }
    }

    /// Streams attachment `name` of the note, decrypted, to `output`, authenticating every chunk and checking
    /// the size; VAULT_CORRUPT naming the attachment on any mismatch (the bytes written before it are not to
    /// be used). The recorded BLAKE2b is not recomputed here: the chunks' tags under the file key, which only
    /// the sealed note holds, already prove every byte (`verify` and the export still compare it). Returns
    /// what the note says about the attachment.
    @discardableResult
    public func getAttachment(_ id: String, name: String, to output: Int32) throws -> MemoryAttachment {
        let (noteID, entry) = try attachmentEntry(id, name: name)
        // Outside the read transaction: a file is never rewritten in place, so streaming needs no snapshot.
        try AttachmentFile.read(location.blobPath(entry.blobName), entry: entry, noteID: noteID, to: output, checkHash: false)
        return entry.info
    }

    /// `getAttachment` with the BLAKE2b check, handing each verified block of plaintext to `sink` (the export
    /// encrypts them again).
    func getAttachment(_ id: String, name: String, sink: ([UInt8]) throws(StarlineError) -> Void) throws -> MemoryAttachment {
        let (noteID, entry) = try attachmentEntry(id, name: name)
        try AttachmentFile.read(location.blobPath(entry.blobName), entry: entry, noteID: noteID, sink: sink)
        return entry.info
    }

    private func attachmentEntry(_ id: String, name: String) throws -> (noteID: String, entry: AttachmentEntry) {
        try read { db, check -> (String, AttachmentEntry) in
            let row = try resolveRow(db, id)
            let p = try payload(row, checkedBy: check)
            guard let entry = p.attachments.first(where: { $0.name == name }) else {
                throw StarlineError(
                    .notFound, "note \(row.id) has no attachment named '\(name)'",
                    details: .object([("id", .string(row.id)), ("attachment", .string(name))]))
            }
            return (row.id, entry)
        }
    }

    /// Gives a synced temporary file its blob name, inside the change's transaction (under the flock, so
    /// leftover removal never sees it unreferenced), and syncs the directory so the name is durable
    /// before COMMIT.
    func place(_ temporaryPath: String, as entry: AttachmentEntry, in change: VaultChange) throws {
        let final = location.blobPath(entry.blobName)
        if rename(temporaryPath, final) != 0 { throw AttachmentFile.posixStorageError("cannot rename into place", final) }
        change.placedFiles.append(final)
        let dir = Glibc.open(location.attachmentsPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            defer { close(dir) }
            if fsync(dir) != 0 && errno != EINVAL { throw AttachmentFile.posixStorageError("cannot sync", location.attachmentsPath) }
        }
    }

    private func nameTaken(_ name: String, _ id: String) -> StarlineError {
        StarlineError(
            .usage, "note \(id) already has an attachment named '\(name)' (replace it explicitly)",
            details: .object([("id", .string(id)), ("attachment", .string(name))]))
    }
}
