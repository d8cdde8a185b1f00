import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// What the built sl-login and sl-restore say and do around a sign-in: the URL, the session replaced, a
/// memory-only token's logout.
@Suite struct SignInHardeningTests {
    func harness() throws -> SessionToolsHarness { try SessionToolsHarness(server: try DevServerProcess()) }

    /// The URL is on stderr even when a browser was started, and a browser command that fails is noticed
    /// (the sign-in keeps waiting: `timeout` ends it after the notice).
    @Test func aFailingBrowserIsNoticedAndTheURLIsShown() throws {
        let h = try harness()
        let run = try Tools.shell("\(h.shellEnvironment) BROWSER=false timeout 3 '\(Tools.path("sl-login"))' --browser --pending-ttl 30")
        #expect(run.stderrText.contains(h.server.baseURL + "/oauth/authorize?"), "\(run.stderrText)")
        #expect(run.stderrText.contains("the browser command failed (exit 1)"), "\(run.stderrText)")
        #expect(run.stdout.isEmpty)
    }

    /// S12: signing in over a stored session revokes the session it replaces — at once when the server
    /// answers, otherwise queued as a pending revocation exactly like an offline logout, and revoked later.
    @Test func signingInOverASessionRevokesTheReplacedOne() throws {
        let h = try harness()
        let first = try h.storeLogin("bob")
        let second = try h.server.login("bob")
        let again = try h.run("sl-login", ["--with-token"], stdin: Array(second.token.utf8))
        #expect(again.status == 0, "\(again.stderrText)")
        #expect(try h.server.request("GET", "/api/me", token: first.token).status == 401, "the replaced token is revoked")
        #expect(try h.server.request("GET", "/api/me", token: second.token).status == 200)
        #expect(try h.status()["pendingRevocations"]?.arrayValue?.isEmpty == true)

        // The server refuses the revocation: the replaced token is queued, and a later run revokes it.
        _ = try h.server.dev("POST", "/__dev/faults", .object([("route", .string("POST /oauth/revoke")), ("status", .int(503))]))
        let third = try h.server.login("bob")
        let queued = try h.run("sl-login", ["--with-token"], stdin: Array(third.token.utf8))
        #expect(queued.status == 0, "the new login stands: \(queued.stderrText)")
        let pending = try h.status()["pendingRevocations"]?.arrayValue ?? []
        #expect(pending.count == 1 && pending.first?["sessionId"]?.stringValue == second.sessionId, "\(pending)")
        #expect(try h.server.request("GET", "/api/me", token: second.token).status == 200)
        _ = try h.server.dev("DELETE", "/__dev/faults")
        #expect(try h.restore().state == "valid")
        #expect(try h.server.request("GET", "/api/me", token: second.token).status == 401, "revoked by the next sl-restore")
        #expect(try h.status()["pendingRevocations"]?.arrayValue?.isEmpty == true)

        // Storing the same session again replaces nothing.
        let same = try h.run("sl-login", ["--with-token"], stdin: Array(third.token.utf8))
        #expect(same.status == 0)
        #expect(try h.server.request("GET", "/api/me", token: third.token).status == 200)
    }

    /// S2: with STARLINE_TOKEN nothing is stored, so `logout` revokes that token and, when it cannot, never
    /// claims a local clean-up; `status` shows the memory session that sl-restore verifies.
    @Test func memoryTokenLogoutAndStatusTellTheTruth() throws {
        let h = try harness()
        let login = try h.server.login("bob")
        let env = ["STARLINE_TOKEN": login.token]
        let status = try h.run("sl-login", ["status"], environment: env).json()
        #expect(status["session"]?["source"]?.stringValue == "STARLINE_TOKEN")
        #expect(try h.restore(environment: env).state == "valid")

        let offline = try h.run("sl-login", ["logout"], environment: env.merging(["STARLINE_API_BASE_URL": "http://127.0.0.1:9"]) { $1 })
        #expect(offline.status == 7)
        let offlineResult = try offline.json()
        #expect(offlineResult["revoked"] == .bool(false) && offlineResult["hadSession"] == .bool(true))
        #expect(offline.stderrText.contains("could not be revoked (nothing is stored locally"), "\(offline.stderrText)")

        let online = try h.run("sl-login", ["logout"], environment: env)
        let onlineResult = try online.json()
        #expect(online.status == 0 && onlineResult["revoked"] == .bool(true), "\(online.stderrText)")
        #expect(try h.restore(environment: env).state == "cleared", "the env token was revoked on the server")
    }
}

/// Proxies from the environment are never used for a loopback base URL (the token would
/// travel in cleartext to the proxy). The proxy here is a closed port: were it used, every request would fail.
@Suite struct LoopbackProxyTests {
    @Test func environmentProxiesAreNotUsedForLoopbackHosts() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("bob")
        let proxies = [
            "http_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
            "HTTPS_PROXY": "http://127.0.0.1:9", "ALL_PROXY": "http://127.0.0.1:9", "all_proxy": "http://127.0.0.1:9"
        ]
        let r = try h.restore(environment: proxies)
        #expect(r.status == 0 && r.state == "valid", "\(r.run.stderrText)")
        let center = try h.run("sl-login", ["center"], environment: proxies)
        #expect(center.status == 0, "\(center.stderrText)")
    }
}

/// S13: the revocation marker goes only after the change that makes it unnecessary has
/// committed. A clear, or a new login, whose transaction fails keeps it, so the signed-out candidate stays refused.
@Suite struct RevocationMarkerTests {
    @Test func s13AFailedClearOrLoginKeepsTheMarker() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("bob")
        let logout = try h.run("sl-login", ["logout"], environment: ["STARLINE_TEST_STORAGE_FAULT": "delete"])
        #expect(logout.status == 10, "\(logout.stderrText)")
        #expect(try h.status()["clearIncomplete"] == .bool(true))

        let clear = try h.run("sl-login", ["clear"], environment: ["STARLINE_TEST_STORAGE_FAULT": "commit"])
        #expect(clear.status == 10, "\(clear.stderrText)")
        #expect(try h.status()["clearIncomplete"] == .bool(true), "the marker outlives a clear that did not commit")
        #expect(try h.run("sl-login", ["token"]).status == 3, "the signed-out candidate stays refused")
        #expect(try h.restore().status == 3)

        let login = try h.server.login("bob")
        let failedLogin = try h.run(
            "sl-login", ["--with-token"], stdin: Array(login.token.utf8), environment: ["STARLINE_TEST_STORAGE_FAULT": "commit"])
        #expect(failedLogin.status == 10, "\(failedLogin.stderrText)")
        #expect(try h.status()["clearIncomplete"] == .bool(true), "the marker outlives a login that did not commit")
        #expect(try h.run("sl-login", ["token"]).status == 3)

        #expect(try h.run("sl-login", ["clear"]).status == 0)
        #expect(try h.status()["clearIncomplete"] == .bool(false))
        try h.storeLogin("bob")
        #expect(try h.restore().status == 0, "a later login is usable again")
    }
}

/// The tools that hold tokens and keys never dump core (RLIMIT_CORE 0, hard limit too).
@Suite struct CoreDumpTests {
    @Test func theNetworkedToolsRunWithoutCoreDumps() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        // A sign-in waits for its callback long enough to read its limits from /proc.
        let run = try Tools.shell(
            """
            ulimit -c unlimited 2>/dev/null || ulimit -c 1024
            \(h.shellEnvironment) '\(Tools.path("sl-login"))' --no-browser --pending-ttl 30 > /dev/null 2>&1 & pid=$!
            for i in $(seq 100); do grep 'Max core file size' /proc/$pid/limits 2>/dev/null | grep -q ' 0  *0 ' && break; sleep 0.05; done
            grep 'Max core file size' /proc/$pid/limits
            kill $pid; wait $pid 2>/dev/null; true
            """)
        let line = run.stdoutText.split(separator: "\n").first.map(String.init) ?? ""
        let fields = line.split(separator: " ").map(String.init)
        #expect(fields.count >= 6 && fields[4] == "0" && fields[5] == "0", "\(run.stdoutText) \(run.stderrText)")
    }
}
