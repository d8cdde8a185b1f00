import StarlineCore
import StarlineSQLite

/// How the records of the session store map to rows of `SessionSchema`'s tables: the SQL, the bound
/// values and the decoding by column name. Secrets arrive and leave sealed (`RecordSealer`); a clear
/// column that is NULL or of the wrong type makes the record "damaged" (STORAGE_ERROR); a time outside
/// the years 0001–9999 makes it corrupt (CORRUPT_FILE, exit 12: `SessionRecordKind.corrupt`), so that no
/// stored number reaches the clock arithmetic and date output of the tools.
enum SessionRows {
    /// What a decoder is told to throw for a time column out of range: (column, value) → error.
    typealias Corrupt = (_ column: String, _ value: Int64) -> StarlineError

    /// `value` when it is a time the tools can compute with and print (`Timestamp.supportedRange`).
    static func time(_ value: Int64, _ column: String, _ corrupt: Corrupt) throws -> Int64 {
        guard Timestamp.supportedRange.contains(value) else { throw corrupt(column, value) }
        return value
    }

    // MARK: Candidate

    static let selectCandidate = """
        SELECT session_id, sealed_token, user_json, roles_json, expires_at, created_at, verified_at
        FROM candidates WHERE store_key = ?
        """

    static let selectCandidateSessionId = "SELECT session_id FROM candidates WHERE store_key = ?"

    static let saveCandidate = """
        INSERT OR REPLACE INTO candidates
            (store_key, session_id, sealed_token, user_json, roles_json, expires_at, created_at, verified_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    static func candidateValues(_ c: StoredCandidate, keyId: String, sealedToken: [UInt8], updatedAt: Int64) -> [SQLiteValue] {
        let roles = JSON.array(c.roles.map { .string($0) }).serialized()
        return [
            .text(keyId), .text(c.sessionId), .blob(sealedToken), .text(c.user.serialized()), .text(roles),
            .integer(c.expiresAt), .integer(c.createdAt), c.verifiedAt.map { .integer($0) } ?? .null,
            .integer(updatedAt)
        ]
    }

    /// `open(sealed, sessionId)` opens the token.
    static func candidate(
        _ row: SQLiteRow, damaged: StarlineError, corrupt: Corrupt,
        open: (_ sealed: [UInt8], _ sessionId: String) throws -> String
    ) throws -> StoredCandidate {
        guard let sessionId = row.string("session_id"), let sealed = row.blob("sealed_token"),
            let userText = row.string("user_json"), let rolesText = row.string("roles_json"),
            let expiresAt = row.int64("expires_at"), let createdAt = row.int64("created_at")
        else { throw damaged }
        let verifiedAt = row.isNull("verified_at") ? nil : row.int64("verified_at")
        if !row.isNull("verified_at") && verifiedAt == nil { throw damaged }
        _ = try time(expiresAt, "expires_at", corrupt)
        _ = try time(createdAt, "created_at", corrupt)
        if let verifiedAt { _ = try time(verifiedAt, "verified_at", corrupt) }
        guard let user = try? JSON.parse(userText),
            let rolesJSON = try? JSON.parse(rolesText), let roleItems = rolesJSON.arrayValue
        else { throw damaged }
        var roles: [String] = []
        for item in roleItems {
            guard let role = item.stringValue else { throw damaged }
            roles.append(role)
        }
        let token = try open(sealed, sessionId)
        return StoredCandidate(
            accessToken: token, sessionId: sessionId, user: user, roles: roles,
            expiresAt: expiresAt, createdAt: createdAt, verifiedAt: verifiedAt)
    }

    // MARK: Pending login

    static let selectPendingLogin = """
        SELECT mode, state, sealed_secrets, redirect_uri, has_device_code, created_at, expires_at
        FROM pending_logins WHERE store_key = ?
        """

    static let savePendingLogin = """
        INSERT OR REPLACE INTO pending_logins
            (store_key, mode, state, sealed_secrets, redirect_uri, has_device_code, created_at, expires_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// The verifier and device code, sealed together as one small JSON object.
    static func pendingLoginSecrets(_ p: PendingLogin) -> String {
        var secrets: [(String, JSON)] = [("verifier", .string(p.verifier))]
        if let deviceCode = p.deviceCode { secrets.append(("deviceCode", .string(deviceCode))) }
        return JSON.object(secrets).serialized()
    }

    static func pendingLoginValues(_ p: PendingLogin, keyId: String, sealedSecrets: [UInt8]) -> [SQLiteValue] {
        [
            .text(keyId), .text(p.mode.rawValue), .text(p.state), .blob(sealedSecrets), .text(p.redirectURI),
            .integer(p.deviceCode == nil ? 0 : 1), .integer(p.createdAt), .integer(p.expiresAt)
        ]
    }

    /// The clear columns of a pending login row, before its secrets are opened (an expired one never is).
    struct PendingLoginRow {
        var mode: PendingLogin.Mode
        var state: String
        var sealedSecrets: [UInt8]
        var redirectURI: String
        var hasDeviceCode: Bool
        var createdAt: Int64
        var expiresAt: Int64
    }

    static func pendingLoginRow(_ row: SQLiteRow, damaged: StarlineError, corrupt: Corrupt) throws -> PendingLoginRow {
        // A mode this version does not know is a damaged row, like any other unreadable column.
        guard let mode = row.string("mode").flatMap(PendingLogin.Mode.init(rawValue:)), let state = row.string("state"),
            let sealed = row.blob("sealed_secrets"),
            let redirectURI = row.string("redirect_uri"), let hasDeviceCode = row.bool("has_device_code"),
            let createdAt = row.int64("created_at"), let expiresAt = row.int64("expires_at")
        else { throw damaged }
        _ = try time(createdAt, "created_at", corrupt)
        _ = try time(expiresAt, "expires_at", corrupt)
        return PendingLoginRow(
            mode: mode, state: state, sealedSecrets: sealed, redirectURI: redirectURI,
            hasDeviceCode: hasDeviceCode, createdAt: createdAt, expiresAt: expiresAt)
    }

    static func pendingLogin(_ row: PendingLoginRow, secrets secretsText: String, damaged: StarlineError) throws -> PendingLogin {
        guard let secrets = try? JSON.parse(secretsText), let verifier = secrets["verifier"]?.stringValue else {
            throw damaged
        }
        let deviceCode = secrets["deviceCode"]?.stringValue
        if row.hasDeviceCode != (deviceCode != nil) { throw damaged }
        return PendingLogin(
            mode: row.mode, state: row.state, verifier: verifier, redirectURI: row.redirectURI,
            deviceCode: deviceCode, createdAt: row.createdAt, expiresAt: row.expiresAt)
    }

    // MARK: Pending revocations

    static let selectPendingRevocations = """
        SELECT id, session_id, sealed_token, created_at, attempts, last_error
        FROM pending_revocations WHERE store_key = ? ORDER BY id
        """

    /// `open(sealed, sessionId)` opens the token.
    static func pendingRevocation(
        _ row: SQLiteRow, damaged: StarlineError, corrupt: Corrupt,
        open: (_ sealed: [UInt8], _ sessionId: String) throws -> String
    ) throws -> PendingRevocation {
        guard let id = row.int64("id"), let sessionId = row.string("session_id"), let sealed = row.blob("sealed_token"),
            let createdAt = row.int64("created_at"), let attempts = row.int("attempts")
        else { throw damaged }
        _ = try time(createdAt, "created_at", corrupt)
        guard attempts >= 0 else { throw corrupt("attempts", Int64(attempts)) }
        let token = try open(sealed, sessionId)
        return PendingRevocation(
            id: id, sessionId: sessionId, accessToken: token, createdAt: createdAt,
            attempts: attempts, lastError: row.string("last_error"))
    }
}
