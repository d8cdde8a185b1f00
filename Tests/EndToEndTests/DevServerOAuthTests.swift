import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// sl-devserver's OAuth routes over real loopback HTTP (curl).
@Suite struct DevServerOAuthTests {
    @Test func startsOnAFreeLoopbackPortAndServesMetadata() throws {
        let server = try DevServerProcess()
        let url = try #require(WebURL(server.baseURL))
        #expect(url.host == "127.0.0.1" && (url.port ?? 0) > 0)
        let metadata = try server.request("GET", "/.well-known/oauth-authorization-server").json()
        #expect(metadata["issuer"]?.stringValue == server.baseURL)
        #expect(metadata["token_endpoint"]?.stringValue == server.baseURL + "/oauth/token")
        #expect(metadata["code_challenge_methods_supported"] == .array([.string("S256")]))
        #expect(server.stop() == 0)
    }

    func authorizeURL(
        _ app: String = "workbench", redirect: String = "http://127.0.0.1:40000/callback", challenge: String?, state: String = "xyz"
    ) -> String {
        var url = "/oauth/authorize?response_type=code&client_id=\(app)&redirect_uri=\(PercentEncoding.encode(redirect))&state=\(state)"
        if let challenge { url += "&code_challenge=\(challenge)&code_challenge_method=S256" }
        return url
    }

    @Test func signInPageIsARealFormWithApproveAndDeny() throws {
        let server = try DevServerProcess()
        let page = try server.request("GET", authorizeURL(challenge: DevServerProcess.pkce().challenge))
        #expect(page.status == 200)
        #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
        for fragment in [
            "name=\"username\"", "name=\"password\"", "name=\"action\" value=\"approve\"", "name=\"action\" value=\"deny\"",
            "name=\"request_id\""
        ] {
            #expect(page.text.contains(fragment), "missing \(fragment)")
        }
    }

    @Test func pkceIsRequired() throws {
        let server = try DevServerProcess()
        let r = try server.request("GET", authorizeURL(challenge: nil))
        #expect(r.status == 302)
        let location = try #require(r.header("Location").flatMap(WebURL.init))
        #expect(location.queryValue("error") == "invalid_request")
        #expect(location.queryValue("code") == nil)
        #expect(location.queryValue("state") == "xyz")
    }

    @Test(arguments: [
        "https://evil.example/callback", "http://127.0.0.1/callback", "http://localhost:5000/callback",
        "http://127.0.0.1:5000/other", "starline-other://auth/callback", "http://evil@127.0.0.1:5000/callback"
    ])
    func unregisteredRedirectURIsAreRefusedWithoutRedirecting(_ redirect: String) throws {
        let server = try DevServerProcess()
        let r = try server.request("GET", authorizeURL(redirect: redirect, challenge: DevServerProcess.pkce().challenge))
        #expect(r.status == 400)
        #expect(r.header("Location") == nil)
    }

    @Test func onlyTheCodeResponseTypeIsSupported() throws {
        let server = try DevServerProcess()
        let url = authorizeURL(challenge: DevServerProcess.pkce().challenge).replacingOccurrences(
            of: "response_type=code", with: "response_type=token")
        let r = try server.request("GET", url)
        #expect(r.status == 302)
        let location = try #require(r.header("Location").flatMap(WebURL.init))
        #expect(location.queryValue("error") == "unsupported_response_type" && location.queryValue("code") == nil)
    }

    @Test func unknownClientIsRefused() throws {
        let server = try DevServerProcess()
        #expect(try server.request("GET", authorizeURL("nope", challenge: DevServerProcess.pkce().challenge)).status == 400)
    }

    @Test(arguments: ["http://127.0.0.1:1234/callback", "http://[::1]:65000/callback", "starline-workbench://auth/callback"])
    func loopbackOnAnyPortAndTheCustomSchemeAreAllowed(_ redirect: String) throws {
        let server = try DevServerProcess()
        let login = try server.login("bob", redirectURI: redirect)
        #expect(login.response["user"]?["id"]?.stringValue == "bob")
        #expect(login.response["token_type"]?.stringValue == "Bearer")
        #expect(login.response["roles"] == .array([]))
    }

    @Test func denyRedirectsWithAccessDeniedAndWrongPasswordShowsTheFormAgain() throws {
        let server = try DevServerProcess()
        let page = try server.request("GET", authorizeURL(challenge: DevServerProcess.pkce().challenge))
        let id = try #require(DevServerProcess.formValue(page.text, "request_id"))
        let wrong = try server.request(
            "POST", "/oauth/authorize", body: .form([("request_id", id), ("username", "bob"), ("password", "nope"), ("action", "approve")]))
        #expect(wrong.status == 401)
        #expect(wrong.text.contains("Wrong user name or password"))
        let denied = try server.request("POST", "/oauth/authorize", body: .form([("request_id", id), ("action", "deny")]))
        #expect(denied.status == 302)
        let location = try #require(denied.header("Location").flatMap(WebURL.init))
        #expect(
            location.queryValue("error") == "access_denied" && location.queryValue("state") == "xyz" && location.queryValue("code") == nil)
        // The request is consumed: replaying the form is refused (CSRF and replay).
        let replay = try server.request(
            "POST", "/oauth/authorize",
            body: .form([("request_id", id), ("username", "bob"), ("password", "bob-pass"), ("action", "approve")]))
        #expect(replay.status == 400)
        let forged = try server.request(
            "POST", "/oauth/authorize",
            body: .form([("request_id", "forged"), ("username", "bob"), ("password", "bob-pass"), ("action", "approve")]))
        #expect(forged.status == 400)
    }

    /// Runs the form up to the redirect and returns (code, verifier).
    func code(_ server: DevServerProcess, redirect: String = "http://127.0.0.1:40000/callback") throws -> (String, String) {
        let (verifier, challenge) = DevServerProcess.pkce()
        let page = try server.request("GET", authorizeURL(redirect: redirect, challenge: challenge))
        let id = try #require(DevServerProcess.formValue(page.text, "request_id"))
        let r = try server.request(
            "POST", "/oauth/authorize",
            body: .form([("request_id", id), ("username", "carol"), ("password", "carol-pass"), ("action", "approve")]))
        let code = try #require(r.header("Location").flatMap(WebURL.init)?.queryValue("code"))
        return (code, verifier)
    }

    func exchange(_ server: DevServerProcess, code: String, verifier: String, redirect: String = "http://127.0.0.1:40000/callback") throws
        -> HTTPResult
    {
        try server.request(
            "POST", "/oauth/token",
            body: .form([
                ("grant_type", "authorization_code"), ("code", code), ("client_id", "workbench"),
                ("redirect_uri", redirect), ("code_verifier", verifier)
            ]))
    }

    @Test func codesAreSingleUseAndAReplayRevokesTheTokens() throws {
        let server = try DevServerProcess()
        let (code, verifier) = try code(server)
        let first = try exchange(server, code: code, verifier: verifier)
        #expect(first.status == 200)
        let token = try #require(try first.json()["access_token"]?.stringValue)
        #expect(try server.request("GET", "/api/me", token: token).status == 200)
        let second = try exchange(server, code: code, verifier: verifier)
        #expect(second.status == 400 && second.errorCode == "invalid_grant")
        let me = try server.request("GET", "/api/me", token: token)
        #expect(me.status == 401 && me.errorCode == "SESSION_REVOKED")
    }

    @Test func wrongVerifierRedirectAndGrantTypeAreRefused() throws {
        let server = try DevServerProcess()
        let (code, verifier) = try code(server)
        let wrongVerifier = try exchange(server, code: code, verifier: DevServerProcess.pkce().verifier)
        #expect(wrongVerifier.status == 400 && wrongVerifier.errorCode == "invalid_grant")
        let wrongRedirect = try exchange(server, code: code, verifier: verifier, redirect: "http://127.0.0.1:40001/callback")
        #expect(wrongRedirect.errorCode == "invalid_grant")
        let unsupported = try server.request("POST", "/oauth/token", body: .form([("grant_type", "password")]))
        #expect(unsupported.status == 400 && unsupported.errorCode == "unsupported_grant_type")
        let missing = try server.request("POST", "/oauth/token", body: .form([]))
        #expect(missing.errorCode == "invalid_request")
        #expect(try exchange(server, code: "unknown", verifier: verifier).errorCode == "invalid_grant")
    }

    @Test func codesExpire() throws {
        let server = try DevServerProcess(["--code-ttl", "1"])
        let (code, verifier) = try code(server)
        try server.advanceClock(2)
        #expect(try exchange(server, code: code, verifier: verifier).errorCode == "invalid_grant")
    }

    func deviceStart(_ server: DevServerProcess) throws -> JSON {
        try server.request("POST", "/oauth/device_authorization", body: .form([("client_id", "workbench")])).json()
    }

    func poll(_ server: DevServerProcess, _ deviceCode: String) throws -> HTTPResult {
        try server.request(
            "POST", "/oauth/token",
            body: .form([
                ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                ("device_code", deviceCode), ("client_id", "workbench")
            ]))
    }

    @Test func deviceFlowPendingSlowDownApproval() throws {
        // A minute: the second poll comes within the interval however slowly a loaded machine runs the two
        // curl processes (an approved code is answered whatever the interval).
        let server = try DevServerProcess(["--device-interval", "60"])
        let start = try deviceStart(server)
        let deviceCode = try #require(start["device_code"]?.stringValue)
        let userCode = try #require(start["user_code"]?.stringValue)
        #expect(start["verification_uri_complete"]?.stringValue == server.baseURL + "/oauth/device?user_code=" + userCode)
        #expect(start["interval"]?.intValue == 60)
        #expect(try poll(server, deviceCode).errorCode == "authorization_pending")
        let tooFast = try poll(server, deviceCode)
        #expect(tooFast.errorCode == "slow_down")
        let page = try server.request("GET", "/oauth/device?user_code=\(userCode)")
        #expect(page.status == 200 && page.text.contains(userCode))
        let approve = try server.request(
            "POST", "/oauth/device",
            body: .form([("user_code", userCode), ("username", "alice"), ("password", "alice-pass"), ("action", "approve")]))
        #expect(approve.status == 200)
        let token = try poll(server, deviceCode)
        #expect(token.status == 200)
        #expect(try token.json()["user"]?["id"]?.stringValue == "alice")
        #expect(try poll(server, deviceCode).errorCode == "invalid_grant")
    }

    @Test func deviceFlowDeniedAndExpired() throws {
        let server = try DevServerProcess(["--device-interval", "0", "--device-code-ttl", "2"])
        let denied = try deviceStart(server)
        _ = try server.request(
            "POST", "/oauth/device", body: .form([("user_code", denied["user_code"]?.stringValue ?? ""), ("action", "deny")]))
        #expect(try poll(server, denied["device_code"]?.stringValue ?? "").errorCode == "access_denied")
        let expiring = try deviceStart(server)
        try server.advanceClock(3)
        #expect(try poll(server, expiring["device_code"]?.stringValue ?? "").errorCode == "expired_token")
        let unknownClient = try server.request("POST", "/oauth/device_authorization", body: .form([("client_id", "nope")]))
        #expect(unknownClient.status == 401 && unknownClient.errorCode == "invalid_client")
    }

    @Test func autoApproveSkipsTheForm() throws {
        let server = try DevServerProcess(["--auto-approve", "carol"])
        let (_, challenge) = DevServerProcess.pkce()
        let r = try server.request("GET", authorizeURL(challenge: challenge))
        #expect(r.status == 302)
        #expect(r.header("Location").flatMap(WebURL.init)?.queryValue("code") != nil)
        let device = try deviceStart(server)
        let token = try poll(server, device["device_code"]?.stringValue ?? "")
        #expect(try token.json()["user"]?["id"]?.stringValue == "carol")
    }

    @Test func revokeAlwaysAnswers200AndRevokes() throws {
        let server = try DevServerProcess()
        let login = try server.login("bob")
        let r = try server.request("POST", "/oauth/revoke", body: .form([("token", login.token)]))
        #expect(r.status == 200)
        #expect(try server.request("GET", "/api/me", token: login.token).errorCode == "SESSION_REVOKED")
        #expect(try server.request("POST", "/oauth/revoke", body: .form([("token", "garbage")])).status == 200)
        #expect(try server.request("POST", "/oauth/revoke", body: .form([("token", login.token)])).status == 200)
    }
}
