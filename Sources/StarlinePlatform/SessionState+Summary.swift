import StarlineCore

/// What `sl-login status` shows of a store key: every record's clear columns, nothing decrypted — so it works
/// while the keyring is locked or the device key is missing (and says which).
public struct StoreSummary: Sendable {
    /// The candidate with an empty `accessToken`: only its clear columns were read.
    public var candidate: StoredCandidate?
    public var pendingLogin: (mode: PendingLogin.Mode, createdAt: Int64, expiresAt: Int64)?
    /// Pending revocations with empty tokens.
    public var pendingRevocations: [PendingRevocation]
    public var revocationMarker: String?
    /// `custodyReport()`: the custodian and, for the keyring, whether its item can be read now.
    public var custody: JSON
}

extension SessionState {
    public func summary() throws -> StoreSummary {
        try checkValid()
        let candidate = try sql { try database.queryFirst(SessionRows.selectCandidate, [.text(keyId)]) }.map { row in
            try SessionRows.candidate(row, damaged: damaged(.candidate), corrupt: corrupt(.candidate)) { _, _ in "" }
        }
        let pending = try sql { try database.queryFirst(SessionRows.selectPendingLogin, [.text(keyId)]) }.map { row in
            let clear = try SessionRows.pendingLoginRow(row, damaged: damaged(.pendingLogin), corrupt: corrupt(.pendingLogin))
            return (mode: clear.mode, createdAt: clear.createdAt, expiresAt: clear.expiresAt)
        }
        let revocations = try sql { try database.query(SessionRows.selectPendingRevocations, [.text(keyId)]) }.map { row in
            try SessionRows.pendingRevocation(row, damaged: damaged(.pendingRevocation), corrupt: corrupt(.pendingRevocation)) { _, _ in ""
            }
        }
        return StoreSummary(
            candidate: candidate, pendingLogin: pending, pendingRevocations: revocations,
            revocationMarker: try revocationMarker(), custody: try custodyReport())
    }
}
