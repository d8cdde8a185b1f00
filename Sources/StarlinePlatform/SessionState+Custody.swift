import StarlineCore
import StarlineCrypto
import StarlineSQLite

// MARK: - Key custody (S3)

extension SessionState {
    /// This key's custodian and keyring item ids (no secret is read).
    public func custody() throws -> (custodian: KeyCustodian, keyringItem: String?, orphanItems: [String]) {
        try checkValid()
        let record = try sql { try sealer.custody() }
        return (record.custodian, record.keyringItem, record.orphanItems)
    }

    /// Moves this key's sealed records to the custodian the sign-in asked for (`SessionStore.preferredCustodian`),
    /// in the enclosing transaction: each is opened with the old key and sealed again with the new one, so
    /// a remembered token to revoke (S12) survives the change. No-op when nothing was asked for or it is already
    /// the custodian. A keyring item left behind is deleted after the commit (`releaseUnusedKeyringItems`).
    func adoptPreferredCustodian() throws {
        guard let wanted = store.preferredCustodian else { return }
        let old = try sql { try sealer.custody() }
        guard old.custodian != wanted else { return }
        let sealed = try sealedRecords()
        let plaintexts = try sealed.map { try sealer.open($0.blob, $0.kind, binding: $0.binding) }
        // The old item's key is no longer needed once the records are sealed again; it becomes an orphan that
        // the release after the commit deletes (or, when the keyring is locked, `sl-login clear` later).
        try sql {
            try sealer.setCustody(
                CustodyRecord(custodian: wanted, keyringItem: nil, orphanItems: old.orphanItems + [old.keyringItem].compactMap { $0 }))
        }
        for (record, plaintext) in zip(sealed, plaintexts) {
            let blob = try sealer.seal(plaintext, record.kind, binding: record.binding)
            try sql { try database.run(record.kind.updateSQL, [.blob(blob), .text(keyId), .text(record.rowKey)]) }
        }
    }

    /// Whether any sealed record of this key remains (a candidate, a pending login, a token to revoke).
    func hasSealedRecords() throws -> Bool {
        try sql {
            try database.queryFirst(
                """
                SELECT 1 AS found WHERE EXISTS (SELECT 1 FROM candidates WHERE store_key = ?1)
                    OR EXISTS (SELECT 1 FROM pending_logins WHERE store_key = ?1)
                    OR EXISTS (SELECT 1 FROM pending_revocations WHERE store_key = ?1)
                """, [.text(keyId)]) != nil
        }
    }

    /// Deletes the keyring items this key no longer needs: the current one when no sealed record is left (a
    /// logout or clear removed the last), and the orphans (S13: an earlier delete failed, or a change of
    /// custodian left one). Checks under the lock that nothing needs the key, then runs the D-Bus calls. Returns
    /// the failure to report (STORAGE_ERROR): what could not be deleted is kept as an orphan, so `sl-login clear`
    /// retries and `status` shows it.
    func releaseUnusedKeyringItems() throws -> StarlineError? {
        try checkValid()
        var record = try sql { try sealer.custody() }
        var unused = record.orphanItems
        if let item = record.keyringItem, try !hasSealedRecords() {
            unused.append(item)
            record.keyringItem = nil
        }
        guard !unused.isEmpty else { return nil }
        var kept: [String] = []
        var failure: StarlineError?
        for item in unused {
            store.forgetKeyringKey(item: item)
            do throws(StarlineError) {
                if try !KeyringSealingKey.delete(store, item: item) { throw StarlineError(.storageLocked, "the keyring is locked") }
            } catch {
                kept.append(item)
                failure = failure ?? error
            }
        }
        record.orphanItems = kept
        try sql { try sealer.setCustody(record) }
        guard let failure else { return nil }
        return StarlineError(
            .storage,
            "the session store's key could not be removed from the keyring (\(failure.message)); it opens nothing any more, and sl-login clear retries the delete",
            details: .object([
                ("custodian", .string("keyring")), ("items", .array(kept.map(JSON.string))), ("cause", .string(failure.code.rawValue))
            ]))
    }

    /// `sl-login status`: the custodian, and for the keyring whether its item can be read now (a D-Bus lookup
    /// that never prompts; nothing secret leaves it).
    public func custodyReport() throws -> JSON {
        let record = try sql { try sealer.custody() }
        var json = record.json
        if let item = record.keyringItem { json.set("keyring", .string(KeyringSealingKey.state(store, item: item))) }
        return json
    }

    // MARK: Sealed rows

    private struct SealedRecord {
        var kind: SessionRecordKind
        /// The row's key besides `store_key`: session id, OAuth state, or a pending revocation's id.
        var rowKey: String
        var binding: String
        var blob: [UInt8]
    }

    private func sealedRecords() throws -> [SealedRecord] {
        var found: [SealedRecord] = []
        try sql {
            for row in try database.query("SELECT session_id, sealed_token FROM candidates WHERE store_key = ?", [.text(keyId)]) {
                guard let id = row.string("session_id"), let blob = row.blob("sealed_token") else { throw damaged(.candidate) }
                found.append(SealedRecord(kind: .candidate, rowKey: id, binding: id, blob: blob))
            }
            for row in try database.query("SELECT state, sealed_secrets FROM pending_logins WHERE store_key = ?", [.text(keyId)]) {
                guard let state = row.string("state"), let blob = row.blob("sealed_secrets") else { throw damaged(.pendingLogin) }
                found.append(SealedRecord(kind: .pendingLogin, rowKey: state, binding: state, blob: blob))
            }
            for row in try database.query(
                "SELECT id, session_id, sealed_token FROM pending_revocations WHERE store_key = ?", [.text(keyId)])
            {
                guard let id = row.int64("id"), let session = row.string("session_id"), let blob = row.blob("sealed_token") else {
                    throw damaged(.pendingRevocation)
                }
                found.append(SealedRecord(kind: .pendingRevocation, rowKey: String(id), binding: session, blob: blob))
            }
        }
        return found
    }
}

extension SessionRecordKind {
    /// Replaces one row's sealed column: parameters (blob, store key, row key).
    var updateSQL: String {
        switch self {
        case .candidate: "UPDATE candidates SET sealed_token = ?1 WHERE store_key = ?2 AND session_id = ?3"
        case .pendingLogin: "UPDATE pending_logins SET sealed_secrets = ?1 WHERE store_key = ?2 AND state = ?3"
        case .pendingRevocation: "UPDATE pending_revocations SET sealed_token = ?1 WHERE store_key = ?2 AND id = CAST(?3 AS INTEGER)"
        }
    }
}
