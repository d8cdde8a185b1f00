import Glibc
import StarlineCore
import StarlineCrypto
import StarlineSQLite

/// One row of `records`, as stored.
struct RecordRow {
    var id: String
    var version: Int
    var epoch: UInt32
    var blobs: [[UInt8]]
    var sealed: [UInt8]

    var entry: ManifestEntry { ManifestEntry(id: id, version: version, epoch: epoch, blobs: blobs) }
}

/// What a change collects inside its transaction: the manifest it rewrites, the header when it changes,
/// and the attachment files it put in place (removed again if the transaction does not commit) or made
/// obsolete (removed after it commits).
final class VaultChange {
    let db: SQLiteDatabase
    var manifest: VaultManifest
    var header: VaultHeader
    var headerChanged = false
    var changed = false
    var placedFiles: [String] = []
    var obsoleteFiles: [String] = []

    init(db: SQLiteDatabase, manifest: VaultManifest, header: VaultHeader) {
        self.db = db
        self.manifest = manifest
        self.header = header
    }
}

extension MemoryVault {
    // MARK: - Reads and writes

    /// Runs `body` on one read snapshot (a DEFERRED transaction, no flock), after re-reading the header and
    /// the manifest, which must be consistent with each other and not older than what this object saw.
    /// While the database files still match the fingerprint of the open, the manifest is not even read:
    /// `body` gets `.fingerprint`, and the files are looked at again after it — changed meanwhile, and it
    /// runs again against the manifest (read bodies only read, so running one twice is harmless).
    func read<T>(_ body: (SQLiteDatabase, RowCheck) throws -> T) throws -> T {
        try snapshot { db in
            if try isStillAttested(db) {
                let result: Result<T, Error> = Result { try body(db, .fingerprint) }
                if VaultFiles.of(location) == attested?.files { return try result.get() }
                attested = nil
            }
            return try body(db, .manifest(try refresh(db)))
        }
    }

    /// `read` that always checks against the manifest (the full check of opening).
    func readChecked<T>(_ body: (SQLiteDatabase, VaultManifest) throws -> T) throws -> T {
        try snapshot { db in try body(db, try refresh(db)) }
    }

    private func snapshot<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        do {
            return try store.database.transaction(.deferred) { () throws -> T in
                try faults.storage.check(.read, "read the memory vault")
                return try body(store.database)
            }
        } catch {
            throw VaultErrors.classify(error, path: path)
        }
    }

    /// Runs `body` as one change: under the vault's flock in a BEGIN IMMEDIATE transaction, after the same
    /// re-reading as `read` and the removal of files killed writers left. When the body changed something,
    /// the manifest is rewritten with the counter + 1 (and the header, when it changed) in the same
    /// transaction. After COMMIT: obsolete files are removed and the pin raised.
    func write<T>(_ what: String, _ body: (VaultChange) throws -> T) throws -> T {
        var change: VaultChange?
        let result: T
        // A change reads the whole manifest, which it rewrites, and its commit changes the files.
        attested = nil
        // A body may take on keys (a rekey's new one) that only its commit makes real.
        let (headerBefore, keysBefore) = (header, keys)
        do {
            result = try store.withTransaction { db in
                try faults.storage.check(.write, what)
                let current = try refresh(db)
                removeLeftoverFiles(referenced: current)
                let c = VaultChange(db: db, manifest: current, header: header)
                change = c
                let r = try body(c)
                guard c.changed || c.headerChanged else { return r }
                c.manifest.counter += 1
                if c.headerChanged { try db.run("UPDATE vault_header SET bytes = ? WHERE id = 1", [.blob(c.header.encoded())]) }
                c.manifest.headerChecksum = c.header.checksum
                let epoch = keys.write.epoch
                try db.run(
                    "UPDATE manifest SET counter = ?, key_epoch = ?, sealed = ? WHERE id = 1",
                    [
                        .integer(Int64(c.manifest.counter)), .integer(Int64(epoch)),
                        .blob(c.manifest.sealed(keys: keys.write, vaultID: header.vaultID))
                    ])
                try faults.crashIf(.beforeCommit)
                try faults.storage.check(.commit, "commit the change to the memory vault")
                return r
            }
        } catch {
            // A failed change leaves no file behind; a simulated crash leaves what a killed process would.
            if let change, !VaultFaults.isCrash(error) { for file in change.placedFiles { unlink(file) } }
            (header, keys) = (headerBefore, keysBefore)
            manifest = nil
            throw VaultErrors.classify(error, path: path)
        }
        guard let change, change.changed || change.headerChanged else { return result }
        header = change.header
        manifest = change.manifest
        manifestEpoch = keys.write.epoch
        highestCounter = change.manifest.counter
        try faults.crashIf(.afterCommit)
        for file in change.obsoleteFiles { unlink(file) }
        try raisePin()
        return result
    }

    /// Re-reads the header (taking on a rekey or passphrase change made by another process) and the
    /// manifest. Throws VAULT_CORRUPT for a manifest that does not open or does not belong with the header,
    /// and ROLLBACK_DETECTED when its counter went down since this object last saw it.
    func refresh(_ db: SQLiteDatabase) throws -> VaultManifest {
        let stored = try Self.readHeader(db, location: location)
        if stored != header { try adopt(stored) }
        guard let row = try db.queryFirst("SELECT counter, key_epoch, sealed FROM manifest WHERE id = 1"),
            let counter = row.int64("counter"), counter >= 0, let epoch = row.int64("key_epoch"), let sealed = row.blob("sealed"),
            let epoch32 = UInt32(exactly: epoch)
        else {
            throw VaultErrors.corruptManifest(path, "it is missing or its columns are damaged")
        }
        let value = UInt64(counter)
        if value < highestCounter {
            throw VaultProblem(
                .rollback, subject: "manifest",
                "the memory vault \(path) went back from counter \(highestCounter) to \(value) while open"
            ).error(path: path)
        }
        let current: VaultManifest
        if let manifest, manifest.counter == value, manifestEpoch == epoch32 {
            current = manifest
        } else {
            guard let k = keys.keys(epoch: epoch32) else {
                throw VaultErrors.corruptManifest(path, "it is sealed under key epoch \(epoch32), which is not a key of this vault")
            }
            current = try VaultManifest.open(sealed, counter: value, keys: k, vaultID: header.vaultID, path: path).0
        }
        manifest = current
        manifestEpoch = epoch32
        highestCounter = value
        // Checked on every call, cached manifest or not: the header is re-read each time.
        guard Sodium.constantTimeEquals(current.headerChecksum, header.checksum) else {
            throw VaultProblem(
                .headerMismatch, subject: "header",
                "the memory vault header in \(path) is not the one its manifest was written with: an older header was put back"
            ).error(path: path)
        }
        return current
    }

    /// Takes on a header another process wrote: same vault, and a key ring that still opens it.
    private func adopt(_ stored: VaultHeader) throws {
        guard stored.vaultID == header.vaultID else {
            throw VaultErrors.corruptHeader(path, "it now belongs to another vault (\(stored.vaultIDText))")
        }
        var ring = keys
        if stored.epoch != ring.current.epoch {
            guard let pending = ring.pending, pending.epoch == stored.epoch else {
                throw VaultErrors.wrongKey(path, "the vault was rekeyed by another process; unlock it again")
            }
            ring = KeyRing(current: pending)
        }
        if let next = stored.pending {
            if ring.pending?.epoch != next.epoch {
                guard
                    let key = KeyWrapping.unwrap(
                        next.wrappedUnderCurrent, under: ring.current.dataKey, purpose: "rekey-key",
                        vaultID: stored.vaultID, epoch: next.epoch)
                else {
                    throw VaultErrors.corruptHeader(path, "the key of the unfinished rekey does not unwrap")
                }
                ring.pending = EpochKeys(epoch: next.epoch, dataKey: key, vaultID: stored.vaultID)
            }
        } else {
            ring.pending = nil
        }
        keys = ring
        header = stored
    }

    // MARK: - Rows

    static let rowColumns = "id, version, key_epoch, blobs, sealed"

    func decodeRow(_ row: SQLiteRow) throws -> RecordRow {
        let id = row.string("id") ?? "?"
        guard let version = row.int("version"), version >= 1, let epoch = row.int64("key_epoch"), let epoch32 = UInt32(exactly: epoch),
            let blobColumn = row.blob("blobs"), let blobs = ManifestEntry.blobs(fromColumn: blobColumn), let sealed = row.blob("sealed")
        else {
            throw VaultErrors.corruptRecord(id, path, "its row's columns are damaged")
        }
        return RecordRow(id: id, version: version, epoch: epoch32, blobs: blobs, sealed: sealed)
    }

    func loadRow(_ db: SQLiteDatabase, _ id: String) throws -> RecordRow? {
        try db.queryFirst("SELECT \(Self.rowColumns) FROM records WHERE id = ?", [.text(id)]).map(decodeRow)
    }

    /// The row's payload, after checking the row against the manifest (a record restored from an older
    /// copy or added behind its back is refused, naming it) and opening it under its epoch's key.
    func payload(_ row: RecordRow, manifest: VaultManifest) throws -> NotePayload {
        try payload(row, checkedBy: .manifest(manifest))
    }

    /// `payload`, with the row checked as `check` says: against the manifest, or not at all when the
    /// fingerprint vouches for every row.
    func payload(_ row: RecordRow, checkedBy check: RowCheck) throws -> NotePayload {
        if case .manifest(let manifest) = check, let problem = manifest.difference(id: row.id, row: row.entry) {
            throw problem.error(path: path)
        }
        guard let k = keys.keys(epoch: row.epoch) else {
            throw VaultErrors.corruptRecord(row.id, path, "it is sealed under key epoch \(row.epoch), which is not a key of this vault")
        }
        return try NotePayload.open(row.sealed, id: row.id, version: row.version, keys: k, vaultID: header.vaultID, path: path)
    }

    /// Every row's manifest entry (id, version, epoch, attachment files): what the MAC is recomputed over.
    func rowEntries(_ db: SQLiteDatabase) throws -> [String: ManifestEntry] {
        var entries: [String: ManifestEntry] = [:]
        for row in try db.query("SELECT id, version, key_epoch, blobs FROM records") {
            let id = row.string("id") ?? "?"
            guard let version = row.int("version"), version >= 1, let epoch = row.int64("key_epoch").flatMap({ UInt32(exactly: $0) }),
                let blobs = row.blob("blobs").flatMap(ManifestEntry.blobs(fromColumn:))
            else {
                throw VaultErrors.corruptRecord(id, path, "its row's columns are damaged")
            }
            entries[id] = ManifestEntry(id: id, version: version, epoch: epoch, blobs: blobs)
        }
        return entries
    }

    /// Seals `payload` as record `id` at `version` under the write key, replaces its row, its search tokens
    /// and its manifest entry.
    func put(_ change: VaultChange, id: String, version: Int, _ payload: NotePayload) throws {
        let k = keys.write
        let entry = ManifestEntry(id: id, version: version, epoch: k.epoch, blobs: payload.attachments.map(\.blobID))
        try change.db.run(
            "INSERT OR REPLACE INTO records (id, kind, version, key_epoch, blobs, sealed) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(id), .text(NotePayload.kind), .integer(Int64(version)), .integer(Int64(k.epoch)),
                .blob(entry.blobsColumn), .blob(payload.sealed(id: id, version: version, keys: k, vaultID: header.vaultID))
            ])
        try change.db.run("DELETE FROM search_tokens WHERE record_id = ?", [.text(id)])
        for token in SearchIndex.tokens(of: payload, keys: k) {
            try change.db.run("INSERT OR IGNORE INTO search_tokens (token, record_id) VALUES (?, ?)", [.blob(token), .text(id)])
        }
        change.manifest.entries[id] = entry
        change.changed = true
    }

    func delete(_ change: VaultChange, id: String) throws {
        try change.db.run("DELETE FROM records WHERE id = ?", [.text(id)])
        try change.db.run("DELETE FROM search_tokens WHERE record_id = ?", [.text(id)])
        change.manifest.entries[id] = nil
        change.changed = true
    }

    // MARK: - Leftover files

    /// Removes files in `attachments/` that no record references — renamed into place by a change that was
    /// killed before COMMIT — and temporary files of writers that are no longer running. Called holding the
    /// flock, under which every rename into place happens, so no live change's file is taken. Best-effort.
    @discardableResult
    func removeLeftoverFiles(referenced manifest: VaultManifest) -> Int {
        guard let dir = opendir(location.attachmentsPath) else { return 0 }
        defer { closedir(dir) }
        var referenced = Set<String>()
        for entry in manifest.entries.values { for blob in entry.blobs { referenced.insert(Hex.encode(blob)) } }
        var leftovers: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name == "." || name == ".." { continue }
            if name.hasPrefix(".tmp-") {
                // `.tmp-<pid>-<random>`: a writer still running may be streaming into it.
                let pid = name.dropFirst(5).split(separator: "-").first.flatMap { Int32($0) }
                if let pid, pid == getpid() || kill(pid, 0) == 0 || errno == EPERM { continue }
                leftovers.append(name)
            } else if name.utf8.count == 32, Hex.decode(name) != nil, !referenced.contains(name) {
                leftovers.append(name)
            }
        }
        for name in leftovers { unlink(location.blobPath(name)) }
        return leftovers.count
    }
}
