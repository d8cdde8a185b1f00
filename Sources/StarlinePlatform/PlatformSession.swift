import StarlineCore

/// A published session: what `onSessionChanged` reports and the tools print. Never printed with its token.
public struct PlatformSession: Sendable, Equatable {
    public var accessToken: String
    public var sessionId: String
    public var user: JSON
    public var roles: [String]
    public var expiresAt: Int64
    public var verifiedAt: Int64?

    public init(accessToken: String, sessionId: String, user: JSON, roles: [String], expiresAt: Int64, verifiedAt: Int64?) {
        self.accessToken = accessToken
        self.sessionId = sessionId
        self.user = user
        self.roles = roles
        self.expiresAt = expiresAt
        self.verifiedAt = verifiedAt
    }

    package init(_ candidate: StoredCandidate) {
        self.init(
            accessToken: candidate.accessToken, sessionId: candidate.sessionId, user: candidate.user, roles: candidate.roles,
            expiresAt: candidate.expiresAt, verifiedAt: candidate.verifiedAt)
    }

    /// The stored form, created at `createdAt` (Unix seconds, the client's clock).
    func candidate(createdAt: Int64) -> StoredCandidate {
        StoredCandidate(
            accessToken: accessToken, sessionId: sessionId, user: user, roles: roles, expiresAt: expiresAt,
            createdAt: createdAt, verifiedAt: verifiedAt)
    }

    /// Expired at `now` (Unix seconds, the client's clock).
    public func isExpired(at now: Int64) -> Bool { expiresAt <= now }

    /// The JSON the tools print: no token unless `showToken`. `user` is the user's id, a string as in every
    /// record of every tool (sessions lists, revoke results, journals: docs/formats.md, Field glossary);
    /// the profile the server gave is `account`.
    public func json(showToken: Bool = false) -> JSON {
        var fields: [(String, JSON)] = [
            ("id", .string(sessionId)), ("user", .optional(user["id"]?.stringValue)), ("account", user),
            ("roles", .array(roles.map(JSON.string))),
            ("expiresAt", .string(Timestamp.rfc3339String(expiresAt))),
            ("verifiedAt", verifiedAt.map { .string(Timestamp.rfc3339String($0)) } ?? .null)
        ]
        if showToken { fields.append(("accessToken", .string(accessToken))) }
        return .object(fields)
    }
}

/// The result of `restoreSession()` across processes (S4–S6; docs/session-model.md).
public struct RestoreOutcome: Sendable {
    public enum State: String, Sendable { case valid, cleared, keptUnverified, absent, noResult }
    public var state: State
    public var session: PlatformSession?
    /// Why: the server's code for `cleared`, the failure for `keptUnverified`, the cause of `noResult`.
    public var reason: String?
    /// The error to report on stderr (nil for `valid`).
    public var error: StarlineError?

    /// The store could not be read or written: the session is neither confirmed nor cleared (exit 10) — or a
    /// record in it is corrupt (an out-of-range time, CORRUPT_FILE: exit 12, reason `corruptRecord`), which is
    /// left for `sl-login clear` to remove rather than guessed at. A locked keyring is reason `storageLocked`.
    public static func storageFailure(_ error: StarlineError) -> RestoreOutcome {
        let reason = error.exitStatus == .data ? "corruptRecord" : error.code == .storageLocked ? "storageLocked" : "storageError"
        return RestoreOutcome(state: .keptUnverified, reason: reason, error: error)
    }

    public var exitStatus: ExitStatus {
        switch state {
        case .valid: .ok
        case .cleared: .sessionEnded
        case .keptUnverified:
            switch error?.exitStatus {
            case .storage?: .storage
            case .data?: .data
            // Nothing was asked: the configuration is wrong (a CA bundle that cannot be read), not the network.
            case .usage?: .usage
            default: .transient
            }
        case .absent: .notLoggedIn
        case .noResult: .noResult
        }
    }

    public var json: JSON {
        .object([("state", .string(state.rawValue)), ("session", session?.json() ?? .null), ("reason", .optional(reason))])
    }
}
