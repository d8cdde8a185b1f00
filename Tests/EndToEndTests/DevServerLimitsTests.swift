import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// What requests can make the server hold: counters, pending rows, faults, connections; and the
/// dev token that guards the control routes: a local server that anyone on the machine can reach stays bounded.
@Suite struct DevServerLimitsTests {
    /// Many requests on one curl process (kept-alive connections): `(method, path, body)` each; the statuses in order.
    func bulk(_ server: DevServerProcess, _ requests: [(String, String, String?)], dev: Bool = false) throws -> [Int] {
        let dir = TemporaryDirectory("bulk")
        var config = ""
        for (i, (method, path, body)) in requests.enumerated() {
            if i > 0 { config += "next\n" }
            config +=
                "url = \"\(server.baseURL + path)\"\nrequest = \"\(method)\"\noutput = \"/dev/null\"\nwrite-out = \"%{http_code}\\n\"\nsilent\n"
            if dev { config += "header = \"X-Dev-Token: \(server.devToken)\"\n" }
            if let body {
                config +=
                    "header = \"Content-Type: application/json\"\ndata-binary = \"\(body.replacingOccurrences(of: "\"", with: "\\\""))\"\n"
            }
        }
        try config.write(toFile: dir.file("config"), atomically: true, encoding: .utf8)
        let run = try Tools.run("/usr/bin/curl", ["-K", dir.file("config")], home: dir.path)
        return run.stdoutText.split(separator: "\n").map { Int($0) ?? 0 }
    }

    @Test func unmatchedRequestsShareOneCounterPerMethod() throws {
        let server = try DevServerProcess()
        let statuses = try bulk(
            server,
            (0..<300).map { ("GET", "/no/such/route-\($0)", nil) } + [("PATCH", "/api/me", nil), ("BREW", "/pot", nil), ("XYZZY", "/", nil)]
        )
        #expect(statuses.filter { $0 == 404 }.count >= 300)
        let counters = try server.dev("GET", "/__dev/counters").json()["counters"]
        #expect(counters?["GET (unmatched)"]?.intValue == 300)
        #expect(counters?["PATCH (unmatched)"]?.intValue == 1)  // a known path with the wrong method (405)
        #expect(counters?["OTHER (unmatched)"]?.intValue == 2)  // methods are client strings too
        #expect((counters?.objectValue?.count ?? 0) <= 5)
    }

    @Test func pendingSignInRequestsAreBounded() throws {
        let server = try DevServerProcess()
        let (_, challenge) = DevServerProcess.pkce()
        let path =
            "/oauth/authorize?response_type=code&client_id=workbench&redirect_uri=\(PercentEncoding.encode("http://127.0.0.1:53682/callback"))&code_challenge=\(challenge)&code_challenge_method=S256"
        let first = try #require(DevServerProcess.formValue(try server.request("GET", path).text, "request_id"))
        // 10,000 more pending requests push the oldest out.
        let statuses = try bulk(server, Array(repeating: ("GET", path, nil), count: 10_000))
        #expect(statuses.count == 10_000 && statuses.allSatisfy { $0 == 200 })
        let stale = try server.request(
            "POST", "/oauth/authorize",
            body: .form([("request_id", first), ("username", "bob"), ("password", "bob-pass"), ("action", "approve")]))
        #expect(stale.status == 400)
        _ = try server.login("bob")  // new ones still work
    }

    @Test func faultsAreBounded() throws {
        let server = try DevServerProcess()
        let body = #"{"route":"GET /nowhere","status":500}"#
        let statuses = try bulk(server, Array(repeating: ("POST", "/__dev/faults", body), count: 1001), dev: true)
        #expect(statuses.filter { $0 == 201 }.count == 1000)
        #expect(statuses.last == 409)
        #expect(try server.dev("DELETE", "/__dev/faults").json()["cleared"]?.intValue == 1000)
        #expect(try server.dev("POST", "/__dev/faults", .object([("route", .string("GET /nowhere")), ("status", .int(500))])).status == 201)
    }

    @Test func anEmptyDevTokenIsRefused() throws {
        // timeout(1): a server that accepted the token would serve until killed (exit 124), not hang the test.
        let tool = "timeout 10 '\(Tools.path("sl-devserver"))' --port 0 >/dev/null 2>&1"
        #expect(try Tools.shell("\(tool) --dev-token ''").status == 2)
        #expect(try Tools.shell("\(tool) --dev-token '  '").status == 2)
        #expect(try Tools.shell("STARLINE_DEV_TOKEN= \(tool)").status == 2)
        // A given token still works, from either place.
        let server = try DevServerProcess([], environment: ["STARLINE_DEV_TOKEN": "tok-123"])
        #expect(server.devToken == "tok-123")
        #expect(try server.request("GET", "/__dev/counters", headers: [("X-Dev-Token", "tok-123")]).status == 200)
        #expect(try server.request("GET", "/__dev/counters", headers: [("X-Dev-Token", "")]).status == 401)
    }

    /// Opens `count` connections that send half a request and then idle; runs `body` while they are
    /// open (bash's /dev/tcp in a shell that outlives the call), then asks curl until it gets through.
    func withIdleConnections(_ server: DevServerProcess, count: Int) throws -> (whileHeld: String, afterwards: String) {
        let port = String(server.baseURL.split(separator: ":").last ?? "")
        let url = server.baseURL + "/.well-known/oauth-authorization-server"
        let script = """
            for i in $(seq \(count)); do
              exec {fd}<>/dev/tcp/127.0.0.1/\(port)
              printf 'GET / HTTP/1.1\\r\\nHost: 127.0.0.1:\(port)\\r\\nX-Half' >&$fd
            done
            sleep 0.1
            held=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 '\(url)')
            after=000
            for i in $(seq 60); do
              after=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 '\(url)')
              [ "$after" = 200 ] && break
              sleep 0.1
            done
            echo "$held $after"
            """
        let run = try Tools.shell("bash -c \"$SCRIPT\"", environment: ["SCRIPT": script])
        let parts = run.stdoutText.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        return (parts.first ?? "", parts.last ?? "")
    }

    /// Over the per-address limit MHD closes a connection at once; over the overall limit it stops
    /// accepting, so the probe waits in the listen queue: it gives up after 1 s, well before the
    /// idle ones (3 s) are timed out.
    @Test(arguments: [["--max-connections-per-ip", "4"], ["--max-connections", "4"]])
    func idleHalfSentRequestsAreBoundedAndTimedOut(_ limit: [String]) throws {
        let server = try DevServerProcess(limit + ["--connection-timeout", "3"])
        let (whileHeld, afterwards) = try withIdleConnections(server, count: 4)
        #expect(whileHeld == "000")  // not served while the four idle ones hold every slot
        #expect(afterwards == "200")  // served once the idle ones were timed out
    }

    /// Slowloris from the same machine: every local client has the address 127.0.0.1, so trickling a header
    /// byte every half second on 128 connections used to fill the per-address limit for good (never idle, so
    /// never timed out). The slow ones past half the limit are shut after a second, the rest at the whole
    /// request's deadline (10 s); a prompt client is served meanwhile.
    @Test("a local client trickling requests on every connection it may hold leaves room for others, and its requests end")
    func tricklingClientsLeaveRoomAndAreShutAtTheDeadline() throws {
        let server = try DevServerProcess()
        let scratch = TemporaryDirectory("slowloris")
        let script = scratch.file("slowloris.py")
        try """
        import json, socket, sys, time
        port, count, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
        head = b"GET /.well-known/oauth-authorization-server HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\nX-Slow: " % port
        conns = []
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(head)
            conns.append(s)
        print("open", flush=True)
        alive, closed, start = set(range(count)), [], time.time()
        while alive and time.time() - start < seconds:
            for i in list(alive):
                try:
                    conns[i].send(b"a")
                except OSError:
                    alive.discard(i)
                    closed.append(time.time() - start)
            time.sleep(0.5)
        print(json.dumps({"alive": len(alive), "closed": len(closed), "last": max(closed, default=0)}), flush=True)
        """.write(toFile: script, atomically: true, encoding: .utf8)
        let slow = try Tools.runningInstalled("/usr/bin/python3", [script, String(server.port), "128", "16"])
        #expect(slow.waitForStdout(seconds: 30) { $0.contains("open") }, "\(slow.stderrSoFar)")
        // Asked again until served (the excess trickling connections are shut after a second), while the
        // trickling client still runs.
        var prompt: HTTPResult?
        let served = try eventually(seconds: 9) {
            prompt = try server.request("GET", "/.well-known/oauth-authorization-server", maxTime: 1)
            return prompt?.status == 200
        }
        #expect(
            served && slow.poll() == nil,
            "a prompt client is served while the trickling ones hold their half (curl \(prompt?.curlExit ?? -1))")
        let run = slow.waitOrKill(seconds: 60)
        let result = try JSON.parse(run.stdoutText.split(separator: "\n").last.map(String.init) ?? "")
        #expect(result["alive"]?.intValue == 0, "every trickling request was ended by its deadline: \(run.stdoutText) \(run.stderrText)")
        #expect((result["last"]?.doubleValue ?? 99) < 14, "\(run.stdoutText)")
    }

    @Test func aDelayFaultLongerThanTheIdleTimeoutIsStillAnswered() throws {
        // The idle timeout is for silent clients, not for a handler that is still working.
        let server = try DevServerProcess(["--connection-timeout", "1"])
        _ = try server.dev(
            "POST", "/__dev/faults",
            .object([("route", .string("GET /.well-known/oauth-authorization-server")), ("delayMs", .int(1500)), ("count", .int(1))]))
        #expect(try server.request("GET", "/.well-known/oauth-authorization-server").status == 200)
    }
}

@Suite struct DevServerEventRetentionTests {
    @Test func syncEventsAreBoundedAndAnOlderCursorIsExpired() throws {
        let server = try DevServerProcess(["--event-retention", "4"])
        let bob = try server.login("bob")
        #expect(try server.request("GET", "/chat/v1/sync?since=0", token: bob.token).status == 200)  // nothing dropped yet
        for i in 0..<4 {  // three members: twelve events
            let put = try server.request(
                "PUT", "/chat/v1/conversations/c_team/messages/r\(i)", token: bob.token, body: .json(.object([("text", .string("m\(i)"))])))
            #expect(put.status == 201)
        }
        let expired = try server.request("GET", "/chat/v1/sync?since=0", token: bob.token)
        #expect(expired.status == 410 && expired.errorCode == "CURSOR_EXPIRED")
        let fresh = try server.request("GET", "/chat/v1/sync", token: bob.token).json()
        let events = fresh["events"]?.arrayValue ?? []
        #expect(!events.isEmpty && events.count <= 4)
        let cursor = try #require(fresh["cursor"]?.stringValue)
        #expect(try server.request("GET", "/chat/v1/sync?since=\(cursor)", token: bob.token).status == 200)
    }
}
