import StarlineCore

extension StarlightClient {
    /// Fresh account-center state (an authenticated request: S14/S15 apply).
    public func center() async throws -> JSON {
        let platform = self.platform
        return try await authenticated { try await platform.center(token: $0) }
    }

    /// Device sessions of the account (S16).
    public func sessions() async throws -> [JSON] {
        let platform = self.platform
        return try await authenticated { try await platform.sessions(token: $0) }
    }

    /// Device sessions of the account with the user they belong to: the stored session's user, or null for a
    /// STARLINE_TOKEN session (unknown without asking `/api/me`).
    public func sessionsWithUser() async throws -> (user: JSON, sessions: [JSON]) {
        let platform = self.platform
        return try await authenticatedAs { session in (session.user, try await platform.sessions(token: session.accessToken)) }
    }

    /// Revokes one device session; when the server says it was the current one, the local session is cleared (S16).
    public func revokeSession(id: String) async throws -> (revoked: Bool, current: Bool) {
        let platform = self.platform
        let result = try await authenticated { try await platform.revokeSession(token: $0, id: id) }
        if result.current { try clearSession() }
        return result
    }

    /// Revokes every other device session; the current one is kept (S16).
    public func revokeOtherSessions() async throws -> Int {
        let platform = self.platform
        return try await authenticated { try await platform.revokeOtherSessions(token: $0) }
    }

    /// Password change: the server keeps this session and revokes the others (S16).
    public func changePassword(old: String, new: String) async throws -> Int {
        let platform = self.platform
        return try await authenticated { try await platform.changePassword(token: $0, old: old, new: new) }
    }

    /// A successful SMS reset clears the local identity; the server revokes the account's sessions (S16).
    public func confirmSMSReset(phone: String, code: String, newPassword: String) async throws -> Int {
        let revoked = try await platform.confirmSMSReset(phone: phone, code: code, newPassword: newPassword)
        try clearSession()
        return revoked
    }
}
