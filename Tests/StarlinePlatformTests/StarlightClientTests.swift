import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
@testable import StarlinePlatform
@testable import LoginCommands
@testable import StarlineHTTP

/// StarlightClient in one process against a real sl-devserver: callbacks, tear-down and the
/// device-session operations (S1, S7, S8, S10, S16).
@MainActor
@Suite struct StarlightClientTests {
    let home = TemporaryDirectory("client")

    func client(_ server: DevServerProcess, faults: String? = nil) throws -> StarlightClient {
        try "00112233445566778899aabbccddeeff\n".write(toFile: home.file("machine-id"), atomically: true, encoding: .utf8)
        var env: [String: String] = ["STARLINE_MACHINE_ID_FILE": home.file("machine-id")]
        if let faults { env["STARLINE_TEST_STORAGE_FAULT"] = faults }
        let api = try BaseURL(validating: server.baseURL)
        let store = try SessionStore(
            paths: StarlinePaths(environment: ["STARLINE_HOME": home.path]),
            key: StoreKey(api: api, appId: "workbench", service: "default"), environment: Environment(env),
            storageFaults: try StorageFaults(environment: Environment(env)))
        return StarlightClient(
            configuration: .init(api: api, appId: "workbench", timeout: 10), store: store, transport: HTTPTransport(timeout: 10))
    }

    final class Recorder {
        var sessions: [PlatformSession?] = []
        var errors: [StarlineError] = []
    }

    final class LoginProbe {
        var finished = false
        var published: [String?] = []
    }

    // The client and its callbacks are main-actor isolated by declaration (the compiler holds every caller to
    // it); what a run can show is that its network work does not hold the main actor.
    @Test("S1 the client's network work is async: the main actor runs other work while a request waits")
    func s1MainActor() async throws {
        let server = try DevServerProcess()
        let c = try client(server)
        let probe = LoginProbe()
        c.onSessionChanged = { probe.published.append($0?.sessionId) }
        let login = try server.login("bob")
        // The server holds the token check (GET /api/me) until the test lets it go.
        _ = try server.dev(
            "POST", "/__dev/faults", .object([("route", .string("GET /api/me")), ("hold", .bool(true)), ("count", .int(1))]))
        let asked = try server.requests("GET /api/me")
        let pending = Task { @MainActor in
            defer { probe.finished = true }
            return try await c.login(.token(login.token))
        }
        // Waits (off the main actor) until the request is at the server, held there, then comes back to the main
        // actor: a login that blocked the main actor for its network call would let it come back only after the
        // login had finished.
        let reached = try await Task.detached { try server.waitForRequests("GET /api/me", atLeast: asked + 1) }.value
        #expect(reached, "the token check reached the server")
        #expect(!probe.finished, "the main actor was blocked for the whole request")
        #expect(c.session == nil && probe.published.isEmpty, "nothing is published before the token is verified")
        _ = try await Task.detached { try server.dev("DELETE", "/__dev/faults") }.value
        let session = try await pending.value
        #expect(probe.finished)
        #expect(session.user["id"]?.stringValue == "bob")
        #expect(c.session?.sessionId == login.sessionId)
        #expect(probe.published == [login.sessionId], "published once, after the check")
    }

    @Test("S7 onError reports errors of authenticated requests; login errors are thrown at the call site")
    func s7ErrorReporting() async throws {
        let server = try DevServerProcess()
        let c = try client(server)
        let recorder = Recorder()
        c.onError = { recorder.errors.append($0) }
        c.onSessionChanged = { recorder.sessions.append($0) }
        await #expect(throws: StarlineError.self) { try await c.login(.token("bogus")) }
        #expect(recorder.errors.isEmpty)
        _ = try await c.login(.token(try server.login("bob").token))
        #expect(recorder.sessions.count == 1)
        _ = try server.dev("POST", "/__dev/faults", .object([("route", .string("GET /api/center")), ("status", .int(503))]))
        await #expect(throws: StarlineError.self) { try await c.center() }
        #expect(recorder.errors.map(\.code) == [.server])
    }

    @Test("S8 a storage-error callback that clears the identity is respected: nothing stale is published")
    func s8CallbackClears() async throws {
        let server = try DevServerProcess()
        let login = try server.login("bob")
        let seeded = try client(server)
        _ = try await seeded.login(.token(login.token))
        // A new instance whose store cannot write: restoring verifies, the write of the result fails.
        let c = try client(server, faults: "write")
        let recorder = Recorder()
        c.onError = { error in
            recorder.errors.append(error)
            try? c.clearSession()  // the host clears the identity from inside the callback
        }
        c.onSessionChanged = { recorder.sessions.append($0) }
        let outcome = await c.restoreSession()
        #expect(outcome.state != .valid)
        #expect(recorder.errors.first?.code == .storage)
        #expect(c.session == nil)
        #expect(!recorder.sessions.contains { $0 != nil })
    }

    @Test("S10 tear-down: with callbacks detached the client is released")
    func s10TearDown() async throws {
        let server = try DevServerProcess()
        weak var released: StarlightClient?
        do {
            let c = try client(server)
            let recorder = Recorder()
            c.onSessionChanged = { recorder.sessions.append($0) }
            _ = await c.restoreSession()
            c.onSessionChanged = nil
            c.onError = nil
            released = c
        }
        #expect(released == nil)
    }

    @Test("S16 revoking the current session clears the local one; revoking the others keeps it; password change keeps it")
    func s16DeviceSessions() async throws {
        let server = try DevServerProcess()
        let c = try client(server)
        _ = try await c.login(.token(try server.login("carol").token))
        let other = try server.login("carol")
        let sessions = try await c.sessions()
        #expect(sessions.count == 2)
        #expect(try await c.revokeOtherSessions() == 1)
        #expect(try server.request("GET", "/api/me", token: other.token).errorCode == "SESSION_REVOKED")
        #expect(c.session != nil)
        _ = try server.login("carol")
        #expect(try await c.changePassword(old: "carol-pass", new: "carol-pass-2") == 1)
        #expect(c.session != nil)
        let current = try #require(c.session?.sessionId)
        let result = try await c.revokeSession(id: current)
        #expect(result.current && result.revoked)
        #expect(c.session == nil)
        #expect(await c.restoreSession().state == .absent)
    }

    @Test("S16 a successful SMS reset clears the local identity")
    func s16SMSReset() async throws {
        let server = try DevServerProcess()
        let c = try client(server)
        _ = try await c.login(.token(try server.login("bob").token))
        _ = try server.request("POST", "/api/password/sms-reset/request", body: .json(.object([("phone", .string("+8613800000002"))])))
        let code = try #require(try server.dev("GET", "/__dev/sms/%2B8613800000002").json()["code"]?.stringValue)
        #expect(try await c.confirmSMSReset(phone: "+8613800000002", code: code, newPassword: "bob-new-pass") >= 1)
        #expect(c.session == nil)
        #expect(await c.restoreSession().state == .absent)
    }

    @Test("S5 concurrent restores in one instance share the in-flight restore; an unexpired session needs no call")
    func s5InProcess() async throws {
        let server = try DevServerProcess()
        let c = try client(server)
        _ = try await c.login(.token(try server.login("bob").token))
        let fresh = try client(server)
        let before = try server.requests("GET /api/me")
        async let a = fresh.restoreSession()
        async let b = fresh.restoreSession()
        let (ra, rb) = await (a, b)
        #expect(ra.state == .valid && rb.state == .valid)
        let after = try server.requests("GET /api/me")
        #expect(after - before == 1)
        #expect(await fresh.restoreSession(maxAge: 60).state == .valid)
        #expect(try server.requests("GET /api/me") == after)
        // With the default arguments too: the session in memory is returned without a call.
        #expect(await fresh.restoreSession().state == .valid)
        #expect(try server.requests("GET /api/me") == after)
    }

    @Test("S4 a malformed candidate (no session id) is cleared without a network call")
    func s4MalformedCandidate() async throws {
        let server = try DevServerProcess()
        let c = try client(server)
        let store = try #require(c.store)
        try store.withState { state in
            try state.saveCandidate(
                StoredCandidate(
                    accessToken: "tok-malformed", sessionId: "", user: .null, roles: [],
                    expiresAt: Timestamp.now().seconds + 3600, createdAt: Timestamp.now().seconds, verifiedAt: nil))
        }
        let before = try server.requests("GET /api/me")
        let outcome = await c.restoreSession()
        #expect(outcome.state == .cleared && outcome.reason == "malformed")
        #expect(try server.requests("GET /api/me") == before)
        #expect(try store.withState { try $0.candidate() } == nil)
    }
}

@Suite struct BrowserCommandTests {
    let url = "http://127.0.0.1:5555/oauth/authorize?a=1&b=%20"

    @Test("no $BROWSER: xdg-open URL")
    func defaultIsXdgOpen() {
        #expect(LoginTool.browserCommands(url, browser: nil) == [["xdg-open", url]])
        #expect(LoginTool.browserCommands(url, browser: "  ") == [["xdg-open", url]])
    }

    @Test("$BROWSER: colon-separated commands with arguments; %s is replaced, else the URL is one last argument")
    func browserListConvention() {
        #expect(LoginTool.browserCommands(url, browser: "firefox -P work:lynx") == [["firefox", "-P", "work", url], ["lynx", url]])
        #expect(LoginTool.browserCommands(url, browser: "w3m '%s'::chromium") == [["w3m", url], ["chromium", url]])
        #expect(LoginTool.browserCommands(url, browser: "\"/opt/My Browser/run\" --new-tab") == [["/opt/My Browser/run", "--new-tab", url]])
        #expect(LoginTool.browserCommands(url, browser: "open --url=%s") == [["open", "--url=\(url)"]])
    }
}
