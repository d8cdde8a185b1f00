import StarlineCore
import StarlineHTTP

/// The platform routes of the HTTP contract (docs/openapi.yaml), typed.
///
/// Every failure is a `StarlineError`: transport errors from the `HTTPExchange`, HTTP error answers mapped
/// in `PlatformHTTP.error(status:body:headers:route:now:)`, and `DATA_ERROR` for answers that do not have the
/// contract's shape. Every error's details carry `route` ("GET /api/me"), and `status` when the server
/// answered. Tokens, codes and passwords never appear in messages or details.
public struct PlatformAPI: Sendable {
    public let base: BaseURL
    public let appId: String
    /// One attempt per call; the retries are the one retry loop's (`sendBlocking(_:retry:clock:cancel:)`, which `send`
    /// runs off the caller's thread), over whatever exchange this is.
    public let transport: any HTTPExchange
    /// Retries for requests that are safe to repeat (GET, DELETE, revocation); others are never repeated.
    public var retries: Int
    /// What the retries wait on, and the time a `Retry-After` date is read against: a tool's `IOStreams`
    /// clock with real waits; tests record the waits instead of sitting them out.
    public var clock: RetryClock
    /// A timeout for every request of this value, in place of the transport's (nil: the transport's): work
    /// with a budget of its own (`StarlightClient.retryPendingRevocations`) shares the run's transport.
    public var requestTimeout: Double?
    /// `device_platform` sent with token requests (shown in the session list).
    public var devicePlatform = "linux"

    public init(base: BaseURL, appId: String, transport: any HTTPExchange, retries: Int = 2, clock: RetryClock = .system) {
        self.base = base
        self.appId = appId
        self.transport = transport
        self.retries = retries
        self.clock = clock
    }

    // MARK: OAuth

    /// The authorization-code request URL (RFC 6749 §4.1.1 with PKCE S256) to open in a browser.
    public func authorizeURL(redirectURI: String, state: String, codeChallenge: String) -> String {
        url("/oauth/authorize") + "?"
            + PlatformAPI.formEncode([
                ("response_type", "code"), ("client_id", appId), ("redirect_uri", redirectURI), ("state", state),
                ("code_challenge", codeChallenge), ("code_challenge_method", "S256")
            ])
    }

    /// `POST /oauth/token` with `authorization_code`. A used, expired or mismatched code (or verifier)
    /// is `INVALID_GRANT` (exit 9).
    public func exchangeCode(code: String, redirectURI: String, verifier: String, deviceName: String) async throws -> TokenGrant {
        let route = "POST /oauth/token"
        let reply = try await send(
            route, "/oauth/token",
            form: [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI), ("client_id", appId),
                ("code_verifier", verifier), ("device_name", deviceName), ("device_platform", devicePlatform)
            ])
        return try PlatformAPI.tokenGrant(try expectSuccess(reply, route), route: route)
    }

    /// `POST /oauth/device_authorization` (RFC 8628 §3.1).
    public func deviceAuthorization() async throws -> DeviceAuthorization {
        let route = "POST /oauth/device_authorization"
        let json = try expectSuccess(try await send(route, "/oauth/device_authorization", form: [("client_id", appId)]), route)
        let d = AnswerReader(json: json, route: route)
        let complete = try json["verification_uri_complete"]?.stringValue.map { try Self.shownURI($0, "verification_uri_complete", route) }
        return DeviceAuthorization(
            deviceCode: try d.string("device_code"), userCode: try Self.shownUserCode(try d.string("user_code"), route),
            verificationURI: try Self.shownURI(try d.string("verification_uri"), "verification_uri", route),
            verificationURIComplete: complete,
            expiresIn: try d.lifetime("expires_in", max: ReplyLimits.maxDeviceCodeLifetime),
            interval: ReplyLimits.pollInterval(json["interval"]))
    }

    /// A URI the user is shown and may open (RFC 8628 §3.2): https, or http on a loopback host (as every base
    /// URL, W4), with nothing hidden or acting on a terminal in it (`TerminalText`: an OSC 52 clipboard write,
    /// a screen clear, a bidi override) — otherwise the reply is `DATA_ERROR` and nothing is printed or opened.
    static func shownURI(_ text: String, _ field: String, _ route: String) throws -> String {
        let fail = { (why: String) in
            StarlineError(
                .data, "the server's \(field) cannot be shown or opened: \(why)",
                details: .object([("route", .string(route)), ("field", .string(field))]))
        }
        guard text.utf8.count <= 2048, !text.unicodeScalars.contains(where: { TerminalText.isHidden($0.value) }) else {
            throw fail("it has control, bidi or zero-width characters, or is longer than 2048 bytes")
        }
        guard let url = WebURL(text), url.hasAuthority, !url.host.isEmpty, url.userInfo == nil,
            url.scheme == "https" || (url.scheme == "http" && url.hostIsLoopback)
        else { throw fail("it is not an https URL (or http on a loopback host)") }
        return text
    }

    /// The code the user types (RFC 8628 §6.1: short, from a small character set): printable ASCII, at most 64
    /// characters, or `DATA_ERROR` — it is printed as the server sent it.
    static func shownUserCode(_ code: String, _ route: String) throws -> String {
        guard !code.isEmpty, code.utf8.count <= 64, code.utf8.allSatisfy({ (0x21...0x7E).contains($0) || $0 == 0x20 }) else {
            throw StarlineError(
                .data, "the server's user_code is not a short code of printable ASCII characters",
                details: .object([("route", .string(route)), ("field", .string("user_code"))]))
        }
        return code
    }

    /// One poll of the device-code grant. `access_denied` and `expired_token` throw `NO_RESULT`.
    public func pollDevice(deviceCode: String, deviceName: String? = nil) async throws -> DevicePoll {
        let route = "POST /oauth/token"
        var form = [
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", deviceCode), ("client_id", appId),
            ("device_platform", devicePlatform)
        ]
        if let deviceName { form.append(("device_name", deviceName)) }
        let reply = try await send(route, "/oauth/token", form: form)
        if reply.status == 400 || reply.status == 401, let json = try? reply.json() {
            switch json["error"]?.stringValue {
            case "authorization_pending": return .pending
            case "slow_down": return .slowDown
            default: break
            }
        }
        return .granted(try PlatformAPI.tokenGrant(try expectSuccess(reply, route), route: route))
    }

    /// `POST /oauth/revoke` (RFC 7009): the server answers 200 for any token, known or not.
    public func revoke(token: String) async throws {
        let route = "POST /oauth/revoke"
        _ = try expectSuccess(
            try await send(
                route, "/oauth/revoke",
                form: [
                    ("token", token), ("token_type_hint", "access_token"),
                    ("client_id", appId)
                ], idempotent: true), route, allowEmpty: true)
    }

    // MARK: Account

    public func me(token: String) async throws -> Me {
        let route = "GET /api/me"
        let json = try await call(route, "/api/me", token: token)
        let d = AnswerReader(json: json, route: route)
        let session = try d.object("session")
        let s = AnswerReader(json: session, route: route, prefix: "session.")
        let expires = try s.string("expiresAt")
        guard let expiresAt = Timestamp(rfc3339: expires)?.seconds else { throw d.malformed("session.expiresAt is not an RFC 3339 time") }
        return Me(
            user: try d.object("user"), roles: try d.strings("roles"), sessionId: try s.string("id"), appId: try s.string("appId"),
            expiresAt: expiresAt)
    }

    /// `GET /api/center`: the account-center state, as the server sends it.
    public func center(token: String) async throws -> JSON {
        try await call("GET /api/center", "/api/center", token: token)
    }

    /// `GET /api/sessions`: the account's live sessions (`current` marks the caller's).
    public func sessions(token: String) async throws -> [JSON] {
        let route = "GET /api/sessions"
        return try AnswerReader(json: try await call(route, "/api/sessions", token: token), route: route).array("sessions")
    }

    /// `DELETE /api/sessions/{id}`: `revoked` is false when it was revoked already; `current` when it was the caller's.
    public func revokeSession(token: String, id: String) async throws -> (revoked: Bool, current: Bool) {
        let route = "DELETE /api/sessions/{id}"
        let d = AnswerReader(
            json: try await call(route, "/api/sessions/" + PlatformHTTP.segment(id), method: "DELETE", token: token), route: route)
        return (try d.bool("revoked"), try d.bool("current"))
    }

    /// `POST /api/sessions/revoke-others`: how many sessions were revoked.
    public func revokeOtherSessions(token: String) async throws -> Int {
        let route = "POST /api/sessions/revoke-others"
        return Int(
            try AnswerReader(json: try await call(route, "/api/sessions/revoke-others", method: "POST", token: token), route: route).int(
                "revoked"))
    }

    /// `POST /api/password`: how many other sessions were revoked. Wrong old password: `FORBIDDEN`
    /// (serverCode `WRONG_PASSWORD`); too weak: `REQUEST_REJECTED` (serverCode `WEAK_PASSWORD`).
    public func changePassword(token: String, old: String, new: String) async throws -> Int {
        let route = "POST /api/password"
        let json = try await call(
            route, "/api/password", method: "POST", token: token,
            json: .object([("oldPassword", .string(old)), ("newPassword", .string(new))]))
        return Int(try AnswerReader(json: json, route: route).int("revokedOthers"))
    }

    /// `POST /api/password/sms-reset/request`: the server answers alike for unknown phones.
    public func requestSMSReset(phone: String) async throws {
        _ = try await call(
            "POST /api/password/sms-reset/request", "/api/password/sms-reset/request", method: "POST",
            json: .object([("phone", .string(phone))]))
    }

    /// `POST /api/password/sms-reset`: how many sessions were revoked (all of the account's).
    public func confirmSMSReset(phone: String, code: String, newPassword: String) async throws -> Int {
        let route = "POST /api/password/sms-reset"
        let json = try await call(
            route, "/api/password/sms-reset", method: "POST",
            json: .object([("phone", .string(phone)), ("code", .string(code)), ("newPassword", .string(newPassword))]))
        return Int(try AnswerReader(json: json, route: route).int("revoked"))
    }
}
