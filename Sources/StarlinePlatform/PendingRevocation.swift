/// A token that a logout could not revoke on the server (S12): remembered so that later runs retry
/// `POST /oauth/revoke`. The token is sealed in the store.
public struct PendingRevocation: Sendable, Equatable {
    /// The row id, for `updatePendingRevocation` / `removePendingRevocation`.
    public var id: Int64
    public var sessionId: String
    public var accessToken: String
    public var createdAt: Int64
    /// Failed attempts so far.
    public var attempts: Int
    /// The last failure (a message without secrets), nil before the first retry.
    public var lastError: String?

    public init(
        id: Int64, sessionId: String, accessToken: String, createdAt: Int64, attempts: Int = 0,
        lastError: String? = nil
    ) {
        self.id = id
        self.sessionId = sessionId
        self.accessToken = accessToken
        self.createdAt = createdAt
        self.attempts = attempts
        self.lastError = lastError
    }
}

extension PendingRevocation: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "PendingRevocation(id: \(id), sessionId: \(sessionId), createdAt: \(createdAt), attempts: \(attempts), "
            + "lastError: \(lastError ?? "nil"), accessToken: <redacted>)"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "id": id, "sessionId": sessionId, "createdAt": createdAt, "attempts": attempts,
                "lastError": lastError as Any
            ], displayStyle: .struct)
    }
}
