import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// Brute force (SMS codes, passwords), DNS rebinding, unbounded growth and connection exhaustion
/// against a server any local user can reach. Counts and status codes only, never timings.
@Suite struct DevServerAbuseTests {
    static let bobPhone = "+8613800000002"

    func smsReset(_ server: DevServerProcess, code: String, password: String = "bob-sms-pass") throws -> HTTPResult {
        try server.request(
            "POST", "/api/password/sms-reset",
            body: .json(
                .object([
                    ("phone", .string(Self.bobPhone)), ("code", .string(code)), ("newPassword", .string(password))
                ])))
    }

    func requestCode(_ server: DevServerProcess, phone: String = bobPhone) throws -> HTTPResult {
        try server.request("POST", "/api/password/sms-reset/request", body: .json(.object([("phone", .string(phone))])))
    }

    func currentCode(_ server: DevServerProcess) throws -> String? {
        try server.dev("GET", "/__dev/sms/\(PercentEncoding.encode(Self.bobPhone))").json()["code"]?.stringValue
    }

    /// A code that is certainly not `code` (same length, so only the comparison can fail).
    func wrong(_ code: String) -> String { code == "000000" ? "111111" : "000000" }

    // MARK: SMS codes

    @Test func anSMSCodeIsBurnedAfterFiveWrongAttempts() throws {
        let server = try DevServerProcess()
        #expect(try requestCode(server).status == 202)
        let code = try #require(try currentCode(server))
        for _ in 0..<4 { #expect(try smsReset(server, code: wrong(code)).errorCode == "INVALID_CODE") }
        let fifth = try smsReset(server, code: wrong(code))
        #expect(fifth.status == 400 && fifth.errorCode == "CODE_BURNED")
        // Dead even for the right code, and gone from the dev view.
        #expect(try smsReset(server, code: code).errorCode == "CODE_BURNED")
        #expect(try server.dev("GET", "/__dev/sms/\(PercentEncoding.encode(Self.bobPhone))").status == 404)
        #expect(throws: StarlineError.self) { try server.login("bob", password: "bob-sms-pass") }
        // A new code works.
        #expect(try requestCode(server).status == 202)
        let fresh = try #require(try currentCode(server))
        #expect(try smsReset(server, code: fresh).status == 200)
        _ = try server.login("bob", password: "bob-sms-pass")
    }

    @Test func smsCodesSentPerPhoneAreBoundedForKnownAndUnknownPhones() throws {
        let server = try DevServerProcess()
        for phone in [Self.bobPhone, "+100"] {
            for _ in 0..<5 { #expect(try requestCode(server, phone: phone).status == 202) }
            let sixth = try requestCode(server, phone: phone)
            #expect(sixth.status == 429 && sixth.errorCode == "TOO_MANY_ATTEMPTS")
            #expect(Int(sixth.header("Retry-After") ?? "") ?? 0 > 0)
        }
        // Another account is not affected.
        #expect(try requestCode(server, phone: "+8613800000003").status == 202)
    }

    // MARK: Passwords

    func signInPage(_ server: DevServerProcess) throws -> String {
        let (_, challenge) = DevServerProcess.pkce()
        let page = try server.request(
            "GET",
            "/oauth/authorize?response_type=code&client_id=workbench&redirect_uri=\(PercentEncoding.encode("http://127.0.0.1:53682/callback"))&state=s&code_challenge=\(challenge)&code_challenge_method=S256"
        )
        return try #require(DevServerProcess.formValue(page.text, "request_id"))
    }

    func submit(_ server: DevServerProcess, _ requestId: String, _ user: String, _ password: String) throws -> HTTPResult {
        try server.request(
            "POST", "/oauth/authorize",
            body: .form([("request_id", requestId), ("username", user), ("password", password), ("action", "approve")]))
    }

    @Test func theSignInFormIsThrottledPerUserAfterFiveWrongPasswords() throws {
        let server = try DevServerProcess()
        let requestId = try signInPage(server)
        for _ in 0..<5 { #expect(try submit(server, requestId, "bob", "guess").status == 401) }
        // Now even the right password gets the 429, so the answers tell a guesser nothing.
        let throttled = try submit(server, requestId, "bob", "bob-pass")
        #expect(throttled.status == 429)
        #expect(Int(throttled.header("Retry-After") ?? "") ?? 0 > 0)
        #expect(throttled.text.contains("Too many wrong passwords"))
        #expect(throws: StarlineError.self) { try server.login("bob") }
        // The device form shares the throttle.
        let device = try server.request("POST", "/oauth/device_authorization", body: .form([("client_id", "workbench")])).json()
        let userCode = try #require(device["user_code"]?.stringValue)
        let approve = try server.request(
            "POST", "/oauth/device",
            body: .form([("user_code", userCode), ("username", "bob"), ("password", "bob-pass"), ("action", "approve")]))
        #expect(approve.status == 429)
        // Other users sign in as usual.
        _ = try server.login("carol")
        // Unknown user names are not tracked (and never throttled into a 429).
        for _ in 0..<7 { #expect(try submit(server, requestId, "nobody-\(UUID().uuidString)", "x").status == 401) }
    }

    @Test func aRightPasswordClearsTheFailures() throws {
        let server = try DevServerProcess()
        for _ in 0..<3 {
            let requestId = try signInPage(server)
            for _ in 0..<4 { #expect(try submit(server, requestId, "bob", "guess").status == 401) }
            #expect(try submit(server, requestId, "bob", "bob-pass").status == 302)
        }
    }

    @Test func thePasswordChangeSharesTheThrottle() throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        func change(_ old: String) throws -> HTTPResult {
            try server.request(
                "POST", "/api/password", token: bob.token,
                body: .json(.object([("oldPassword", .string(old)), ("newPassword", .string("long-enough-1"))])))
        }
        for _ in 0..<5 { #expect(try change("guess").errorCode == "WRONG_PASSWORD") }
        let throttled = try change("bob-pass")
        #expect(throttled.status == 429 && throttled.errorCode == "TOO_MANY_ATTEMPTS")
        #expect(Int(throttled.header("Retry-After") ?? "") ?? 0 > 0)
        #expect(try submit(server, try signInPage(server), "bob", "bob-pass").status == 429)
        // The reset route clears the throttles with the rest of the state.
        _ = try server.dev("POST", "/__dev/reset")
        _ = try server.login("bob")
    }

    // MARK: DNS rebinding

    @Test(arguments: ["evil.example", "evil.example:PORT", "127.0.0.1", "127.0.0.1:1", "localhost.evil.example:PORT", "127.0.0.2:PORT"])
    func requestsForOtherHostsAre421(_ host: String) throws {
        let server = try DevServerProcess()
        let port = String(server.baseURL.split(separator: ":").last ?? "")
        let bob = try server.login("bob")
        let me = try server.request(
            "GET", "/api/me", token: bob.token, headers: [("Host", host.replacingOccurrences(of: "PORT", with: port))])
        #expect(me.status == 421 && me.errorCode == "MISDIRECTED_REQUEST")
        #expect(!me.text.contains("bob"))
        let dev = try server.request(
            "POST", "/__dev/reset", dev: true, headers: [("Host", host.replacingOccurrences(of: "PORT", with: port))])
        #expect(dev.status == 421)
        let counters = try server.dev("GET", "/__dev/counters").json()["counters"]
        #expect(counters?["GET (wrong host)"]?.intValue == 1 && counters?["POST (wrong host)"]?.intValue == 1)
        #expect(counters?["GET /api/me"] == nil && counters?["POST /__dev/reset"] == nil)
        #expect(try server.request("GET", "/api/me", token: bob.token).status == 200)  // the session is untouched
    }

    @Test(arguments: ["127.0.0.1:PORT", "localhost:PORT", "LOCALHOST:PORT", "[::1]:PORT"])
    func loopbackNamesWithTheBoundPortAreServed(_ host: String) throws {
        let server = try DevServerProcess()
        let port = String(server.baseURL.split(separator: ":").last ?? "")
        let r = try server.request(
            "GET", "/.well-known/oauth-authorization-server", headers: [("Host", host.replacingOccurrences(of: "PORT", with: port))])
        #expect(r.status == 200)
    }

    /// Routing sees the path as sent: an escaped "/" is not a separator and an escaped NUL does not cut the
    /// path; each parameter is decoded once matched (found by an API test run against docs/openapi.yaml).
    @Test(
        """
        the dev server routes on the raw path: %2F is no separator, %00 cuts nothing; a parameter is decoded after \
        routing
        """)
    func routesOnTheRawPath() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice")
        #expect(try server.request("GET", "/api/me", token: alice.token).status == 200)
        #expect(try server.request("GET", "/api%2Fme", token: alice.token).status == 404)
        #expect(try server.request("GET", "/api/admin/users/carol%00x/sessions", token: alice.token).status == 404)
        #expect(try server.request("GET", "/api/admin/users/carol%2F..%2Fbob/sessions", token: alice.token).status == 404)
        let decoded = try server.request("GET", "/api/admin/users/ca%72ol/sessions", token: alice.token)
        #expect(decoded.status == 200 && decoded.text.contains("sessions"), "\(decoded.text)")
        let query = try server.request("GET", "/api/admin/users?limit=%31", token: alice.token)
        let users = try query.json()["users"]?.arrayValue?.count
        #expect(query.status == 200 && users == 1, "a query value is decoded: \(query.text)")
    }

    @Test("a fault with a 1xx status is refused: the client would wait for a final answer that never comes")
    func informationalFaultsAreRefused() throws {
        let server = try DevServerProcess()
        for status in [100, 101, 103, 199] {
            let refused = try server.dev(
                "POST", "/__dev/faults", .object([("route", .string("GET /api/me")), ("status", .int(Int64(status)))]))
            #expect(refused.status == 400, "\(status): \(refused.text)")
        }
        #expect(try server.dev("POST", "/__dev/faults", .object([("route", .string("GET /api/me")), ("status", .int(204))])).status == 201)
    }

    @Test("a member given as null (or as another type) is refused, never read as absent")
    func nullMembersAreRefused() throws {
        let server = try DevServerProcess()
        let route: (String, JSON) = ("route", .string("GET /api/me"))
        for body in [
            JSON.object([route, ("status", .int(500)), ("headers", .null)]), .object([route, ("status", .int(500)), ("count", .null)]),
            .object([route, ("delayMs", .null)]), .object([route, ("reset", .null)]), .object([route, ("status", .string("500"))]),
            .object([route, ("hold", .int(1))])
        ] {
            let refused = try server.dev("POST", "/__dev/faults", body)
            #expect(refused.status == 400 && refused.errorCode == "INVALID_REQUEST", "\(body): \(refused.text)")
        }
        let users = try server.dev(
            "POST", "/__dev/users", .object([("count", .int(1)), ("prefix", .string("n")), ("sessionsPerUser", .null)]))
        #expect(users.status == 400, "\(users.text)")
        let rate = try server.dev("POST", "/__dev/rate-limit", .object([("rps", .double(1.5))]))
        #expect(rate.status == 400, "\(rate.text)")
        // The same members, well formed, are taken.
        #expect(try server.dev("POST", "/__dev/faults", .object([route, ("status", .int(500)), ("count", .int(1))])).status == 201)
    }

    @Test(
        """
        RFC 7009: a revocation request without a token is invalid_request; a literal path's 405 allows only its own \
        methods
        """)
    func requestsTheContractRefuses() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice")
        for body in [DevServerProcess.Body.form([]), .form([("token", "")]), .form([("token_type_hint", "access_token")])] {
            let r = try server.request("POST", "/oauth/revoke", body: body)
            #expect(r.status == 400 && (try? r.json()["error"]?.stringValue) == "invalid_request", "\(r.text)")
        }
        // /api/sessions/revoke-others is POST's alone: DELETE /api/sessions/{id} does not make it a session id.
        let options = try server.request("OPTIONS", "/api/sessions/revoke-others", token: alice.token)
        #expect(options.status == 405 && options.headers["allow"] == "POST", "\(options.headers)")
        let delete = try server.request("DELETE", "/api/sessions/revoke-others", token: alice.token)
        #expect(delete.status == 405, "\(delete.text)")
        // An empty sync cursor is no cursor this server issued.
        #expect(try server.request("GET", "/chat/v1/sync?since=", token: alice.token).errorCode == "INVALID_CURSOR")
    }
}
