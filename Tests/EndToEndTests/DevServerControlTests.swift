import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// Dev control routes, bad input, concurrency, the process and the contract.
@Suite struct DevServerControlTests {
    @Test func devRoutesNeedTheDevToken() throws {
        let server = try DevServerProcess()
        let r = try server.request("GET", "/__dev/counters")
        #expect(r.status == 401 && r.errorCode == "INVALID_DEV_TOKEN")
        #expect(try server.request("GET", "/__dev/counters", headers: [("X-Dev-Token", "wrong")]).status == 401)
    }

    @Test func statusFaultsCountDownThenStop() throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        let fault = try server.dev(
            "POST", "/__dev/faults", .object([("route", .string("GET /api/me")), ("status", .int(503)), ("count", .int(2))]))
        #expect(fault.status == 201)
        #expect(try server.request("GET", "/api/me", token: bob.token).status == 503)
        #expect(try server.request("GET", "/api/me", token: bob.token).status == 503)
        #expect(try server.request("GET", "/api/me", token: bob.token).status == 200)
        let counters = try server.dev("GET", "/__dev/counters").json()["counters"]
        #expect(counters?["GET /api/me"]?.intValue == 3)  // faulted requests are counted too
    }

    @Test func wildcardFaultsOnChatRoutesAndClearing() throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        _ = try server.dev(
            "POST", "/__dev/faults", .object([("route", .string("PUT /chat/v1/conversations/*/messages/*")), ("status", .int(500))]))
        let body = HTTPResult.self
        _ = body
        let put = try server.request(
            "PUT", "/chat/v1/conversations/c_team/messages/a1", token: bob.token, body: .json(.object([("text", .string("x"))])))
        #expect(put.status == 500)
        let cleared = try server.dev("DELETE", "/__dev/faults").json()
        #expect(cleared["cleared"]?.intValue == 1)
        #expect(
            try server.request(
                "PUT", "/chat/v1/conversations/c_team/messages/a1", token: bob.token, body: .json(.object([("text", .string("x"))]))
            ).status == 201)
        let counters = try server.dev("GET", "/__dev/counters").json()["counters"]
        #expect(counters?["PUT /chat/v1/conversations/{id}/messages/{clientId}"]?.intValue == 2)
    }

    @Test func resetFaultDropsTheConnection() throws {
        let server = try DevServerProcess()
        _ = try server.dev(
            "POST", "/__dev/faults",
            .object([("route", .string("GET /.well-known/oauth-authorization-server")), ("reset", .bool(true)), ("count", .int(1))]))
        let dropped = try server.request("GET", "/.well-known/oauth-authorization-server")
        #expect(dropped.status == 0 && dropped.curlExit != 0)
        #expect(try server.request("GET", "/.well-known/oauth-authorization-server").status == 200)
    }

    @Test func delayFaultRunsTheHandlerBeforeTheTimeout() throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        _ = try server.dev(
            "POST", "/__dev/faults",
            .object([("route", .string("PUT /chat/v1/conversations/*/messages/*")), ("delayMs", .int(3000)), ("count", .int(1))]))
        let timedOut = try server.request(
            "PUT", "/chat/v1/conversations/c_team/messages/slow-1", token: bob.token,
            body: .json(.object([("text", .string("written anyway"))])), maxTime: 1)
        #expect(timedOut.curlExit == 28)  // curl: operation timed out
        let history =
            try server.request("GET", "/chat/v1/conversations/c_team/messages", token: bob.token).json()["messages"]?.arrayValue ?? []
        #expect(history.contains { $0["clientId"]?.stringValue == "slow-1" })
    }

    @Test func holdFaultHoldsTheRequestBeforeItsHandlerUntilTheFaultsAreCleared() throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        let route = "PUT /chat/v1/conversations/{id}/messages/{clientId}"
        let added = try server.dev(
            "POST", "/__dev/faults",
            .object([("route", .string("PUT /chat/v1/conversations/*/messages/*")), ("hold", .bool(true)), ("count", .int(1))]))
        #expect(added.status == 201)
        #expect(try added.json()["fault"]?["hold"] == .bool(true))
        let held = DevServerStopTests.Request {
            try server.request(
                "PUT", "/chat/v1/conversations/c_team/messages/held-1", token: bob.token,
                body: .json(.object([("text", .string("held"))])), maxTime: 120)
        }
        #expect(try server.waitForRequests(route, atLeast: 1, seconds: 10), "the held request reached the server")
        func stored(_ clientId: String) throws -> Bool {
            let history =
                try server.request("GET", "/chat/v1/conversations/c_team/messages", token: bob.token).json()["messages"]?.arrayValue ?? []
            return history.contains { $0["clientId"]?.stringValue == clientId }
        }
        // Held: unanswered and its handler not run, while the server answers everything else (the fault
        // was for one request: the next PUT goes through).
        #expect(!held.finished)
        #expect(try !stored("held-1"))
        #expect(
            try server.request(
                "PUT", "/chat/v1/conversations/c_team/messages/free-1", token: bob.token, body: .json(.object([("text", .string("free"))]))
            ).status == 201)
        #expect(!held.finished)
        #expect(try server.dev("DELETE", "/__dev/faults").status == 200)
        let answered = try #require(held.finish())
        #expect(answered.status == 201, "\(answered.text)")
        #expect(try stored("held-1"))
    }

    @Test func badFaultRequests() throws {
        let server = try DevServerProcess()
        #expect(try server.dev("POST", "/__dev/faults", .object([("route", .string("GET /api/me"))])).status == 400)
        #expect(try server.dev("POST", "/__dev/faults", .object([("route", .string("nonsense")), ("status", .int(500))])).status == 400)
        #expect(
            try server.dev("POST", "/__dev/faults", .object([("route", .string("GET /x")), ("status", .int(500)), ("reset", .bool(true))]))
                .status == 400)
        #expect(
            try server.dev("POST", "/__dev/faults", .object([("route", .string("GET /x")), ("hold", .bool(true)), ("delayMs", .int(5))]))
                .status == 400)
        #expect(
            try server.dev(
                "POST", "/__dev/faults",
                .object([("route", .string("GET /x")), ("hold", .bool(true)), ("headers", .object([("Retry-After", .string("1"))]))])
            ).status == 400)
    }

    @Test func rateLimitAnswers429WithRetryAfter() throws {
        let server = try DevServerProcess()
        _ = try server.dev("POST", "/__dev/rate-limit", .object([("rps", .int(2))]))
        var statuses: [Int] = []
        for _ in 0..<6 { statuses.append(try server.request("GET", "/.well-known/oauth-authorization-server").status) }
        let limited = statuses.filter { $0 == 429 }.count
        #expect(limited >= 1)
        let r = try server.request("GET", "/.well-known/oauth-authorization-server")
        if r.status == 429 {
            #expect(r.header("Retry-After") == "1")
            #expect(r.errorCode == "RATE_LIMITED")
        }
        _ = try server.dev("POST", "/__dev/rate-limit", .object([("rps", .int(0))]))
        #expect(try server.request("GET", "/.well-known/oauth-authorization-server").status == 200)
    }

    @Test func resetRestoresTheSeed() throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        _ = try server.request(
            "PUT", "/chat/v1/conversations/c_team/messages/r1", token: bob.token,
            body: .json(.object([("text", .string("gone after reset"))])))
        #expect(try server.dev("POST", "/__dev/reset").json()["reset"] == .bool(true))
        #expect(try server.request("GET", "/api/me", token: bob.token).errorCode == "INVALID_TOKEN")
        let fresh = try server.login("bob")
        let history =
            try server.request("GET", "/chat/v1/conversations/c_team/messages", token: fresh.token).json()["messages"]?.arrayValue ?? []
        #expect(history.compactMap { $0["text"]?.stringValue } == ["Stand-up at ten."])
        // Counters restart too: only the request made after the reset is counted.
        #expect(try server.dev("GET", "/__dev/counters").json()["counters"]?["GET /api/me"]?.intValue == 1)
    }

    @Test func malformedBodiesUnknownRoutesAndWrongMethods() throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        let malformed = try server.request(
            "POST", "/api/password", token: bob.token, body: .raw(Array("{not json".utf8), contentType: "application/json"))
        #expect(malformed.status == 400 && malformed.errorCode == "INVALID_JSON")
        let array = try server.request(
            "POST", "/api/password", token: bob.token, body: .raw(Array("[1,2]".utf8), contentType: "application/json"))
        #expect(array.status == 400 && array.errorCode == "INVALID_REQUEST")
        let missing = try server.request("POST", "/api/password", token: bob.token, body: .json(.object([("oldPassword", .int(3))])))
        #expect(missing.status == 400 && missing.errorCode == "INVALID_REQUEST")
        let huge = try server.request(
            "PUT", "/chat/v1/conversations/c_team/messages/big", token: bob.token,
            body: .raw(Array(repeating: UInt8(ascii: "a"), count: 200_000), contentType: "application/json"))
        #expect(huge.status == 413 && huge.errorCode == "PAYLOAD_TOO_LARGE")
        let unknown = try server.request("GET", "/no/such/route")
        #expect(unknown.status == 404 && unknown.errorCode == "NOT_FOUND")
        let method = try server.request("PATCH", "/api/me", token: bob.token)
        #expect(method.status == 405 && method.errorCode == "METHOD_NOT_ALLOWED")
        #expect(method.header("Allow") == "GET")
        let formGarbage = try server.request(
            "POST", "/oauth/token", body: .raw([0xFF, 0xFE, 0x25, 0x25], contentType: "application/x-www-form-urlencoded"))
        #expect(formGarbage.status == 400)
        // Still serving after all that.
        #expect(try server.request("GET", "/api/me", token: bob.token).status == 200)
    }

    @Test func manyConcurrentClients() throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        let urls = Array(repeating: server.baseURL + "/api/me", count: 200).joined(separator: "\n")
        let dir = TemporaryDirectory()
        try urls.write(toFile: dir.file("urls"), atomically: true, encoding: .utf8)
        let run = try Tools.shell(
            "xargs -P 64 -n 1 curl -s -o /dev/null -w '%{http_code}\\n' -H 'Authorization: Bearer \(bob.token)' < '\(dir.file("urls"))'")
        let codes = run.stdoutText.split(separator: "\n")
        #expect(codes.count == 200)
        #expect(codes.allSatisfy { $0 == "200" })
        let counters = try server.dev("GET", "/__dev/counters").json()["counters"]
        #expect(counters?["GET /api/me"]?.intValue == 200)
    }

    @Test func logHasOneLinePerRequestWithoutSecrets() throws {
        let dir = TemporaryDirectory()
        let log = dir.file("requests.jsonl")
        let server = try DevServerProcess(["--log", log])
        let login = try server.login("bob")
        _ = try server.request("GET", "/api/me", token: login.token)
        server.stop()
        let text = try String(contentsOfFile: log, encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(lines.count == 4)  // authorize page, authorize post, token, me
        let records = try lines.map { try JSON.parse(String($0)) }
        #expect(records.compactMap { $0["route"]?.stringValue } == ["/oauth/authorize", "/oauth/authorize", "/oauth/token", "/api/me"])
        #expect(records.last?["status"]?.intValue == 200)
        #expect(!text.contains(login.token))
        #expect(!text.contains("bob-pass"))
        #expect(!text.contains("code="))
    }

    @Test func stateSurvivesARestartWithDb() throws {
        let dir = TemporaryDirectory()
        let db = dir.file("dev.db")
        let first = try DevServerProcess(["--db", db])
        let login = try first.login("carol")
        #expect(first.stop() == 0)
        let second = try DevServerProcess(["--db", db])
        #expect(try second.request("GET", "/api/me", token: login.token).status == 200)
    }

    @Test func customSeed() throws {
        let dir = TemporaryDirectory()
        let seed = dir.file("seed.json")
        try #"{"users":[{"id":"dave","password":"dave-pass","roles":["admin"]}],"apps":[{"id":"workbench"}]}"#.write(
            toFile: seed, atomically: true, encoding: .utf8)
        let server = try DevServerProcess(["--seed", seed])
        let dave = try server.login("dave")
        #expect(try server.request("GET", "/api/me", token: dave.token).json()["roles"] == .array([.string("admin")]))
        #expect(throws: StarlineError.self) { try server.login("alice") }
        let bad = try Tools.run("sl-devserver", ["--port", "0", "--auto-approve", "zed"], home: dir.path)
        #expect(bad.status == 2)
    }

    @Test func openAPIIsServedAndMatchesTheRoutesServed() throws {
        let server = try DevServerProcess()
        let served = try server.request("GET", "/openapi.yaml")
        let committed = try String(contentsOfFile: repositoryRoot + "/docs/openapi.yaml", encoding: .utf8)
        #expect(served.status == 200)
        #expect(served.text == committed, "the embedded contract is stale: run make generated")
        // (method, path) pairs of the contract: paths at two spaces, methods at four, under `paths:`.
        var documented = Set<String>()
        var inPaths = false
        var currentPath = ""
        for line in committed.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("paths:") { inPaths = true; continue }
            if inPaths, let first = line.first, first != " ", first != "#" { inPaths = false }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), !line.hasPrefix("   ") { currentPath = String(line.dropFirst(2).dropLast()); continue }
            if line.hasPrefix("    "), !line.hasPrefix("     ") {
                let method = line.dropFirst(4).prefix { $0 != ":" }
                if ["get", "post", "put", "delete", "patch"].contains(String(method)) {
                    documented.insert("\(method.uppercased()) \(currentPath)")
                }
            }
        }
        let routes = try Tools.run("sl-devserver", ["--routes"], home: TemporaryDirectory().path)
        let servedRoutes = Set(routes.stdoutText.split(separator: "\n").map(String.init))
        #expect(servedRoutes.count > 30)
        #expect(
            servedRoutes == documented,
            "served but not documented: \(servedRoutes.subtracting(documented)); documented but not served: \(documented.subtracting(servedRoutes))"
        )
    }

    @Test func sigtermStopsCleanly() throws {
        let server = try DevServerProcess()
        _ = try server.request("GET", "/.well-known/oauth-authorization-server")
        #expect(server.stop() == 0)
    }

    @Test func sigintStopsCleanly() throws {
        let dir = TemporaryDirectory()
        let script = """
            '\(Tools.path("sl-devserver"))' --port 0 > '\(dir.file("out"))' 2>/dev/null & pid=$!
            while [ ! -s '\(dir.file("out"))' ]; do sleep 0.05; done
            kill -INT $pid; wait $pid; echo "exit=$?"
            """
        let run = try Tools.shell(script)
        #expect(run.stdoutText.contains("exit=0"), "\(run.stdoutText) \(run.stderrText)")
    }

    @Test func moreBadRequests() throws {
        let server = try DevServerProcess()
        #expect(try server.request("GET", "/chat/f/unknown-code").status == 404)
        #expect(try server.dev("POST", "/__dev/rate-limit", .object([("rps", .int(-1))])).errorCode == "INVALID_REQUEST")
        #expect(try server.dev("POST", "/__dev/users/bob/sessions", .object([("count", .int(0))])).errorCode == "INVALID_REQUEST")
        #expect(try server.dev("POST", "/__dev/users/nobody/sessions", .object([("count", .int(1))])).status == 404)
        #expect(try server.dev("GET", "/__dev/sms/%2B0").status == 404)
    }
}
