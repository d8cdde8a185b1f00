import StarlineCore

/// The persisted credential (S2): what `restoreSession()` reads, verifies with `GET /api/me` and updates.
///
/// In the store the access token is sealed (XChaCha20-Poly1305, this device only, S3); the other fields are
/// kept in clear columns. Times are Unix seconds.
public struct StoredCandidate: Sendable, Equatable {
    public var accessToken: String
    public var sessionId: String
    public var user: JSON
    public var roles: [String]
    public var expiresAt: Int64
    public var createdAt: Int64
    /// When `GET /api/me` last confirmed the session (for `sl-restore --max-age`); nil when never.
    public var verifiedAt: Int64?

    public init(
        accessToken: String, sessionId: String, user: JSON, roles: [String], expiresAt: Int64,
        createdAt: Int64, verifiedAt: Int64? = nil
    ) {
        self.accessToken = accessToken
        self.sessionId = sessionId
        self.user = user
        self.roles = roles
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.verifiedAt = verifiedAt
    }
}

extension StoredCandidate: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Never the token: descriptions end up in logs and test failure messages.
    public var description: String {
        "StoredCandidate(sessionId: \(sessionId), expiresAt: \(expiresAt), createdAt: \(createdAt), "
            + "verifiedAt: \(verifiedAt.map(String.init) ?? "nil"), roles: \(roles), accessToken: <redacted>)"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "sessionId": sessionId, "user": user, "roles": roles, "expiresAt": expiresAt,
                "createdAt": createdAt, "verifiedAt": verifiedAt as Any
            ], displayStyle: .struct)
    }
}
