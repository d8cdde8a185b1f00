import StarlineCore
import StarlineSQLite
import StarlineCrypto

/// OAuth 2.0 of the platform: RFC 8414 metadata, the authorization-code flow with PKCE (RFC 7636) and
/// its sign-in page, the token endpoint for both grants, and RFC 7009 revocation.
extension PlatformRoutes {

    static func metadata(_ c: RouteContext) throws -> HTTPResponse {
        let base = c.server.baseURL
        return .json(
            200,
            .object([
                ("issuer", .string(base)),
                ("authorization_endpoint", .string(base + "/oauth/authorize")),
                ("token_endpoint", .string(base + "/oauth/token")),
                ("device_authorization_endpoint", .string(base + "/oauth/device_authorization")),
                ("revocation_endpoint", .string(base + "/oauth/revoke")),
                ("response_types_supported", .array([.string("code")])),
                ("grant_types_supported", .array([.string("authorization_code"), .string(deviceGrant)])),
                ("code_challenge_methods_supported", .array([.string("S256")])),
                ("token_endpoint_auth_methods_supported", .array([.string("none")]))
            ]))
    }

    /// Registered redirect URIs (RFC 8252 loopback on any port, or the app's custom scheme).
    static func isAllowedRedirect(_ uri: String, app: String) -> Bool {
        if uri == "starline-\(app)://auth/callback" { return true }
        guard let url = WebURL(uri), url.scheme == "http", url.userInfo == nil, url.query == nil, url.fragment == nil,
            url.host == "127.0.0.1" || url.host == "[::1]", url.port != nil, url.path == "/callback"
        else { return false }
        return true
    }

    static func appExists(_ c: RouteContext, _ app: String) throws -> Bool {
        try c.db.queryFirst("SELECT id FROM apps WHERE id = ?", [.text(app)]) != nil
    }

    static func redirect(_ uri: String, _ items: [(String, String?)]) -> HTTPResponse {
        let query = items.compactMap { name, value in value.map { "\(name)=\(PercentEncoding.encode($0))" } }.joined(separator: "&")
        return .redirect(uri + (uri.contains("?") ? "&" : "?") + query)
    }

    static func authorizePage(_ c: RouteContext) throws -> HTTPResponse {
        let q = c.request
        let app = q.queryValue("client_id") ?? ""
        let redirectURI = q.queryValue("redirect_uri") ?? ""
        guard !app.isEmpty, try appExists(c, app) else {
            return .html(400, Pages.error("Unknown application", "client_id '\(app)' is not registered."))
        }
        guard isAllowedRedirect(redirectURI, app: app) else {
            return .html(400, Pages.error("Invalid redirect URI", "The redirect URI is not registered for this application."))
        }
        let state = q.queryValue("state")
        guard q.queryValue("response_type") == "code" else {
            return redirect(redirectURI, [("error", "unsupported_response_type"), ("state", state)])
        }
        guard let challenge = q.queryValue("code_challenge"), challenge.count >= 43, challenge.count <= 128,
            (q.queryValue("code_challenge_method") ?? "S256") == "S256"
        else {
            return redirect(
                redirectURI, [("error", "invalid_request"), ("error_description", "PKCE with S256 is required"), ("state", state)])
        }
        if let user = c.server.configuration.autoApprove {
            let code = try issueCode(c, app: app, user: user, redirectURI: redirectURI, challenge: challenge)
            return redirect(redirectURI, [("code", code), ("state", state)])
        }
        let requestId = DevServerStore.token()
        try c.store.prunePending("auth_requests")
        try c.db.run(
            "INSERT INTO auth_requests(id, app_id, redirect_uri, state, challenge, expires_at) VALUES(?,?,?,?,?,?)",
            [
                .text(requestId), .text(app), .text(redirectURI), state.map(SQLiteValue.text) ?? .null, .text(challenge),
                .integer(c.server.clock.now().seconds + authRequestLifetime)
            ])
        return .html(200, Pages.signIn(app: app, requestId: requestId, message: nil), formRedirect: redirectURI)
    }

    static func issueCode(_ c: RouteContext, app: String, user: String, redirectURI: String, challenge: String) throws -> String {
        let code = Base64.encodeURL(Sodium.randomBytes(24))
        try c.store.prunePending("auth_codes")
        try c.db.run(
            "INSERT INTO auth_codes(code, app_id, user_id, redirect_uri, challenge, expires_at) VALUES(?,?,?,?,?,?)",
            [
                .text(code), .text(app), .text(user), .text(redirectURI), .text(challenge),
                .integer(c.server.clock.now().seconds + c.server.configuration.codeTTL)
            ])
        return code
    }

    static func authorizeSubmit(_ c: RouteContext, _ serverState: inout DevServerState) throws -> HTTPResponse {
        let form = c.form()
        // The request id is random, single-use and only in the page served to the browser: a forged
        // cross-site form cannot know it (CSRF).
        guard let requestId = form["request_id"],
            let row = try c.db.queryFirst("SELECT * FROM auth_requests WHERE id = ?", [.text(requestId)]),
            (row.int64("expires_at") ?? 0) > c.server.clock.now().seconds
        else {
            return .html(
                400,
                Pages.error("Sign-in expired", "This sign-in request is unknown or expired. Start the sign-in again from your application.")
            )
        }
        let app = row.string("app_id") ?? "", redirectURI = row.string("redirect_uri") ?? "", state = row.string("state")
        if form["action"] == "deny" {
            try c.db.run("DELETE FROM auth_requests WHERE id = ?", [.text(requestId)])
            return redirect(redirectURI, [("error", "access_denied"), ("state", state)])
        }
        guard form["action"] == "approve" else { return .html(400, Pages.error("Bad request", "Choose Approve or Deny.")) }
        let user = form["username"] ?? ""
        switch try attemptPassword(c, &serverState, user: user, password: form["password"] ?? "") {
        case .accepted: break
        case .wrong:
            return .html(
                401, Pages.signIn(app: app, requestId: requestId, message: "Wrong user name or password."), formRedirect: redirectURI)
        case .throttled(let wait):
            return throttledPage(
                Pages.signIn(app: app, requestId: requestId, message: throttledMessage(wait)), retryAfter: wait, formRedirect: redirectURI)
        }
        try c.db.run("DELETE FROM auth_requests WHERE id = ?", [.text(requestId)])
        let code = try issueCode(c, app: app, user: user, redirectURI: redirectURI, challenge: row.string("challenge") ?? "")
        return redirect(redirectURI, [("code", code), ("state", state)])
    }

    static func tokenResponse(_ c: RouteContext, user: String, session: (id: String, token: String)) throws -> HTTPResponse {
        var r = HTTPResponse.json(
            200,
            .object([
                ("access_token", .string(session.token)), ("token_type", .string("Bearer")),
                ("expires_in", .int(Int(c.server.configuration.sessionTTL))), ("session_id", .string(session.id)),
                ("user", try c.store.userJSON(user) ?? .null), ("roles", try c.store.roles(user))
            ]))
        r.headers.append(("Cache-Control", "no-store"))
        return r
    }

    static func newSession(_ c: RouteContext, form: [String: String], user: String, app: String, authCode: String?) throws -> (
        id: String, token: String
    ) {
        try c.store.createSession(
            user: user, app: app, deviceName: form["device_name"] ?? c.request.header("User-Agent") ?? "unknown device",
            platform: form["device_platform"] ?? "linux", ip: c.request.clientAddress,
            ttl: c.server.configuration.sessionTTL, authCode: authCode)
    }

    static func token(_ c: RouteContext) throws -> HTTPResponse {
        let form = c.form()
        switch form["grant_type"] {
        case "authorization_code":
            guard let code = form["code"], let verifier = form["code_verifier"], let app = form["client_id"],
                let redirectURI = form["redirect_uri"]
            else {
                throw OAuthError("invalid_request", "code, code_verifier, client_id and redirect_uri are required")
            }
            guard let row = try c.db.queryFirst("SELECT * FROM auth_codes WHERE code = ?", [.text(code)]) else {
                throw OAuthError("invalid_grant", "unknown authorization code")
            }
            if !row.isNull("used_at") {
                // RFC 6749 §4.1.2: a reused code revokes the tokens issued from it.
                try c.db.run(
                    "UPDATE sessions SET revoked_at = ? WHERE auth_code = ? AND revoked_at IS NULL",
                    [.integer(c.server.clock.now().seconds), .text(code)])
                throw OAuthError("invalid_grant", "the authorization code was already used")
            }
            guard (row.int64("expires_at") ?? 0) > c.server.clock.now().seconds else {
                throw OAuthError("invalid_grant", "the authorization code expired")
            }
            guard row.string("app_id") == app else { throw OAuthError("invalid_grant", "the code was issued to another client") }
            guard row.string("redirect_uri") == redirectURI else {
                throw OAuthError("invalid_grant", "redirect_uri does not match the authorization request")
            }
            let computed = Base64.encodeURL(SHA256.hash(Array(verifier.utf8)))
            guard verifier.count >= 43, verifier.count <= 128, computed == row.string("challenge") else {
                throw OAuthError("invalid_grant", "the code_verifier does not match the code_challenge")
            }
            try c.db.run("UPDATE auth_codes SET used_at = ? WHERE code = ?", [.integer(c.server.clock.now().seconds), .text(code)])
            let user = row.string("user_id") ?? ""
            if let disabled = try c.db.queryFirst("SELECT disabled FROM apps WHERE id = ?", [.text(app)])?.bool("disabled"), disabled {
                throw OAuthError("invalid_client", "the app is unavailable")
            }
            return try tokenResponse(c, user: user, session: newSession(c, form: form, user: user, app: app, authCode: code))
        case deviceGrant:
            guard let deviceCode = form["device_code"], let app = form["client_id"] else {
                throw OAuthError("invalid_request", "device_code and client_id are required")
            }
            guard let row = try c.db.queryFirst("SELECT * FROM device_codes WHERE device_code = ?", [.text(deviceCode)]),
                row.string("app_id") == app
            else {
                throw OAuthError("invalid_grant", "unknown device code")
            }
            if row.bool("issued") == true { throw OAuthError("invalid_grant", "the device code was already used") }
            let nowMs = Timestamp.nowMilliseconds()
            if (row.int64("slow_downs") ?? 0) > 0 {
                try c.db.run(
                    """
                    UPDATE device_codes SET slow_downs = slow_downs - 1, interval = interval + 5, last_poll_ms = ? WHERE \
                    device_code = ?
                    """,
                    [.integer(nowMs), .text(deviceCode)])
                throw OAuthError("slow_down", "polling too fast (injected by --device-slow-down)")
            }
            // Expiry on the server's clock (which tests move); the polling interval above counts real milliseconds.
            if (row.int64("expires_at") ?? 0) <= c.server.clock.now().seconds {
                throw OAuthError("expired_token", "the device code expired")
            }
            switch row.string("status") {
            case "denied": throw OAuthError("access_denied", "the user denied the request")
            case "approved":
                try c.db.run("UPDATE device_codes SET issued = 1 WHERE device_code = ?", [.text(deviceCode)])
                let user = row.string("user_id") ?? ""
                return try tokenResponse(c, user: user, session: newSession(c, form: form, user: user, app: app, authCode: nil))
            default:
                let interval = row.int64("interval") ?? 5
                if let last = row.int64("last_poll_ms"), nowMs - last < interval * 1000 {
                    // RFC 8628 §3.5: "the interval MUST be increased by 5 seconds for this and all subsequent requests".
                    try c.db.run(
                        "UPDATE device_codes SET interval = interval + 5, last_poll_ms = ? WHERE device_code = ?",
                        [.integer(nowMs), .text(deviceCode)])
                    throw OAuthError("slow_down", "polling too fast; wait \(interval + 5) seconds between requests")
                }
                try c.db.run("UPDATE device_codes SET last_poll_ms = ? WHERE device_code = ?", [.integer(nowMs), .text(deviceCode)])
                throw OAuthError("authorization_pending", "the user has not approved the request yet")
            }
        case nil:
            throw OAuthError("invalid_request", "grant_type is required")
        default:
            throw OAuthError("unsupported_grant_type", "supported: authorization_code, \(deviceGrant)")
        }
    }

    static func revoke(_ c: RouteContext) throws -> HTTPResponse {
        // RFC 7009 §2.2: "The authorization server responds with HTTP status code 200 if the token has been
        // revoked successfully or if the client submitted an invalid token."
        // §2.1: "token REQUIRED" — a request without one is malformed (§2.2.1: the error responses of RFC 6749
        // §5.2, `invalid_request`), not a revocation of nothing.
        guard let token = c.form()["token"], !token.isEmpty else {
            throw OAuthError("invalid_request", "the token to revoke is required (RFC 7009 §2.1)")
        }
        try c.db.run(
            "UPDATE sessions SET revoked_at = ? WHERE token = ? AND revoked_at IS NULL",
            [.integer(c.server.clock.now().seconds), .text(token)])
        return .json(200, .object([]))
    }

}
