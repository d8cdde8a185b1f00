import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// What `sl-sessions` needs from the contract and the devserver — the paged admin
/// user list, bulk users and sessions under /__dev/, faults with response headers, and per-session
/// revocation counts.
@Suite struct DevServerAdminTests {
    /// One page of `GET /api/admin/users`; the query is appended as given.
    func page(_ server: DevServerProcess, _ token: String, _ query: String = "") throws -> (ids: [String], next: String?) {
        let r = try server.request("GET", "/api/admin/users" + query, token: token)
        try #require(r.status == 200, "\(r.status) \(r.text)")
        let json = try r.json()
        let ids = (json["users"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
        return (ids, json["nextCursor"]?.stringValue)
    }

    /// Every page from the first, with `between` run after each page.
    func allPages(_ server: DevServerProcess, _ token: String, limit: Int, between: (Int) throws -> Void = { _ in }) throws -> [String] {
        var ids: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let p = try page(server, token, "?limit=\(limit)" + (cursor.map { "&cursor=" + $0 } ?? ""))
            #expect(p.ids.count <= limit)
            ids += p.ids
            cursor = p.next
            pages += 1
            try between(pages)
        } while cursor != nil && pages < 10_000
        return ids
    }

    func createUsers(_ server: DevServerProcess, _ fields: [(String, JSON)]) throws -> HTTPResult {
        try server.dev("POST", "/__dev/users", .object(fields))
    }

    @Test("paging through the admin user list covers every user exactly once, in id order")
    func pagingCoversEveryUserExactlyOnce() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice")
        #expect(try createUsers(server, [("count", .int(250)), ("prefix", .string("p"))]).status == 201)
        let expected = (["alice", "bob", "carol"] + (1...250).map { String(format: "p%04d", $0) }).sorted()

        let ids = try allPages(server, alice.token, limit: 7)
        #expect(ids == expected)

        let first = try page(server, alice.token)
        #expect(first.ids.count == 100 && first.next != nil)  // the default page size
        let whole = try page(server, alice.token, "?limit=1000")
        #expect(whole.ids == expected && whole.next == nil)
        let last = try page(server, alice.token, "?limit=\(expected.count)")
        #expect(last.next == nil)  // an exactly full last page says so at once

        let user = try server.request("GET", "/api/admin/users?limit=1", token: alice.token).json()["users"]?.arrayValue?.first
        #expect(user?["id"] == .string("alice") && user?["displayName"] == .string("Alice") && user?["roles"] == .array([.string("admin")]))
        #expect(user?["restricted"] == .bool(false))
    }

    @Test("users added while paging never make a page repeat or skip an existing user")
    func pagingIsStableWhileUsersAreAdded() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice")
        #expect(try createUsers(server, [("count", .int(40)), ("prefix", .string("m"))]).status == 201)
        let before = Set(try allPages(server, alice.token, limit: 1000))
        // Ids before, among and after the ones already listed arrive between pages.
        let prefixes = ["a", "m0", "n", "z"]
        let seen = try allPages(server, alice.token, limit: 5) { (pageNumber: Int) throws in
            if pageNumber <= prefixes.count {
                #expect(try createUsers(server, [("count", .int(3)), ("prefix", .string(prefixes[pageNumber - 1]))]).status == 201)
            }
        }
        #expect(Set(seen).count == seen.count, "a user was listed twice")
        #expect(before.isSubset(of: Set(seen)), "missing: \(before.subtracting(seen))")
        #expect(seen == seen.sorted())
    }

    @Test("limit bounds, bad cursors, non-admins")
    func adminListRefusals() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice")
        for bad in ["0", "1001", "-1", "abc", "1.5", "", "99999999999999999999"] {
            let r = try server.request("GET", "/api/admin/users?limit=\(bad)", token: alice.token)
            #expect(r.status == 400 && r.errorCode == "INVALID_REQUEST", "limit=\(bad): \(r.status)")
        }
        let valid = try #require(try page(server, alice.token, "?limit=1").next)
        let untagged = Base64.encodeURL(Array("bob".utf8))  // base64url, but not one this list made
        for bad in ["!!!", "", untagged, UserCursorForTests.after(""), valid + "=", valid + "%", Base64.encodeURL([0x75, 0x31, 0x3A, 0xFF])]
        {
            let r = try server.request("GET", "/api/admin/users?cursor=\(PercentEncoding.encode(bad))", token: alice.token)
            #expect(r.status == 400 && r.errorCode == "INVALID_REQUEST", "cursor=\(bad): \(r.status)")
        }
        #expect(try page(server, alice.token, "?cursor=\(valid)").ids == ["bob", "carol"])
        let bob = try server.login("bob")
        let forbidden = try server.request("GET", "/api/admin/users", token: bob.token)
        #expect(forbidden.status == 403 && forbidden.errorCode == "FORBIDDEN")
        #expect(try server.request("GET", "/api/admin/users").errorCode == "INVALID_TOKEN")
    }

    @Test("POST /__dev/users makes deterministic users that sign in, with working sessions")
    func bulkUsersAndTheirSessions() throws {
        let server = try DevServerProcess()
        let made = try createUsers(
            server, [("count", .int(3)), ("prefix", .string("u")), ("sessionsPerUser", .int(2)), ("appId", .string("com.example.game"))])
        #expect(made.status == 201)
        let json = try made.json()
        #expect(json["users"] == .array(["u0001", "u0002", "u0003"].map(JSON.string)))
        let sessions = json["sessions"]?.arrayValue ?? []
        #expect(sessions.compactMap { $0["user"]?.stringValue } == ["u0001", "u0001", "u0002", "u0002", "u0003", "u0003"])
        let token = try #require(sessions.first?["token"]?.stringValue)
        let me = try server.request("GET", "/api/me", token: token).json()
        #expect(me["user"]?["id"] == .string("u0001") && me["session"]?["appId"] == .string("com.example.game"))
        #expect(me["session"]?["id"] == sessions.first?["id"])
        _ = try server.login("u0002")  // the default password is {id}-pass, as the seeded users'
        #expect(try createUsers(server, [("count", .int(1)), ("prefix", .string("pw")), ("password", .string("secret-1"))]).status == 201)
        _ = try server.login("pw0001", password: "secret-1")
        #expect(try createUsers(server, [("count", .int(1)), ("prefix", .string("none"))]).json()["sessions"] == .array([]))
    }

    @Test("bulk creation refuses what is out of bounds, and an existing id creates no one")
    func bulkCreationLimits() throws {
        let server = try DevServerProcess()
        let refused: [[(String, JSON)]] = [
            [("count", .int(0)), ("prefix", .string("u"))],
            [("count", .int(10_001)), ("prefix", .string("u"))],
            [("count", .string("10")), ("prefix", .string("u"))],
            [("count", .int(10))],
            [("count", .int(10)), ("prefix", .string(""))],
            [("count", .int(10)), ("prefix", .string("a/b"))],
            [("count", .int(10)), ("prefix", .string(String(repeating: "x", count: 33)))],
            [("count", .int(10)), ("prefix", .string("u")), ("sessionsPerUser", .int(101))],
            [("count", .int(10)), ("prefix", .string("u")), ("sessionsPerUser", .int(-1))],
            [("count", .int(1001)), ("prefix", .string("u")), ("sessionsPerUser", .int(100))],  // 100100 sessions
            [("count", .int(10)), ("prefix", .string("u")), ("password", .string(""))]
        ]
        for body in refused {
            let r = try createUsers(server, body)
            #expect(r.status == 400 && r.errorCode == "INVALID_REQUEST", "\(JSON.object(body).serialized()): \(r.status)")
        }
        #expect(try createUsers(server, [("count", .int(1)), ("prefix", .string("u")), ("appId", .string("nope"))]).status == 404)
        #expect(try createUsers(server, [("count", .int(1000)), ("prefix", .string("u")), ("sessionsPerUser", .int(100))]).status == 201)

        #expect(try createUsers(server, [("count", .int(2)), ("prefix", .string("dup"))]).status == 201)
        let clash = try createUsers(server, [("count", .int(5)), ("prefix", .string("dup")), ("sessionsPerUser", .int(1))])
        #expect(clash.status == 409 && clash.errorCode == "USER_EXISTS")
        let alice = try server.login("alice")
        let ids = try page(server, alice.token, "?limit=1000&cursor=\(UserCursorForTests.after("dup"))").ids
        #expect(ids.filter { $0.hasPrefix("dup") } == ["dup0001", "dup0002"])  // the failed call left nothing
    }

    /// Tests never assert timings: the speed of bulk creation is a benchmark figure (bench/sessions-bulk).
    @Test("10,000 users with a session each, and 10,000 sessions of one user, each in one request")
    func bulkCreationInOneRequest() throws {
        let server = try DevServerProcess()
        let made = try createUsers(server, [("count", .int(10_000)), ("prefix", .string("b")), ("sessionsPerUser", .int(1))])
        let json = try made.json()
        #expect(made.status == 201)
        #expect(json["users"]?.arrayValue?.count == 10_000 && json["sessions"]?.arrayValue?.count == 10_000)
        #expect(json["users"]?.arrayValue?.first == .string("b00001") && json["users"]?.arrayValue?.last == .string("b10000"))
        let ids = try server.dev("POST", "/__dev/users/bob/sessions", .object([("count", .int(10_000))]))
        #expect(try ids.json()["ids"]?.arrayValue?.count == 10_000)
    }

    @Test("a 429 fault carries Retry-After, and curl sees it")
    func faultWithRetryAfter() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice")
        let made = try createUsers(server, [("count", .int(1)), ("prefix", .string("r")), ("sessionsPerUser", .int(1))]).json()
        let session = try #require(made["sessions"]?.arrayValue?.first?["id"]?.stringValue)
        let fault = try server.dev(
            "POST", "/__dev/faults",
            .object([
                ("route", .string("DELETE /api/admin/users/*/sessions/*")), ("status", .int(429)),
                ("headers", .object([("Retry-After", .string("3")), ("X-Test", .string("a b\tc"))])), ("count", .int(2))
            ]))
        #expect(fault.status == 201)
        #expect(try fault.json()["fault"]?["headers"] == .object([("Retry-After", .string("3")), ("X-Test", .string("a b\tc"))]))
        for _ in 0..<2 {
            let r = try server.request("DELETE", "/api/admin/users/r0001/sessions/\(session)", token: alice.token)
            #expect(r.status == 429 && r.header("Retry-After") == "3" && r.header("X-Test") == "a b\tc")
        }
        let done = try server.request("DELETE", "/api/admin/users/r0001/sessions/\(session)", token: alice.token)
        #expect(done.status == 200 && done.header("Retry-After") == nil)
        #expect(try server.dev("GET", "/__dev/counters").json()["counters"]?["DELETE /api/admin/users/{uid}/sessions/{id}"]?.intValue == 3)
    }

    @Test("fault headers are checked: no CR/LF, token names, bounded")
    func faultHeaderValidation() throws {
        let server = try DevServerProcess()
        func fault(_ headers: JSON, status: Bool = true) throws -> HTTPResult {
            try server.dev(
                "POST", "/__dev/faults",
                .object([
                    ("route", .string("GET /api/me")), status ? ("status", .int(429)) : ("reset", .bool(true)),
                    ("headers", headers)
                ]))
        }
        let refused: [JSON] = [
            .object([("Retry-After", .string("3\r\nSet-Cookie: a=b"))]),
            .object([("Retry-After", .string("3\n"))]),
            .object([("Retry-After", .string("3\r"))]),
            .object([("Bad Name", .string("1"))]),
            .object([("X:Y", .string("1"))]),
            .object([("", .string("1"))]),
            .object([("X-Ü", .string("1"))]),
            .object([(String(repeating: "X", count: 65), .string("1"))]),
            .object([("X-Long", .string(String(repeating: "v", count: 1025)))]),
            .object([("X-Nul", .string("a\u{0}b"))]),
            .object([("X-Number", .int(3))]),
            .object([("Content-Length", .string("0"))]),
            .object([("transfer-encoding", .string("chunked"))]),
            .object([("Retry-After", .string("1")), ("retry-after", .string("2"))]),
            .object((0..<17).map { ("X-H\($0)", .string("1")) }),
            .array([.string("Retry-After: 3")])
        ]
        for headers in refused {
            let r = try fault(headers)
            #expect(r.status == 400 && r.errorCode == "INVALID_REQUEST", "\(headers.serialized()): \(r.status)")
        }
        #expect(try fault(.object([("Retry-After", .string("3"))]), status: false).status == 400)  // a reset sends no answer
        #expect(try fault(.object((0..<16).map { ("X-H\($0)", .string(String(repeating: "v", count: 1024))) })).status == 201)
        #expect(try server.dev("DELETE", "/__dev/faults").json()["cleared"]?.intValue == 1)  // refused faults were not installed
    }

    @Test("GET /__dev/revocations counts the DELETEs that reached each session")
    func revokeRequestsAreCountedPerSession() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice")
        let made = try createUsers(server, [("count", .int(20)), ("prefix", .string("v")), ("sessionsPerUser", .int(5))]).json()
        let sessions = (made["sessions"]?.arrayValue ?? []).map {
            ($0["user"]?.stringValue ?? "", $0["id"]?.stringValue ?? "", $0["token"]?.stringValue ?? "")
        }
        #expect(sessions.count == 100)
        // Every session once through the admin route, in parallel as sl-sessions does.
        let dir = TemporaryDirectory()
        try sessions.map { "\(server.baseURL)/api/admin/users/\($0.0)/sessions/\($0.1)" }.joined(separator: "\n")
            .write(toFile: dir.file("urls"), atomically: true, encoding: .utf8)
        let run = try Tools.shell(
            "xargs -P 16 -n 1 curl -s -o /dev/null -w '%{http_code}\\n' -X DELETE -H 'Authorization: Bearer \(alice.token)' < '\(dir.file("urls"))'"
        )
        #expect(run.stdoutText.split(separator: "\n").filter { $0 == "200" }.count == 100)

        let (user, id, _) = sessions[0]
        _ = try server.request("DELETE", "/api/admin/users/\(user)/sessions/\(id)", token: alice.token)  // already revoked: counted
        _ = try server.request("DELETE", "/api/admin/users/v0002/sessions/\(id)", token: alice.token)  // another user's: 404, not counted
        _ = try server.dev(
            "POST", "/__dev/faults",
            .object([("route", .string("DELETE /api/admin/users/*/sessions/*")), ("status", .int(503)), ("count", .int(1))]))
        _ = try server.request("DELETE", "/api/admin/users/\(user)/sessions/\(id)", token: alice.token)  // faulted: not counted
        let own = try server.login("v0003")
        #expect(try server.request("DELETE", "/api/sessions/\(own.sessionId)", token: own.token).status == 200)

        let counts = try #require(try server.dev("GET", "/__dev/revocations").json()["sessions"]?.objectValue)
        let byId = Dictionary(counts.map { ($0.0, $0.1.intValue ?? -1) }, uniquingKeysWith: { a, _ in a })
        #expect(byId[id] == 2 && byId[own.sessionId] == 1)
        #expect(sessions.dropFirst().allSatisfy { byId[$0.1] == 1 })
        #expect(byId[alice.sessionId] == 0)  // every session is listed, unrevoked ones with 0
        let counters = try server.dev("GET", "/__dev/counters").json()["counters"]
        #expect(counters?["DELETE /api/admin/users/{uid}/sessions/{id}"]?.intValue == 103)
        #expect(counters?["DELETE /api/sessions/{id}"]?.intValue == 1)

        let v0003 = try #require(try server.dev("GET", "/__dev/revocations?user=v0003").json()["sessions"]?.objectValue)
        #expect(v0003.count == 6 && v0003.allSatisfy { $0.1.intValue == 1 })
        _ = try server.dev("POST", "/__dev/reset")
        let afterReset = try #require(try server.dev("GET", "/__dev/revocations").json()["sessions"]?.objectValue)
        #expect(afterReset.allSatisfy { $0.1.intValue == 0 } && afterReset.count == 3)  // the seeded sessions
    }
}

/// A cursor as the server makes them (base64url of "u1:" and the last id), to start a page after an
/// id; the server treats cursors as opaque tokens of its own, this test knows their shape.
enum UserCursorForTests {
    static func after(_ id: String) -> String { Base64.encodeURL(Array(("u1:" + id).utf8)) }
}
