import Foundation
import StarlineCore
@testable import StarlinePlatform
import StarlineTestSupport
import Testing
import StarlineCrypto
@testable import StarlineHTTP

/// PlatformAPI against a real sl-devserver over loopback, and its error mapping on the server's real answers.
@Suite struct PlatformAPITests {
    func api(_ server: DevServerProcess, app: String = "workbench", retries: Int = 0) throws -> PlatformAPI {
        PlatformAPI(base: try BaseURL(validating: server.baseURL), appId: app, transport: HTTPTransport(timeout: 10), retries: retries)
    }

    /// Awaits `body`, which must throw a StarlineError.
    func failure<T>(_ body: () async throws -> T) async -> StarlineError? {
        do {
            let value = try await body()
            Issue.record("expected an error, got \(value)")
            return nil
        } catch let error as StarlineError {
            return error
        } catch {
            Issue.record("expected a StarlineError, got \(error)")
            return nil
        }
    }

    /// Signs in through the real HTML form (as a browser would) and returns the code from the redirect.
    func authorizationCode(
        _ server: DevServerProcess, _ api: PlatformAPI, user: String, redirectURI: String = "http://127.0.0.1:53682/callback"
    )
        throws -> (code: String, verifier: String)
    {
        let pkce = PKCE.make()
        let page = try server.request("GET", api.authorizeURL(redirectURI: redirectURI, state: "st-1", codeChallenge: pkce.challenge))
        let requestId = try #require(DevServerProcess.formValue(page.text, "request_id"))
        let approved = try server.request(
            "POST", "/oauth/authorize",
            body: .form([
                ("request_id", requestId), ("username", user),
                ("password", "\(user)-pass"), ("action", "approve")
            ]))
        #expect(approved.status == 302)
        let location = try #require(approved.header("Location").flatMap(WebURL.init))
        #expect(location.queryValue("state") == "st-1")
        return (try #require(location.queryValue("code")), pkce.verifier)
    }

    // MARK: OAuth

    @Test func pkceAndAuthorizeURL() throws {
        let pkce = PKCE.make()
        #expect(pkce.verifier.count == 43)
        #expect(pkce.challenge == Base64.encodeURL(SHA256.hash(Array(pkce.verifier.utf8))))
        #expect(PKCE.make().verifier != pkce.verifier)
        let api = PlatformAPI(
            base: try BaseURL(validating: "https://account.example.com/base/"), appId: "com.example.game", transport: HTTPTransport())
        #expect(
            api.authorizeURL(redirectURI: "starline-com.example.game://auth/callback", state: "a b&c", codeChallenge: "CH")
                == "https://account.example.com/base/oauth/authorize?response_type=code&client_id=com.example.game"
                + "&redirect_uri=starline-com.example.game%3A%2F%2Fauth%2Fcallback&state=a%20b%26c&code_challenge=CH&code_challenge_method=S256"
        )
    }

    @Test func codeExchangeAndReuse() async throws {
        let server = try DevServerProcess()
        let api = try api(server)
        let redirect = "http://127.0.0.1:53682/callback"
        let (code, verifier) = try authorizationCode(server, api, user: "bob", redirectURI: redirect)
        let grant = try await api.exchangeCode(code: code, redirectURI: redirect, verifier: verifier, deviceName: "test laptop")
        #expect(grant.user["id"]?.stringValue == "bob")
        #expect(grant.roles == [])
        #expect(grant.expiresIn == 86_400)
        #expect(!grant.accessToken.isEmpty && !"\(grant)".contains(grant.accessToken))
        let me = try await api.me(token: grant.accessToken)
        #expect(me.sessionId == grant.sessionId)
        let sessions = try await api.sessions(token: grant.accessToken)
        let mine = sessions.first { $0["current"] == .bool(true) }
        #expect(mine?["device"]?["name"]?.stringValue == "test laptop")
        #expect(mine?["device"]?["platform"]?.stringValue == "linux")

        // A code is single-use: the second exchange is INVALID_GRANT (exit 9) and revokes the first grant.
        let reused = await failure { try await api.exchangeCode(code: code, redirectURI: redirect, verifier: verifier, deviceName: "x") }
        #expect(reused?.code == .invalidGrant && reused?.exitStatus == .noResult)
        #expect(reused?.details?["status"]?.intValue == 400 && reused?.details?["route"]?.stringValue == "POST /oauth/token")
        #expect(reused?.details?["serverCode"]?.stringValue == "invalid_grant")
        #expect(reused?.message.contains("already used") == true && reused?.message.contains(code) == false)
        #expect(await failure { try await api.me(token: grant.accessToken) }?.code == .sessionRevoked)

        // A wrong verifier is invalid_grant too.
        let (second, _) = try authorizationCode(server, api, user: "bob", redirectURI: redirect)
        let wrong = await failure {
            try await api.exchangeCode(code: second, redirectURI: redirect, verifier: PKCE.make().verifier, deviceName: "x")
        }
        #expect(wrong?.code == .invalidGrant)
    }

    @Test func deviceFlowAutoApproved() async throws {
        let server = try DevServerProcess(["--auto-approve", "bob", "--device-interval", "0"])
        let api = try api(server)
        let start = try await api.deviceAuthorization()
        #expect(start.userCode.count == 9 && start.verificationURI == server.baseURL + "/oauth/device")
        #expect(start.verificationURIComplete == start.verificationURI + "?user_code=" + start.userCode)
        #expect(start.interval == 0 && start.expiresIn == 600)
        #expect(!"\(start)".contains(start.deviceCode))
        guard case .granted(let grant) = try await api.pollDevice(deviceCode: start.deviceCode, deviceName: "build box") else {
            Issue.record("expected a grant")
            return
        }
        #expect(grant.user["id"]?.stringValue == "bob")
        #expect(try await api.me(token: grant.accessToken).user["id"]?.stringValue == "bob")
        // The device code is spent.
        #expect(await failure { try await api.pollDevice(deviceCode: start.deviceCode) }?.code == .invalidGrant)
    }

    @Test func deviceFlowPendingSlowDownDeniedExpired() async throws {
        // An hour: the second poll comes within the interval however long this test waits between its awaits
        // for a thread of the pool (the suite's synchronous tests hold both for minutes under load; with 5 s,
        // the second poll once came later and was `pending`). The client clamps what it reports to 300 s.
        let slow = try DevServerProcess(["--device-interval", "3600"])
        let slowAPI = try api(slow)
        let start = try await slowAPI.deviceAuthorization()
        #expect(start.interval == 300)
        #expect(try await slowAPI.pollDevice(deviceCode: start.deviceCode) == .pending)
        #expect(try await slowAPI.pollDevice(deviceCode: start.deviceCode) == .slowDown)

        let server = try DevServerProcess(["--device-interval", "0"])
        let api = try api(server)
        let denied = try await api.deviceAuthorization()
        #expect(try await api.pollDevice(deviceCode: denied.deviceCode) == .pending)
        _ = try server.request("POST", "/oauth/device", body: .form([("user_code", denied.userCode), ("action", "deny")]))
        let deniedError = await failure { try await api.pollDevice(deviceCode: denied.deviceCode) }
        #expect(deniedError?.code == .noResult && deniedError?.message == "the sign-in was denied")
        let shortLived = try DevServerProcess(["--device-interval", "0", "--device-code-ttl", "1"])
        let shortAPI = try self.api(shortLived)
        let expiring = try await shortAPI.deviceAuthorization()
        try shortLived.advanceClock(2)
        let expired = await failure { try await shortAPI.pollDevice(deviceCode: expiring.deviceCode) }
        #expect(expired?.code == .noResult && expired?.message == "the device code expired" && expired?.exitStatus == .noResult)

        // An unknown app ID is invalid_client (401 from the device endpoint): exit 2.
        let unknown = await failure { try await self.api(server, app: "no-such-app").deviceAuthorization() }
        #expect(unknown?.code == .invalidClient && unknown?.exitStatus == .usage && unknown?.details?["status"]?.intValue == 401)
    }

    @Test func revokeAlwaysSucceeds() async throws {
        let server = try DevServerProcess()
        let api = try api(server)
        let bob = try server.login("bob")
        try await api.revoke(token: bob.token)
        #expect(await failure { try await api.me(token: bob.token) }?.code == .sessionRevoked)
        try await api.revoke(token: bob.token)  // again
        try await api.revoke(token: "not-a-token")  // unknown
    }

    // MARK: Account

    @Test func meCenterSessions() async throws {
        let server = try DevServerProcess()
        let api = try api(server)
        let bob = try server.login("bob")
        let me = try await api.me(token: bob.token)
        #expect(me.user["id"]?.stringValue == "bob" && me.roles == [] && me.sessionId == bob.sessionId && me.appId == "workbench")
        // The devserver's default session lifetime is one day; the login happened before this call.
        #expect(me.expiresAt > Timestamp.now().seconds && me.expiresAt <= Timestamp.now().seconds + 86_400)
        let center = try await api.center(token: bob.token)
        #expect(center["currentSessionId"]?.stringValue == bob.sessionId)
        #expect(center["security"]?["phoneMasked"]?.stringValue == "+861******0002")
        let sessions = try await api.sessions(token: bob.token)
        #expect(sessions.count == 2)  // the seeded one and this one
        #expect(sessions.filter { $0["current"] == .bool(true) }.map { $0["id"]?.stringValue } == [bob.sessionId])
    }

    @Test func revokingSessions() async throws {
        let server = try DevServerProcess()
        let api = try api(server)
        let a = try server.login("carol"), b = try server.login("carol"), c = try server.login("carol")
        let other = try await api.revokeSession(token: a.token, id: b.sessionId)
        #expect(other.revoked && !other.current)
        let again = try await api.revokeSession(token: a.token, id: b.sessionId)
        #expect(!again.revoked && !again.current)
        #expect(try await api.revokeOtherSessions(token: a.token) == 1)  // c
        #expect(await failure { try await api.me(token: c.token) }?.code == .sessionRevoked)
        let current = try await api.revokeSession(token: a.token, id: a.sessionId)
        #expect(current.revoked && current.current)
        let revoked = await failure { try await api.me(token: a.token) }
        #expect(revoked?.code == .sessionRevoked && revoked?.exitStatus == .sessionEnded)
        #expect(revoked?.details?["status"]?.intValue == 401 && revoked?.details?["route"]?.stringValue == "GET /api/me")
        // Odd ids are encoded as one path segment.
        let d = try server.login("carol")
        for id in ["../me", "..", "a b", "ses?x=1"] {
            #expect(await failure { try await api.revokeSession(token: d.token, id: id) }?.code == .notFound)
        }
    }

    @Test func passwordChangeAndSMSReset() async throws {
        let server = try DevServerProcess()
        let api = try api(server)
        let a = try server.login("bob"), b = try server.login("bob")
        let wrong = await failure { try await api.changePassword(token: a.token, old: "nope", new: "long-enough-1") }
        #expect(
            wrong?.code == .forbidden && wrong?.exitStatus == .forbidden && wrong?.details?["serverCode"]?.stringValue == "WRONG_PASSWORD")
        #expect(wrong?.message.contains("long-enough-1") == false)
        let weak = await failure { try await api.changePassword(token: a.token, old: "bob-pass", new: "short") }
        #expect(
            weak?.code == .requestRejected && weak?.exitStatus == .usage && weak?.details?["serverCode"]?.stringValue == "WEAK_PASSWORD")
        #expect(weak?.message.contains("at least 8 characters") == true)
        #expect(try await api.changePassword(token: a.token, old: "bob-pass", new: "new-bob-pass") == 2)  // b and the seeded session
        #expect(await failure { try await api.me(token: b.token) }?.code == .sessionRevoked)
        _ = try server.login("bob", password: "new-bob-pass")

        let phone = "+8613800000002"
        try await api.requestSMSReset(phone: phone)
        let code = try #require(try server.dev("GET", "/__dev/sms/\(PercentEncoding.encode(phone))").json()["code"]?.stringValue)
        let bad = await failure { try await api.confirmSMSReset(phone: phone, code: "000000x", newPassword: "bob-sms-pass") }
        #expect(bad?.code == .requestRejected && bad?.details?["serverCode"]?.stringValue == "INVALID_CODE")
        #expect(try await api.confirmSMSReset(phone: phone, code: code, newPassword: "bob-sms-pass") == 2)  // a and the last login
        #expect(await failure { try await api.me(token: a.token) }?.code == .sessionRevoked)
        _ = try server.login("bob", password: "bob-sms-pass")
    }

    @Test func adminRoutes() async throws {
        let server = try DevServerProcess()
        let api = try api(server)
        let alice = try server.login("alice"), bob = try server.login("bob")
        #expect(try await api.me(token: alice.token).roles == ["admin"])
        let sessions = try await api.adminSessions(token: alice.token, user: "bob")
        #expect(sessions.count == 2 && sessions.contains { $0["id"]?.stringValue == bob.sessionId })
        #expect(try await api.adminRevokeSession(token: alice.token, user: "bob", id: bob.sessionId))
        #expect(try await api.adminRevokeSession(token: alice.token, user: "bob", id: bob.sessionId) == false)
        #expect(try await api.adminRevokeAll(token: alice.token, user: "bob") == 1)
        let missing = await failure { try await api.adminSessions(token: alice.token, user: "nobody") }
        #expect(missing?.code == .notFound && missing?.exitStatus == .notFound)
        #expect(missing?.details?["route"]?.stringValue == "GET /api/admin/users/{uid}/sessions")

        // Another 403 than the two that end the session: FORBIDDEN, exit 5, the identity is kept.
        let carol = try server.login("carol")
        let forbidden = await failure { try await api.adminRevokeAll(token: carol.token, user: "alice") }
        #expect(forbidden?.code == .forbidden && forbidden?.exitStatus == .forbidden)
        #expect(forbidden?.details?["serverCode"]?.stringValue == "FORBIDDEN" && forbidden?.details?["status"]?.intValue == 403)
        #expect(try await api.me(token: carol.token).user["id"]?.stringValue == "carol")
    }

    // MARK: Error mapping on real answers

    @Test func sessionEndingAnswers() async throws {
        let server = try DevServerProcess()
        let api = try api(server)
        let bob = try server.login("bob")

        let invalid = await failure { try await api.me(token: "not-a-token") }
        #expect(invalid?.code == .invalidToken && invalid?.exitStatus == .sessionEnded)
        #expect(invalid?.json.serialized().contains("not-a-token") == false)

        _ = try server.dev("POST", "/__dev/users/bob/restrict")
        let restricted = await failure { try await api.center(token: bob.token) }
        #expect(
            restricted?.code == .accountRestricted && restricted?.exitStatus == .sessionEnded
                && restricted?.details?["status"]?.intValue == 403)
        _ = try server.dev("POST", "/__dev/users/bob/unrestrict")

        _ = try server.dev("POST", "/__dev/apps/workbench/disable")
        let disabled = await failure { try await api.sessions(token: bob.token) }
        #expect(disabled?.code == .appUnavailable && disabled?.exitStatus == .sessionEnded)
        _ = try server.dev("POST", "/__dev/apps/workbench/enable")
        #expect(try await api.me(token: bob.token).sessionId == bob.sessionId)

        _ = try server.dev("POST", "/__dev/sessions/\(bob.sessionId)/expire")
        let expired = await failure { try await api.me(token: bob.token) }
        #expect(expired?.code == .sessionExpired && expired?.exitStatus == .sessionEnded)
    }

    @Test func transientAnswers() async throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        let api = try api(server)

        _ = try server.dev("POST", "/__dev/faults", .object([("route", .string("GET /api/me")), ("status", .int(503))]))
        let fault = await failure { try await api.me(token: bob.token) }
        #expect(fault?.code == .server && fault?.exitStatus == .transient && fault?.retryable == true)
        #expect(fault?.details?["status"]?.intValue == 503 && fault?.details?["serverCode"]?.stringValue == "INJECTED_FAULT")
        // With retries, GETs are repeated before the error surfaces; POSTs never are.
        let retrying = try self.api(server, retries: 2)
        #expect(await failure { try await retrying.me(token: bob.token) }?.code == .server)
        _ = try server.dev(
            "POST", "/__dev/faults", .object([("route", .string("POST /api/sessions/revoke-others")), ("status", .int(500))]))
        #expect(await failure { try await retrying.revokeOtherSessions(token: bob.token) }?.code == .server)
        let counters = try server.dev("GET", "/__dev/counters").json()["counters"]
        #expect(counters?["GET /api/me"]?.intValue == 4)  // 1 without retries, 3 with two retries
        #expect(counters?["POST /api/sessions/revoke-others"]?.intValue == 1)
        _ = try server.dev("DELETE", "/__dev/faults")
        _ = try server.dev("POST", "/__dev/faults", .object([("route", .string("GET /api/me")), ("status", .int(502)), ("count", .int(2))]))
        #expect(try await retrying.me(token: bob.token).sessionId == bob.sessionId)

        _ = try server.dev("POST", "/__dev/rate-limit", .object([("rps", .int(1))]))
        var limited: StarlineError?
        for _ in 0..<3 where limited == nil {
            // Several at once, so two land in the same second whatever the load on the machine.
            limited = await withTaskGroup(of: StarlineError?.self) { group in
                for _ in 0..<4 {
                    group.addTask { do { _ = try await api.me(token: bob.token); return nil } catch { return error as? StarlineError } }
                }
                var found: StarlineError?
                for await error in group where error?.code == .rateLimited { found = error }
                return found
            }
        }
        #expect(limited?.code == .rateLimited && limited?.exitStatus == .transient && limited?.retryable == true)
        #expect(limited?.details?["retryAfter"]?.intValue == 1 && limited?.details?["status"]?.intValue == 429)
        _ = try server.dev("POST", "/__dev/rate-limit", .object([("rps", .int(0))]))

        // No answer at all: the transport's error, with the route.
        _ = try server.dev("POST", "/__dev/faults", .object([("route", .string("GET /api/center")), ("reset", .bool(true))]))
        let dropped = await failure { try await api.center(token: bob.token) }
        #expect(dropped?.code == .network && dropped?.details?["route"]?.stringValue == "GET /api/center")
        server.stop()
        let refused = await failure { try await api.me(token: bob.token) }
        #expect(refused?.code == .network && refused?.details?["route"]?.stringValue == "GET /api/me")
        #expect(refused?.json.serialized().contains(bob.token) == false)
    }

    @Test func notFoundAnswers() async throws {
        let server = try DevServerProcess()
        let api = try api(server)
        let bob = try server.login("bob")
        let unknown = await failure { try await api.revokeSession(token: bob.token, id: "ses_unknown") }
        #expect(unknown?.code == .notFound && unknown?.exitStatus == .notFound)
        #expect(unknown?.details?["route"]?.stringValue == "DELETE /api/sessions/{id}" && unknown?.details?["status"]?.intValue == 404)
    }

    // MARK: The mapping itself

    func mapped(_ status: Int, _ body: String, headers: [String: String] = [:]) -> StarlineError {
        PlatformHTTP.error(status: status, body: Array(body.utf8), headers: headers, route: "GET /api/x", now: 1_700_000_000)
    }

    func api(_ code: String) -> String { #"{"error":{"code":"\#(code)","message":"msg for \#(code)"}}"# }
    func oauth(_ error: String) -> String { #"{"error":"\#(error)","error_description":"why \#(error)"}"# }

    @Test func errorMappingTable() {
        let table: [(Int, String, ErrorCode, Int32, Bool)] = [
            (401, api("SESSION_REVOKED"), .sessionRevoked, 4, false),
            (401, api("SESSION_EXPIRED"), .sessionExpired, 4, false),
            (401, api("INVALID_TOKEN"), .invalidToken, 4, false),
            (401, "", .invalidToken, 4, false),
            (403, api("ACCOUNT_RESTRICTED"), .accountRestricted, 4, false),
            (403, api("APP_UNAVAILABLE"), .appUnavailable, 4, false),
            (403, api("FORBIDDEN"), .forbidden, 5, false),
            (403, api("WRONG_PASSWORD"), .forbidden, 5, false),
            (403, "<html>nope</html>", .forbidden, 5, false),
            (404, api("NOT_FOUND"), .notFound, 6, false),
            (429, api("RATE_LIMITED"), .rateLimited, 7, true),
            (500, api("INTERNAL"), .server, 7, true),
            (503, api("INJECTED_FAULT"), .server, 7, true),
            (502, "Bad Gateway", .server, 7, true),
            (400, api("INVALID_REQUEST"), .requestRejected, 2, false),
            (413, api("PAYLOAD_TOO_LARGE"), .requestRejected, 2, false),
            (405, api("METHOD_NOT_ALLOWED"), .requestRejected, 2, false),
            (409, api("CLIENT_ID_CONFLICT"), .conflict, 12, false),
            (410, api("LINK_USED"), .conflict, 12, false),
            (400, oauth("invalid_grant"), .invalidGrant, 9, false),
            (401, oauth("invalid_client"), .invalidClient, 2, false),
            (400, oauth("access_denied"), .noResult, 9, false),
            (400, oauth("expired_token"), .noResult, 9, false),
            (400, oauth("invalid_request"), .requestRejected, 2, false),
            (400, oauth("unsupported_grant_type"), .requestRejected, 2, false),
            (302, "", .server, 7, false)
        ]
        for (status, body, code, exit, retryable) in table {
            let error = mapped(status, body)
            #expect(error.code == code, "\(status) \(body)")
            #expect(error.exitStatus.rawValue == exit, "\(status) \(body)")
            #expect(error.retryable == retryable, "\(status) \(body)")
            #expect(error.details?["status"]?.intValue == Int64(status))
            #expect(error.details?["route"]?.stringValue == "GET /api/x")
        }
        #expect(mapped(403, api("WRONG_PASSWORD")).details?["serverCode"]?.stringValue == "WRONG_PASSWORD")
        #expect(mapped(403, api("WRONG_PASSWORD")).message == "the server refused the request on GET /api/x: msg for WRONG_PASSWORD")
        #expect(mapped(400, oauth("access_denied")).message == "the sign-in was denied")
        #expect(mapped(400, oauth("expired_token")).message == "the device code expired")
        #expect(mapped(429, api("RATE_LIMITED"), headers: ["retry-after": "7"]).details?["retryAfter"]?.intValue == 7)
        #expect(mapped(429, "").details?["retryAfter"] == nil)
        // Server text is kept to one short line.
        let noisy = mapped(409, #"{"error":{"code":"X","message":"line\nbreak\#(String(repeating: "y", count: 500))"}}"#)
        #expect(!noisy.message.contains("\n") && noisy.message.count < 400)
        // Without a route (the brief's three-argument form).
        let bare = PlatformHTTP.error(status: 404, body: [], headers: [:], now: 1_700_000_000)
        #expect(bare.code == .notFound && bare.details?["route"] == nil && bare.details?["status"]?.intValue == 404)
    }

    @Test func newCodesAreInTheExitTable() {
        #expect(StarlineError(.invalidToken, "x").exitStatus.rawValue == 4)
        #expect(StarlineError(.requestRejected, "x").exitStatus.rawValue == 2)
        #expect(StarlineError(.invalidClient, "x").exitStatus.rawValue == 2)
        #expect(StarlineError(.conflict, "x").exitStatus.rawValue == 12)
        #expect(StarlineError(.invalidGrant, "x").exitStatus.rawValue == 9)
    }
}
