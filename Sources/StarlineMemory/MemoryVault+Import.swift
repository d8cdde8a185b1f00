import Glibc
import StarlineCore
import StarlineCrypto

/// The notes an import adds, all in one change of the vault (`MemoryVault.importing`): every note, its
/// search tokens and its attachment files go into one transaction whose manifest is sealed once, at the end.
/// Nothing of it is visible, and nothing stays, unless the whole body returns — a package that turns out
/// damaged at its last byte adds nothing. Time is linear in the package: per note one row and its tokens,
/// no manifest rewrite and no sync (one per note made a 4,000-note import take 48 s).
public final class VaultImport {
    let vault: MemoryVault
    let change: VaultChange
    /// When the import's attachments were added (the package does not carry it).
    let time: Timestamp
    private var placedAny = false

    init(vault: MemoryVault, change: VaultChange, time: Timestamp) {
        self.vault = vault
        self.change = change
        self.time = time
    }

    /// A new attachment file (in the attachments directory, under a temporary name) for the note being read.
    func attachmentWriter(blobID: [UInt8], key: SecretBytes) throws(StarlineError) -> AttachmentWriter {
        try AttachmentWriter(directory: vault.location.attachmentsPath, blobID: blobID, key: key)
    }

    /// Gives a written (synced) attachment file its blob name. Inside the change, under the vault's flock:
    /// leftover removal never takes it, and if the change does not commit it is removed again
    /// (`placedFiles`); a process killed before COMMIT leaves an unreferenced file the next change removes.
    func place(_ written: AttachmentWriter.Written, blobID: [UInt8]) throws {
        let final = vault.location.blobPath(Hex.encode(blobID))
        if rename(written.temporaryPath, final) != 0 { throw AttachmentFile.posixStorageError("cannot rename into place", final) }
        change.placedFiles.append(final)
        placedAny = true
    }

    /// Adds a note at version 1 with its times from the package and attachments already placed.
    func add(_ draft: NoteDraft, attachments: [AttachmentEntry]) throws {
        let id = NoteID.make()
        let created = draft.createdAt ?? time
        let payload = NotePayload(
            createdAt: created, updatedAt: draft.updatedAt ?? created, title: draft.title, body: draft.body,
            tags: MemoryVault.normalizedTags(draft.tags), attachments: attachments)
        try vault.put(change, id: id, version: 1, payload)
    }

    /// The attachment entry of a placed file.
    func entry(blobID: [UInt8], name: String, written: AttachmentWriter.Written, key: SecretBytes) -> AttachmentEntry {
        AttachmentEntry(
            blobID: blobID, name: name, size: written.size, hash: written.hash, digest: written.digest, fileKey: key, addedAt: time)
    }

    /// One directory sync for every name placed, before COMMIT (not one per attachment).
    func syncAttachments() throws {
        guard placedAny else { return }
        let path = vault.location.attachmentsPath
        let dir = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dir >= 0 else { throw AttachmentFile.posixStorageError("cannot sync", path) }
        defer { close(dir) }
        if fsync(dir) != 0 && errno != EINVAL { throw AttachmentFile.posixStorageError("cannot sync", path) }
    }
}

extension MemoryVault {
    /// Runs `body` as one change that adds notes through the `VaultImport` it gets; committed only when `body`
    /// returns (then `body`'s result is returned), rolled back with every attachment file it placed when it
    /// throws.
    public func importing<T>(_ body: (VaultImport) throws -> T) throws -> T {
        let time = now()
        try PrivateFiles.ensurePrivateDirectory(location.attachmentsPath)
        return try write("import notes into the memory vault") { change in
            let batch = VaultImport(vault: self, change: change, time: time)
            let result = try body(batch)
            try batch.syncAttachments()
            return result
        }
    }
}
