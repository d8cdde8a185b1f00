import StarlineCore
import StarlineSQLite
import StarlineCrypto

/// The platform routes (the table below) and the account API: a user's own sessions, and an admin's view of
/// anyone's. OAuth is in OAuthRoutes.swift (RFC 8414 metadata, authorization code + PKCE, tokens, RFC 7009
/// revocation), the device flow in DeviceAuthorizationRoutes.swift (RFC 8628), passwords in PasswordRoutes.swift.
enum PlatformRoutes {
    static let deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"
    static let authRequestLifetime: Int64 = 600

    static var routes: [Route] {
        [
            Route("GET", "/.well-known/oauth-authorization-server", .open, metadata),
            Route("GET", "/oauth/authorize", .open, authorizePage),
            Route("POST", "/oauth/authorize", .open, authorizeSubmit),
            Route("POST", "/oauth/token", .open, token),
            Route("POST", "/oauth/device_authorization", .open, deviceAuthorization),
            Route("GET", "/oauth/device", .open, devicePage),
            Route("POST", "/oauth/device", .open, deviceSubmit),
            Route("POST", "/oauth/revoke", .open, revoke),
            Route("GET", "/api/me", .bearer, me),
            Route("GET", "/api/center", .bearer, center),
            Route("GET", "/api/sessions", .bearer, listSessions),
            Route("DELETE", "/api/sessions/{id}", .bearer, revokeSession),
            Route("POST", "/api/sessions/revoke-others", .bearer, revokeOthers),
            Route("POST", "/api/password", .bearer, changePassword),
            Route("POST", "/api/password/sms-reset/request", .open, smsRequest),
            Route("POST", "/api/password/sms-reset", .open, smsReset),
            Route("GET", "/api/admin/users", .bearer, adminListUsers),
            Route("GET", "/api/admin/users/{uid}/sessions", .bearer, adminListSessions),
            Route("DELETE", "/api/admin/users/{uid}/sessions/{id}", .bearer, adminRevokeSession),
            Route("POST", "/api/admin/users/{uid}/sessions/revoke-all", .bearer, adminRevokeAll)
        ]
    }

    // MARK: Account API

    static func me(_ c: RouteContext) throws -> HTTPResponse {
        guard let s = c.session else { throw APIError(401, "INVALID_TOKEN", "a bearer token is required") }
        return .json(
            200,
            .object([
                ("user", try c.store.userJSON(s.userId) ?? .null), ("roles", try c.store.roles(s.userId)),
                (
                    "session",
                    .object([
                        ("id", .string(s.id)), ("appId", .string(s.appId)), ("expiresAt", .string(Timestamp.rfc3339String(s.expiresAt)))
                    ])
                )
            ]))
    }

    static func center(_ c: RouteContext) throws -> HTTPResponse {
        let row = try c.db.queryFirst("SELECT phone, password_updated_at FROM users WHERE id = ?", [.text(c.user)])
        let phone = row?.string("phone") ?? ""
        let masked =
            phone.count > 8 ? String(phone.prefix(4)) + String(repeating: "*", count: phone.count - 8) + String(phone.suffix(4)) : phone
        let count =
            try c.db.queryFirst(
                "SELECT count(*) AS n FROM sessions WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ?",
                [.text(c.user), .integer(c.server.clock.now().seconds)])?.int("n") ?? 0
        return .json(
            200,
            .object([
                ("user", try c.store.userJSON(c.user) ?? .null), ("roles", try c.store.roles(c.user)),
                (
                    "security",
                    .object([
                        ("phoneMasked", .string(masked)),
                        ("passwordUpdatedAt", row?.int64("password_updated_at").map { .string(Timestamp.rfc3339String($0)) } ?? .null)
                    ])
                ),
                ("sessionCount", .int(count)), ("currentSessionId", .string(c.session?.id ?? ""))
            ]))
    }

    static func sessionsJSON(_ c: RouteContext, user: String) throws -> JSON {
        let rows = try c.db.query(
            "SELECT * FROM sessions WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY created_at, id",
            [.text(user), .integer(c.server.clock.now().seconds)])
        return .array(
            rows.map { row in
                .object([
                    ("id", .optional(row.string("id"))), ("appId", .optional(row.string("app_id"))),
                    (
                        "device",
                        .object([("name", .optional(row.string("device_name"))), ("platform", .optional(row.string("device_platform")))])
                    ),
                    ("ip", .optional(row.string("ip"))),
                    ("createdAt", .string(Timestamp.rfc3339String(row.int64("created_at") ?? 0))),
                    ("lastSeenAt", .string(Timestamp.rfc3339String(row.int64("last_seen_at") ?? 0))),
                    ("expiresAt", .string(Timestamp.rfc3339String(row.int64("expires_at") ?? 0))),
                    ("current", .bool(row.string("id") == c.session?.id))
                ])
            })
    }

    static func listSessions(_ c: RouteContext) throws -> HTTPResponse {
        .json(200, .object([("sessions", try sessionsJSON(c, user: c.user))]))
    }

    /// Revokes one session of `user`; nil when it does not exist (or belongs to someone else).
    static func revokeOne(_ c: RouteContext, user: String, id: String) throws -> Bool? {
        guard let row = try c.db.queryFirst("SELECT revoked_at FROM sessions WHERE id = ? AND user_id = ?", [.text(id), .text(user)]) else {
            return nil
        }
        try c.store.countRevokeRequest(session: id)
        guard row.isNull("revoked_at") else { return false }
        try c.db.run("UPDATE sessions SET revoked_at = ? WHERE id = ?", [.integer(c.server.clock.now().seconds), .text(id)])
        return true
    }

    static func revokeSession(_ c: RouteContext) throws -> HTTPResponse {
        let id = c.parameter("id")
        guard let revoked = try revokeOne(c, user: c.user, id: id) else { throw APIError.notFound("session \(id)") }
        return .json(200, .object([("revoked", .bool(revoked)), ("current", .bool(id == c.session?.id))]))
    }

    static func revokeAll(_ c: RouteContext, user: String, except: String?) throws -> Int {
        try c.db.run(
            "UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND id != ?",
            [.integer(c.server.clock.now().seconds), .text(user), .text(except ?? "")])
        return c.db.changes
    }

    static func revokeOthers(_ c: RouteContext) throws -> HTTPResponse {
        .json(200, .object([("revoked", .int(try revokeAll(c, user: c.user, except: c.session?.id)))]))
    }

    // MARK: Admin

    static func requireAdminRole(_ c: RouteContext) throws {
        guard try c.store.roles(c.user).arrayValue?.contains(.string("admin")) == true else { throw APIError.forbidden }
    }

    static func requireAdmin(_ c: RouteContext) throws -> String {
        try requireAdminRole(c)
        let uid = c.parameter("uid")
        guard try c.db.queryFirst("SELECT id FROM users WHERE id = ?", [.text(uid)]) != nil else { throw APIError.notFound("user \(uid)") }
        return uid
    }

    static func adminListSessions(_ c: RouteContext) throws -> HTTPResponse {
        let uid = try requireAdmin(c)
        return .json(200, .object([("user", try c.store.userJSON(uid) ?? .null), ("sessions", try sessionsJSON(c, user: uid))]))
    }

    static func adminRevokeSession(_ c: RouteContext) throws -> HTTPResponse {
        let uid = try requireAdmin(c)
        let id = c.parameter("id")
        guard let revoked = try revokeOne(c, user: uid, id: id) else { throw APIError.notFound("session \(id)") }
        return .json(200, .object([("revoked", .bool(revoked))]))
    }

    static func adminRevokeAll(_ c: RouteContext) throws -> HTTPResponse {
        let uid = try requireAdmin(c)
        return .json(200, .object([("revoked", .int(try revokeAll(c, user: uid, except: nil)))]))
    }
}
