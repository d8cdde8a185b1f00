import Foundation
import StarlineCore
import StarlinePlatform
import StarlineTestSupport
import Testing
import PlatformCommands
@testable import LoginCommands
@testable import RestoreCommands
@testable import SessionsCommands
@testable import ChatCommands
import StarlineHTTP

/// Whole tools run in-process (`ToolMain.execute`) with a `ScriptedTransport` injected through the run's
/// `PlatformFactory`: no server, no process, no real waits. Each test scripts exactly the requests the
/// requirement allows; one more, one fewer, or another is a failure (`verify`). The clock is the one
/// `IOStreams` gives (a fixed time), so what the tools store and compare is read from it, not the wall clock.
@MainActor
@Suite struct ScriptedNetworkTests {
    /// 2023-11-14T22:13:20Z: before the sessions' expiry (2030), unlike today's wall clock after it would be.
    static let now = Timestamp(seconds: 1_700_000_000)
    static let me =
        #"{"user":{"id":"alice"},"roles":["admin"],"session":{"id":"ses_1","appId":"workbench","expiresAt":"2030-01-01T00:00:00Z"}}"#

    let home = TemporaryDirectory("scripted")

    struct Run {
        var status: StarlineCore.ExitStatus
        var stdout: String
        var stderr: String
        var lines: [JSON] { stdout.split(separator: "\n").compactMap { try? JSON.parse(String($0)) } }
    }

    func run(
        _ tool: Tool<AsyncCommandRunner>, _ words: [String], _ stub: ScriptedTransport, stdin: [UInt8] = [], now: Timestamp = now,
        waits: Locked<[Double]>? = nil
    ) async throws -> Run {
        try "00112233445566778899aabbccddeeff\n".write(toFile: home.file("machine-id"), atomically: true, encoding: .utf8)
        let captured = IOStreams.capturing(
            stdin: stdin,
            environment: Environment([
                "STARLINE_HOME": home.path, "HOME": home.path, "STARLINE_MACHINE_ID_FILE": home.file("machine-id"),
                "STARLINE_API_BASE_URL": "https://api.test", "STARLINE_CHAT_BASE_URL": "https://chat.test"
            ]), now: now)
        let network = PlatformFactory.Injection(transport: stub, wait: { seconds in waits?.withLock { $0.append(seconds) } })
        let status = await ToolMain.execute(tool, words, io: captured.io, network: network)
        return Run(status: status, stdout: captured.stdout.text, stderr: captured.stderr.text)
    }

    /// `sl-login --with-token`: one `GET /api/me`, then the session is stored.
    func signIn() async throws {
        let stub = ScriptedTransport().expect("GET", "/api/me", json: Self.me)
        let login = try await run(LoginTool.tool, ["--with-token"], stub, stdin: Array("tok-1".utf8))
        #expect(login.status == .ok, "\(login.stderr)")
        stub.verify()
        #expect(stub.received.first?.header("Authorization") == "Bearer tok-1")
    }

    // MARK: S4: retries on the injected clock

    @Test func s4RestoreRetriesA503AndWaitsOutARetryAfterOnTheInjectedClock() async throws {
        try await signIn()
        let stub = ScriptedTransport()
            .expect("GET", "/api/me", status: 503, json: #"{"error":{"code":"UNAVAILABLE","message":"down"}}"#)
            .expect(
                "GET", "/api/me", status: 429, json: #"{"error":{"code":"RATE_LIMITED","message":"slow"}}"#, headers: ["retry-after": "7"]
            )
            .expect("GET", "/api/me", json: Self.me)
        let waits = Locked<[Double]>([])
        let restore = try await run(RestoreTool.tool, [], stub, waits: waits)
        #expect(restore.status == .ok, "\(restore.stderr)")
        #expect(try JSON.parse(Array(restore.stdout.utf8))["state"]?.stringValue == "valid")
        let recorded = waits.withLock { $0 }
        // The 503: the policy's backoff (0.2 s with equal jitter); the 429: the server's Retry-After, to the second.
        #expect(recorded.count == 2 && (0.1...0.2).contains(recorded[0]) && recorded.last == 7, "\(recorded)")
    }

    @Test func s4AnExpiredSessionIsClearedWithoutARequestJudgedByTheInjectedClock() async throws {
        try await signIn()
        // 2031: the stored session (expiring 2030) is expired by the run's clock. Not one request is scripted.
        let restore = try await run(RestoreTool.tool, [], ScriptedTransport(), now: Timestamp(seconds: 1_930_000_000))
        #expect(restore.status == .sessionEnded, "\(restore.stderr)")
        let json = try JSON.parse(Array(restore.stdout.utf8))
        #expect(json["state"]?.stringValue == "cleared" && json["reason"]?.stringValue == "expired", "\(restore.stdout)")
    }

    // MARK: S15: a chat request's 401 ends the session it used

    @Test func s15ARevokedSessionIsClearedByAChatRequest() async throws {
        try await signIn()
        let stub = ScriptedTransport()
            .expect("GET", "/v1/conversations", status: 401, json: #"{"error":{"code":"SESSION_REVOKED","message":"revoked"}}"#)
        let chat = try await run(ChatTool.tool, ["conversations"], stub)
        #expect(chat.status == .sessionEnded && chat.stdout.isEmpty, "\(chat.stderr)")
        #expect(chat.stderr.contains("SESSION_REVOKED"), "\(chat.stderr)")
        // Cleared: the local status needs no request and finds nothing stored.
        let status = try await run(LoginTool.tool, ["status"], ScriptedTransport())
        #expect(status.status == .notLoggedIn, "\(status.stdout)")
    }

    // MARK: W5: a lost answer is settled by the echo

    @Test func w5ATimedOutSendIsSettledByItsEchoAndNeverSentTwice() async throws {
        try await signIn()
        let echo =
            #"{"messages":[{"id":"m_9","clientId":"deploy-1","conversationId":"c_team","senderId":"alice","text":"deployed","createdAt":"2023-11-14T22:13:20Z","seq":9}]}"#
        // The PUT times out after it may have been written; the retry looks for the echo and finds it, so a
        // second PUT would be a blind resend: the script has none, and the stub fails the test on one.
        let stub = ScriptedTransport()
            .expect("PUT", "/v1/conversations/c_team/messages/deploy-1", failing: StarlineError(.timeout, "timed out", retryable: true))
            .expect("GET", "/v1/conversations/c_team/messages?clientId=deploy-1", json: echo)
        let send = try await run(ChatTool.tool, ["send", "c_team", "deployed", "--client-id", "deploy-1"], stub)
        #expect(send.status == .ok, "\(send.stderr)")
        let entry = try #require(send.lines.first)
        #expect(entry["state"]?.stringValue == "sent" && entry["message"]?["id"]?.stringValue == "m_9", "\(send.stdout)")
        #expect(stub.received.first?.bodyJSON?["text"]?.stringValue == "deployed")
    }

    // MARK: S4: a certificate that does not verify stops a run of many items

    static let untrusted = StarlineError(
        .tls, "the certificate of api.test could not be verified", details: .object([("curlCode", .int(60))]))

    @Test func s4AnUntrustedCertificateStopsABulkRevokeInsteadOfFailingEveryItem() async throws {
        try await signIn()
        // The second DELETE meets the certificate; a third request would be one more failure of the same
        // cause, and the stub fails the test on it.
        let stub = ScriptedTransport()
            .expect("DELETE", "/api/sessions/s_a", json: #"{"revoked":true}"#)
            .expect("DELETE", "/api/sessions/s_b", failing: Self.untrusted)
        let revoke = try await run(SessionsTool.tool, ["revoke", "s_a", "s_b", "s_c", "--parallel", "1"], stub)
        stub.verify()
        #expect(revoke.status == .transient, "exit 7 (TLS_ERROR), not 8 (PARTIAL): \(revoke.stderr)")
        #expect(revoke.stderr.contains("TLS_ERROR"), "\(revoke.stderr)")
        let byId = Dictionary(
            revoke.lines.compactMap { r in r["id"]?.stringValue.map { ($0, r["status"]?.stringValue ?? "?") } },
            uniquingKeysWith: { a, _ in a })
        #expect(byId == ["s_a": "revoked", "s_b": "failed", "s_c": "skipped"], "\(revoke.stdout)")
        #expect(revoke.lines.last?["summary"]?["stoppedBy"]?.stringValue == "TLS_ERROR", "\(revoke.stdout)")
    }

    @Test func w5AnUntrustedCertificateLeavesTheEntryPendingForTheFlushAfterTheTrustIsFixed() async throws {
        try await signIn()
        let refused = ScriptedTransport().expect("PUT", "/v1/conversations/c_team/messages/t-1", failing: Self.untrusted)
        let send = try await run(ChatTool.tool, ["send", "c_team", "behind a proxy", "--client-id", "t-1"], refused)
        refused.verify()
        #expect(send.status == .transient, "\(send.stderr)")
        let listed = try await run(ChatTool.tool, ["outbox", "list"], ScriptedTransport())
        #expect(listed.lines.first?["state"]?.stringValue == "pending", "not failed: nothing about the entry is wrong: \(listed.stdout)")
        let echo =
            #"{"id":"m_1","clientId":"t-1","conversationId":"c_team","senderId":"alice","text":"behind a proxy","createdAt":"2023-11-14T22:13:20Z","seq":1}"#
        let trusted = ScriptedTransport().expect("PUT", "/v1/conversations/c_team/messages/t-1", status: 201, json: echo)
        let flush = try await run(ChatTool.tool, ["outbox", "flush"], trusted)
        trusted.verify()
        #expect(flush.status == .ok, "\(flush.stderr)")
        #expect(flush.lines.first?["state"]?.stringValue == "sent", "\(flush.stdout)")
    }

    // MARK: W8: history pages

    @Test func w8HistoryAsksForThePageItPrintsAndKeepsAnotherConversationsAnswerOut() async throws {
        try await signIn()
        let page =
            #"{"messages":[{"id":"m_1","conversationId":"c_team","text":"a","seq":118},{"id":"m_2","conversationId":"c_team","text":"b","seq":119}]}"#
        let stray = #"{"messages":[{"id":"m_x","conversationId":"c_other","text":"not ours","seq":5}]}"#
        let stub = ScriptedTransport()
            .expect("GET", "/v1/conversations/c_team/messages?before=120&limit=2", json: page)
            .expect("GET", "/v1/conversations/c_team/messages?before=118&limit=2", json: stray)
        let first = try await run(ChatTool.tool, ["history", "c_team", "--before", "120", "-n", "2"], stub)
        #expect(first.status == .ok, "\(first.stderr)")
        #expect(first.lines.map { $0["seq"]?.intValue } == [118, 119])
        #expect(first.lines.allSatisfy { $0["freshAsOf"]?.stringValue == Timestamp.rfc3339String(Self.now.seconds) }, "\(first.stdout)")
        let second = try await run(ChatTool.tool, ["history", "c_team", "--before", "118", "-n", "2"], stub)
        #expect(second.status == .data && second.stdout.isEmpty, "\(second.stderr)")
        // Nothing of the stray answer was cached: offline, that page is not there.
        let offline = try await run(ChatTool.tool, ["history", "c_team", "--before", "118", "-n", "2", "--offline"], ScriptedTransport())
        #expect(offline.status == .noResult, "\(offline.stdout)")
    }

    // MARK: S16: the admin listing pages through the user list

    @Test func s16ListingAllUsersFollowsTheCursorAndRetriesA503OnTheEngineClock() async throws {
        try await signIn()
        let stub = ScriptedTransport()
            .expect("GET", "/api/admin/users?limit=1000", json: #"{"users":[{"id":"u1"}],"nextCursor":"p2"}"#)
            .expect("GET", "/api/admin/users?limit=1000&cursor=p2", json: #"{"users":[{"id":"u2"}],"nextCursor":null}"#)
            .expect("GET", "/api/admin/users/u1/sessions", json: #"{"sessions":[{"id":"s_1","appId":"workbench","current":false}]}"#)
            .expect("GET", "/api/admin/users/u2/sessions", status: 503, json: #"{"error":{"code":"UNAVAILABLE","message":"busy"}}"#)
            .expect("GET", "/api/admin/users/u2/sessions", json: #"{"sessions":[{"id":"s_2","appId":"workbench","current":false}]}"#)
        let list = try await run(SessionsTool.tool, ["list", "--all-users", "--parallel", "1"], stub)
        #expect(list.status == .ok, "\(list.stderr)")
        let rows = list.lines.map { "\($0["user"]?.stringValue ?? "?")/\($0["id"]?.stringValue ?? "?")" }
        #expect(rows == ["u1/s_1", "u2/s_2"], "\(list.stdout)")
    }

    // MARK: The stub itself

    @Test func theScriptedTransportFailsOnAnUnusedExpectationAndOnAnUnexpectedRequest() throws {
        withKnownIssue("an expectation the run never used") {
            let stub = ScriptedTransport().expect("GET", "/api/me")
            stub.verify()
        }
        withKnownIssue("a request the script does not have") {
            let stub = ScriptedTransport()
            let reply = try stub.performBlocking(HTTPRequestSpec(url: "https://api.test/api/sessions"))
            #expect(reply.status == 418)
            stub.verify()
        }
    }
}
