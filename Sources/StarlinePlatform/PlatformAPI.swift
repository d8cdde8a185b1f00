import StarlineCore

/// The platform routes of the HTTP contract (docs/openapi.yaml), typed.
///
/// Every failure is a `StarlineError`: transport errors from the `HTTPExchange`, HTTP error answers mapped
/// in `PlatformAPI.error(status:body:headers:route:now:)`, and `DATA_ERROR` for answers that do not have the
/// contract's shape. Every error's details carry `route` ("GET /api/me"), and `status` when the server
/// answered. Tokens, codes and passwords never appear in messages or details.
public struct PlatformAPI: Sendable {
    public let base: BaseURL
    public let appId: String
    /// One attempt per call; the retries are `send(_:retry:clock:)`'s, over whatever exchange this is.
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
            json: try await call(route, "/api/sessions/" + PlatformAPI.segment(id), method: "DELETE", token: token), route: route)
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

    // MARK: Admin (role admin, else FORBIDDEN)

    /// `GET /api/admin/users`: one page of users in id order (`limit` 1...1000, the server's default 100
    /// when nil) and the cursor of the next page, nil on the last. Pass `nextCursor` back unchanged.
    public func adminUsers(token: String, limit: Int?, cursor: String?) async throws -> (users: [JSON], nextCursor: String?) {
        let route = "GET /api/admin/users"
        var query: [(String, String)] = []
        if let limit { query.append(("limit", String(limit))) }
        if let cursor { query.append(("cursor", cursor)) }
        let json = try await call(route, "/api/admin/users" + (query.isEmpty ? "" : "?" + PlatformAPI.formEncode(query)), token: token)
        return try PlatformAPI.userPage(AnswerReader(json: json, route: route))
    }

    /// One page of `GET /api/admin/users`: the users and the cursor of the next page (nil on the last).
    static func userPage(_ answer: AnswerReader) throws -> (users: [JSON], nextCursor: String?) {
        let next: String?
        switch answer.json["nextCursor"] {
        case nil, .null?: next = nil
        case .string(let text)? where !text.isEmpty: next = text
        default: throw answer.malformed("'nextCursor' is not a non-empty string or null")
        }
        return (try answer.array("users"), next)
    }

    public func adminSessions(token: String, user: String) async throws -> [JSON] {
        let route = "GET /api/admin/users/{uid}/sessions"
        let json = try await call(route, "/api/admin/users/\(PlatformAPI.segment(user))/sessions", token: token)
        return try AnswerReader(json: json, route: route).array("sessions")
    }

    public func adminRevokeSession(token: String, user: String, id: String) async throws -> Bool {
        let route = "DELETE /api/admin/users/{uid}/sessions/{id}"
        let json = try await call(
            route, "/api/admin/users/\(PlatformAPI.segment(user))/sessions/\(PlatformAPI.segment(id))",
            method: "DELETE", token: token)
        return try AnswerReader(json: json, route: route).bool("revoked")
    }

    public func adminRevokeAll(token: String, user: String) async throws -> Int {
        let route = "POST /api/admin/users/{uid}/sessions/revoke-all"
        let json = try await call(route, "/api/admin/users/\(PlatformAPI.segment(user))/sessions/revoke-all", method: "POST", token: token)
        return Int(try AnswerReader(json: json, route: route).int("revoked"))
    }

    // MARK: Requests

    func url(_ path: String) -> String { base.origin + base.path + path }

    /// A JSON API call: the answer's JSON object on 2xx, the mapped error otherwise. GET and DELETE are
    /// repeated on transient failures (`retries`); POST never is.
    func call(_ route: String, _ path: String, method: String = "GET", token: String? = nil, json: JSON? = nil) async throws -> JSON {
        var headers = [("Accept", "application/json")]
        if let token { headers.append(("Authorization", "Bearer " + token)) }
        var body: [UInt8]?
        if let json {
            headers.append(("Content-Type", "application/json"))
            body = Array(json.serialized().utf8)
        }
        let idempotent = method == "GET" || method == "DELETE"
        let reply = try await send(
            route, HTTPRequestSpec(method: method, url: url(path), headers: headers, body: body), idempotent: idempotent)
        return try expectSuccess(reply, route)
    }

    /// A form POST to an OAuth endpoint; the reply whatever its status.
    func send(_ route: String, _ path: String, form: [(String, String)], idempotent: Bool = false) async throws -> HTTPReply {
        let request = HTTPRequestSpec(
            method: "POST", url: url(path),
            headers: [("Accept", "application/json"), ("Content-Type", "application/x-www-form-urlencoded")],
            body: Array(PlatformAPI.formEncode(form).utf8))
        return try await send(route, request, idempotent: idempotent)
    }

    /// Sends with retries when idempotent, adding `route` to transport errors.
    func send(_ route: String, _ request: HTTPRequestSpec, idempotent: Bool) async throws -> HTTPReply {
        var request = request
        if let requestTimeout { request.timeout = requestTimeout }
        do {
            return try await transport.send(request, retry: RetryPolicy(retries: idempotent ? retries : 0), clock: clock)
        } catch var error as StarlineError {
            error.details = PlatformAPI.adding([("route", .string(route))], to: error.details)
            throw error
        }
    }

    /// The JSON body of a 2xx answer, or the mapped error.
    func expectSuccess(_ reply: HTTPReply, _ route: String, allowEmpty: Bool = false) throws -> JSON {
        guard (200...299).contains(reply.status) else {
            throw PlatformAPI.error(status: reply.status, body: reply.body, headers: reply.headers, route: route, now: clock.now())
        }
        if allowEmpty, reply.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .object([]) }
        let json: JSON
        do {
            json = try JSON.parse(reply.body)
        } catch let error as StarlineError {
            throw StarlineError(
                .data, "unexpected answer from \(route) (HTTP \(reply.status)): not JSON (\(error.message))",
                details: .object([("status", .int(reply.status)), ("route", .string(route))]))
        }
        guard case .object = json else {
            throw StarlineError(
                .data, "unexpected answer from \(route) (HTTP \(reply.status)): not a JSON object",
                details: .object([("status", .int(reply.status)), ("route", .string(route))]))
        }
        return json
    }

    static func tokenGrant(_ json: JSON, route: String) throws -> TokenGrant {
        let d = AnswerReader(json: json, route: route)
        if let type = json["token_type"]?.stringValue, type.lowercased() != "bearer" {
            throw d.malformed("token_type '\(type)' is not Bearer")
        }
        return TokenGrant(
            accessToken: try d.string("access_token"), sessionId: try d.string("session_id"),
            expiresIn: try d.lifetime("expires_in", max: ReplyLimits.maxTokenLifetime),
            user: json["user"] ?? .null, roles: json["roles"] == nil ? [] : try d.strings("roles"))
    }

    /// `application/x-www-form-urlencoded` (RFC 3986 unreserved characters kept, everything else %XX).
    static func formEncode(_ fields: [(String, String)]) -> String {
        fields.map { PercentEncoding.encode($0.0) + "=" + PercentEncoding.encode($0.1) }.joined(separator: "&")
    }

    /// One path segment, percent-encoded; "." and ".." are encoded too so they cannot climb the path.
    package static func segment(_ value: String) -> String {
        value == "." || value == ".." ? String(repeating: "%2E", count: value.count) : PercentEncoding.encode(value)
    }

    package static func adding(_ members: [(String, JSON)], to details: JSON?) -> JSON {
        var result = details ?? .object([])
        if case .object = result {} else { result = .object([("value", result)]) }
        for (key, value) in members where result[key] == nil { result.set(key, value) }
        return result
    }
}

// MARK: - Error mapping

extension PlatformAPI {
    /// The one mapping from an HTTP error answer to a `StarlineError` (exit statuses follow from the code):
    ///
    /// | answer | code | exit |
    /// |---|---|---|
    /// | 401 `SESSION_REVOKED` / `SESSION_EXPIRED` | same | 4 |
    /// | 401 `INVALID_TOKEN` (or any other 401 of the API) | `INVALID_TOKEN` | 4 |
    /// | 403 `ACCOUNT_RESTRICTED` / `APP_UNAVAILABLE` | same | 4 |
    /// | other 403 | `FORBIDDEN`, `details.serverCode` | 5 |
    /// | 404 | `NOT_FOUND` | 6 |
    /// | 429 | `RATE_LIMITED`, retryable, `details.retryAfter` | 7 |
    /// | 5xx | `SERVER_ERROR`, retryable | 7 |
    /// | 409 / 410 | `CONFLICT` | 12 |
    /// | 400 / 413 / other 4xx | `REQUEST_REJECTED` | 2 |
    /// | OAuth `invalid_grant` | `INVALID_GRANT` | 9 |
    /// | OAuth `invalid_client` | `INVALID_CLIENT` | 2 |
    /// | OAuth `access_denied` / `expired_token` / `authorization_pending` / `slow_down` | `NO_RESULT` | 9 |
    /// | OAuth `invalid_request` / `unsupported_grant_type` / other | `REQUEST_REJECTED` | 2 |
    /// | anything else (1xx, 3xx: redirects are not followed) | `SERVER_ERROR`, not retryable | 7 |
    ///
    /// Details: `status`, `route` (when given), `serverCode` (the server's code, when any).
    /// `now`: Unix seconds (the caller's clock), against which a `Retry-After` date is read.
    public static func error(status: Int, body: [UInt8], headers: [String: String], route: String? = nil, now: Int64) -> StarlineError {
        let json = try? JSON.parse(body)
        // API errors: {"error":{"code","message"}}; OAuth errors: {"error":"invalid_grant","error_description"}.
        let apiCode = json?["error"]?["code"]?.stringValue
        let oauthCode = json?["error"]?.stringValue
        let serverCode = apiCode ?? oauthCode
        let serverMessage = (json?["error"]?["message"]?.stringValue ?? json?["error_description"]?.stringValue).map(clean)
        let on = route.map { " on \($0)" } ?? ""
        var details: [(String, JSON)] = [("status", .int(status))]
        if let route { details.append(("route", .string(route))) }
        if let serverCode { details.append(("serverCode", .string(clean(serverCode)))) }
        func make(_ code: ErrorCode, _ message: String, retryable: Bool = false) -> StarlineError {
            StarlineError(code, message, retryable: retryable, details: .object(details))
        }
        /// "summary: the server's message" (or the summary alone).
        func explained(_ summary: String) -> String {
            guard let serverMessage, !serverMessage.isEmpty else { return summary }
            return summary + ": " + serverMessage
        }

        if let oauthCode {
            switch oauthCode {
            case "invalid_grant": return make(.invalidGrant, explained("the sign-in was not accepted (invalid grant)"))
            case "invalid_client": return make(.invalidClient, explained("the server does not accept this app ID (invalid client)"))
            case "access_denied": return make(.noResult, "the sign-in was denied")
            case "expired_token": return make(.noResult, "the device code expired")
            case "authorization_pending": return make(.noResult, "the sign-in has not been approved yet")
            case "slow_down": return make(.noResult, "the sign-in is being polled too fast")
            default: break
            }
        }
        switch status {
        case 401:
            switch apiCode {
            case "SESSION_REVOKED": return make(.sessionRevoked, "the session was revoked; sign in again")
            case "SESSION_EXPIRED": return make(.sessionExpired, "the session expired; sign in again")
            default: return make(.invalidToken, "the server does not know this session (invalid token); sign in again")
            }
        case 403:
            switch apiCode {
            case "ACCOUNT_RESTRICTED": return make(.accountRestricted, "the account is restricted")
            case "APP_UNAVAILABLE": return make(.appUnavailable, "the app is unavailable")
            default: return make(.forbidden, explained("the server refused the request\(on)"))
            }
        case 404:
            return make(.notFound, explained("not found\(on)"))
        case 429:
            // Whole seconds as the server gave them (saturated, never converted from a Double that could trap).
            let wait = headers["retry-after"].flatMap { RetryPolicy.retryAfterSeconds($0, now: now) }
            if let wait { details.append(("retryAfter", .int(wait))) }
            return make(
                .rateLimited, "the server is rate limiting requests" + (wait.map { "; retry after \($0) s" } ?? ""),
                retryable: true)
        case 409, 410:
            return make(
                .conflict, explained("the server rejected the request\(on) (HTTP \(status)\(serverCode.map { " \(clean($0))" } ?? ""))"))
        case 400...499:
            return make(
                .requestRejected,
                explained("the server rejected the request\(on) (HTTP \(status)\(serverCode.map { " \(clean($0))" } ?? ""))"))
        case 500...599:
            return make(.server, explained("server error (HTTP \(status))\(on)"), retryable: true)
        case 300...399:
            return make(.server, "unexpected redirect (HTTP \(status))\(on); redirects are not followed: check the API base URL")
        default:
            return make(.server, "unexpected HTTP status \(status)\(on)")
        }
    }

    /// A server-supplied string made safe for one line of output: control characters dropped, at most 300 characters.
    static func clean(_ text: String) -> String {
        var out = String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
        if out.count > 300 { out = String(out.prefix(300)) + "…" }
        return out
    }
}
