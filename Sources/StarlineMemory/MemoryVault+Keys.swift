import Glibc
import StarlineCore
import StarlineCrypto

/// What a `rekey` call did.
public struct RekeyResult: Sendable, Equatable {
    /// The epoch of the new data key (the old one + 1).
    public var epoch: UInt32
    /// Records moved to the new key by this call (a resumed rekey counts only what was left).
    public var recordsMoved: Int
    /// Attachment files re-encrypted by this call.
    public var attachmentsMoved: Int
    /// True when this call continued a rekey an earlier one had started.
    public var resumed: Bool

    public init(epoch: UInt32, recordsMoved: Int, attachmentsMoved: Int, resumed: Bool) {
        self.epoch = epoch
        self.recordsMoved = recordsMoved
        self.attachmentsMoved = attachmentsMoved
        self.resumed = resumed
    }
}

extension MemoryVault {
    /// Re-wraps the data key under a new passphrase (new salt, `limits`); nothing else is re-encrypted, so
    /// it is quick. WRONG_PASSPHRASE when `current` is not the passphrase. A copy of the vault made before
    /// still opens with the old passphrase: after a leak, `rekey` is what helps.
    public func changePassphrase(current: SecretBytes, new: SecretBytes, limits: Argon2id.Limits? = nil) throws {
        try write("change the memory vault passphrase") { change in
            let ring = try KeyWrapping.unlock(change.header, passphrase: current, path: path).0
            guard ring.current.dataKey == keys.current.dataKey else {
                throw VaultErrors.wrongKey(path, "the vault's key changed since it was opened; open it again")
            }
            var header = change.header
            header.limits = limits ?? header.limits
            header.salt = Sodium.randomBytes(Argon2id.saltBytes)
            let kek = try KeyWrapping.passphraseKey(new, header: header)
            header.wrappedKey = KeyWrapping.wrap(ring.current.dataKey, under: kek, vaultID: header.vaultID, epoch: header.epoch)
            if var pending = header.pending, let key = ring.pending {
                pending.wrappedKey = KeyWrapping.wrap(key.dataKey, under: kek, vaultID: header.vaultID, epoch: pending.epoch)
                header.pending = pending
            }
            change.header = header
            change.headerChanged = true
        }
    }

    /// Moves the vault to a new random data key: every record is re-sealed, every attachment re-encrypted
    /// under a new file key (a new file), the search index rebuilt, in batches of `batchSize` records, each
    /// batch one change. The new key is recorded in the header (wrapped under the passphrase key and under
    /// the old data key) before the first batch, so an interrupted rekey loses nothing: the vault stays
    /// readable with both keys, and calling `rekey` again resumes where it stopped. Only the final change
    /// retires the old key. The passphrase is required (and checked) even on an unlocked vault.
    @discardableResult
    public func rekey(passphrase: SecretBytes, batchSize: Int = 64) throws -> RekeyResult {
        precondition(batchSize > 0, "batchSize must be positive")
        let resumed = header.pending != nil
        if !resumed {
            try write("start rekeying the memory vault") { change in
                let (ring, kek) = try KeyWrapping.unlock(change.header, passphrase: passphrase, path: path)
                guard ring.pending == nil else { return }  // another process started one meanwhile
                let key = XChaCha20Poly1305.generateKey()
                let id = change.header.vaultID
                let epoch = change.header.epoch + 1
                change.header.pending = VaultHeader.PendingRekey(
                    epoch: epoch, wrappedKey: KeyWrapping.wrap(key, under: kek, vaultID: id, epoch: epoch),
                    wrappedUnderCurrent: KeyWrapping.wrap(
                        key, under: ring.current.dataKey, purpose: "rekey-key", vaultID: id, epoch: epoch),
                    keyCheck: KeyWrapping.keyCheck(key, vaultID: id, epoch: epoch))
                change.headerChanged = true
                // From here on the manifest of this very change is sealed with the new key.
                keys.pending = EpochKeys(epoch: epoch, dataKey: key, vaultID: id)
            }
        } else {
            _ = try KeyWrapping.unlock(header, passphrase: passphrase, path: path)
        }
        guard let target = keys.pending?.epoch else {
            throw StarlineError(.internalError, "rekey: no pending key after starting the rekey")
        }
        var records = 0, files = 0
        while true {
            if let limit = faults.rekeyCrashAfter, records >= limit { throw VaultFaults.crashError("rekey-after:\(limit)") }
            let (moved, movedFiles) = try write("rekey the memory vault") { change -> (Int, Int) in
                let rows = try change.db.query(
                    "SELECT \(Self.rowColumns) FROM records WHERE key_epoch != ? ORDER BY id LIMIT ?",
                    [.integer(Int64(target)), .integer(Int64(batchSize))]
                ).map(decodeRow)
                var movedFiles = 0
                for row in rows {
                    var p = try payload(row, manifest: change.manifest)
                    p.attachments = try p.attachments.map { old in
                        movedFiles += 1
                        return try reencrypt(old, noteID: row.id, in: change)
                    }
                    try put(change, id: row.id, version: row.version, p)
                }
                return (rows.count, movedFiles)
            }
            if moved == 0 { break }
            records += moved
            files += movedFiles
        }
        try write("finish rekeying the memory vault") { change in
            guard let pending = change.header.pending, pending.epoch == target, let newKeys = keys.pending else { return }
            let left =
                try change.db.queryFirst("SELECT count(*) AS n FROM records WHERE key_epoch != ?", [.integer(Int64(target))])?.int("n") ?? 0
            guard left == 0 else { throw StarlineError(.internalError, "rekey: \(left) records still under the old key") }
            change.header.epoch = pending.epoch
            change.header.wrappedKey = pending.wrappedKey
            change.header.keyCheck = pending.keyCheck
            change.header.pending = nil
            change.headerChanged = true
            keys = KeyRing(current: newKeys)
        }
        return RekeyResult(epoch: target, recordsMoved: records, attachmentsMoved: files, resumed: resumed)
    }

    /// An attachment copied to a new file under a new key: the old file is decrypted and checked chunk by
    /// chunk straight into the new file's writer (no plaintext touches the disk), renamed into place in
    /// `change`, and the old file is removed after COMMIT.
    private func reencrypt(_ old: AttachmentEntry, noteID: String, in change: VaultChange) throws -> AttachmentEntry {
        let blobID = Sodium.randomBytes(16)
        let key = SecretBytes(count: SecretStream.keyBytes)
        let sourcePath = location.blobPath(old.blobName)
        let writer = try AttachmentWriter(directory: location.attachmentsPath, blobID: blobID, key: key)
        try AttachmentFile.read(sourcePath, entry: old, noteID: noteID) { (chunk) throws(StarlineError) in try writer.append(chunk[...]) }
        let written = try writer.finish()
        let fresh = AttachmentEntry(
            blobID: blobID, name: old.name, size: written.size, hash: written.hash, digest: written.digest, fileKey: key,
            addedAt: old.addedAt)
        do {
            try place(written.temporaryPath, as: fresh, in: change)
        } catch {
            unlink(written.temporaryPath)
            throw error
        }
        change.obsoleteFiles.append(sourcePath)
        return fresh
    }
}
