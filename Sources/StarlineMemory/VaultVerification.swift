import StarlineCore
import StarlineCrypto
import StarlineSQLite

/// What `verify` checked and found.
public struct VaultVerification: Sendable, Equatable {
    /// Empty when everything checked out.
    public var problems: [VaultProblem]
    public var records: Int
    public var attachments: Int
    public var counter: UInt64
    /// Files killed writers had left in `attachments/`, removed by this run.
    public var removedLeftovers: Int

    public var isClean: Bool { problems.isEmpty }
}

extension MemoryVault {
    /// Checks everything: the manifest against every row and the pin, every record's seal and payload,
    /// every attachment file end to end (size, every chunk, BLAKE2b), and the search index against every
    /// record's words. Problems are collected, not thrown; only a vault that cannot be read at all (a
    /// damaged header, a manifest that does not open) throws. Holds the vault's lock, so no change runs
    /// meanwhile, and removes files killed writers left. Never takes the fingerprint's word for anything;
    /// a clean run writes one, as a passing open does.
    public func verify() throws -> VaultVerification {
        var result = VaultVerification(problems: [], records: 0, attachments: 0, counter: 0, removedLeftovers: 0)
        attested = nil
        let checkedAt = VaultFiles.coarseNow()
        let before = VaultFiles.of(location)
        do {
            try store.withTransaction { db in
                try faults.storage.check(.read, "read the memory vault")
                let manifest: VaultManifest
                do {
                    manifest = try refresh(db)
                } catch let error as StarlineError where error.code == .vaultCorrupt || error.code == .rollbackDetected {
                    let kind: VaultProblem.Kind =
                        error.code == .rollbackDetected
                        ? .rollback
                        : error.details?["problem"]?.stringValue == VaultProblem.Kind.headerMismatch.rawValue
                            ? .headerMismatch : .manifestCorrupt
                    result.problems.append(VaultProblem(kind, subject: kind == .headerMismatch ? "header" : "manifest", error.message))
                    guard kind == .headerMismatch, let m = self.manifest else { return }
                    manifest = m
                }
                result.counter = manifest.counter
                let rows = try rowEntries(db)
                result.problems += manifest.differences(from: rows, path: path)
                if let problem = RollbackPin.problem(
                    try RollbackPin.read(location.pinPath), vaultID: vaultID, counter: manifest.counter, path: path)
                {
                    result.problems.append(problem)
                }
                for row in try db.query("SELECT \(Self.rowColumns) FROM records ORDER BY id") {
                    result.records += 1
                    let record: RecordRow
                    let p: NotePayload
                    do {
                        record = try decodeRow(row)
                        guard let k = keys.keys(epoch: record.epoch) else {
                            throw VaultErrors.corruptRecord(
                                record.id, path, "it is sealed under key epoch \(record.epoch), which is not a key of this vault")
                        }
                        p = try NotePayload.open(
                            record.sealed, id: record.id, version: record.version, keys: k, vaultID: header.vaultID, path: path)
                    } catch let error as StarlineError {
                        result.problems.append(VaultProblem(.recordCorrupt, subject: row.string("id") ?? "?", error.message))
                        continue
                    }
                    for a in p.attachments {
                        result.attachments += 1
                        do {
                            try AttachmentFile.read(location.blobPath(a.blobName), entry: a, noteID: record.id, to: nil)
                        } catch {
                            result.problems.append(
                                VaultProblem(
                                    .attachmentCorrupt, subject: "\(record.id)/\(a.name)", (error as? StarlineError)?.message ?? "\(error)")
                            )
                        }
                    }
                    result.problems += indexProblems(db, id: record.id, payload: p, epoch: record.epoch)
                }
                let strays = try db.query("SELECT DISTINCT record_id FROM search_tokens WHERE record_id NOT IN (SELECT id FROM records)")
                for stray in strays.compactMap({ $0.string("record_id") }) {
                    result.problems.append(
                        VaultProblem(.indexMismatch, subject: "index", "the search index has tokens of \(stray), which is no record"))
                }
                if result.problems.isEmpty { result.removedLeftovers = removeLeftoverFiles(referenced: manifest) }
            }
        } catch {
            throw VaultErrors.classify(error, path: path)
        }
        if result.isClean { recordFingerprint(of: before, checkedAt: checkedAt) }
        return result
    }

    /// Opens the vault without the checks `open` refuses on (manifest against rows, pin) and verifies it:
    /// the `verify` of a vault that does not open normally. A damaged header or a wrong passphrase still throws.
    public static func verify(at location: VaultLocation, with credential: VaultCredential, faults: VaultFaults = VaultFaults()) throws
        -> VaultVerification
    {
        try unlock(at: location, with: credential, faults: faults, now: { Timestamp.now() }).verify()
    }

    private func indexProblems(_ db: SQLiteDatabase, id: String, payload: NotePayload, epoch: UInt32) -> [VaultProblem] {
        guard let k = keys.keys(epoch: epoch) else { return [] }
        let expected = SearchIndex.tokens(of: payload, keys: k)
        guard let rows = try? db.query("SELECT token FROM search_tokens WHERE record_id = ?", [.text(id)]) else { return [] }
        let stored = Set(rows.compactMap { $0.blob("token") })
        if stored == expected { return [] }
        let missing = expected.subtracting(stored).count, extra = stored.subtracting(expected).count
        return [
            VaultProblem(
                .indexMismatch, subject: id,
                "the search index of record \(id) is out of date (\(missing) words missing, \(extra) not in the note)")
        ]
    }
}
