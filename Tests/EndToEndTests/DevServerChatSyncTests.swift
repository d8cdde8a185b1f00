import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// `GET /chat/v1/sync` paging (`limit`, the cursor, retention) and the bulk message fixture
/// `POST /__dev/conversations/{id}/messages` that feeds it.
@Suite struct DevServerChatSyncTests {
    func sync(_ server: DevServerProcess, _ token: String, since: String? = nil, limit: Int? = nil) throws -> HTTPResult {
        let query = [since.map { "since=\($0)" }, limit.map { "limit=\($0)" }].compactMap { $0 }.joined(separator: "&")
        return try server.request("GET", "/chat/v1/sync" + (query.isEmpty ? "" : "?" + query), token: token)
    }

    func bulk(_ server: DevServerProcess, _ conversation: String, _ body: JSON) throws -> HTTPResult {
        try server.dev("POST", "/__dev/conversations/\(conversation)/messages", body)
    }

    /// Every page from `since` until a short one: the events in order, and how many pages it took.
    func pages(_ server: DevServerProcess, _ token: String, since start: String, limit: Int) throws -> (events: [JSON], pages: Int) {
        var cursor = start, events: [JSON] = [], pages = 0
        while true {
            let page = try sync(server, token, since: cursor, limit: limit).json()
            let got = page["events"]?.arrayValue ?? []
            events += got
            pages += 1
            cursor = try #require(page["cursor"]?.stringValue)
            if got.count < limit { return (events, pages) }
            #expect(cursor == got.last?["cursor"]?.stringValue, "a full page resumes after its last event")
        }
    }

    @Test func syncLimitIsBoundedAndPages() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice"), bob = try server.login("bob")
        for limit in ["0", "1001", "-1", "abc", ""] {
            let bad = try server.request("GET", "/chat/v1/sync?limit=\(limit)", token: alice.token)
            #expect(bad.status == 400 && bad.errorCode == "INVALID_REQUEST", "limit=\(limit): \(bad.status)")
        }
        #expect(try sync(server, alice.token, limit: 1000).status == 200)
        #expect(try sync(server, alice.token, limit: 1).status == 200)
        let start = try #require(try sync(server, alice.token).json()["cursor"]?.stringValue)
        for i in 1...5 {
            _ = try server.request(
                "PUT", "/chat/v1/conversations/c_team/messages/p\(i)", token: bob.token,
                body: .json(.object([("text", .string("page \(i)"))])))
        }
        let (events, pages) = try pages(server, alice.token, since: start, limit: 2)
        #expect(pages == 3)
        #expect(events.compactMap { $0["message"]?["text"]?.stringValue } == (1...5).map { "page \($0)" })
        #expect(
            try sync(server, alice.token, since: start).json()["events"]?.arrayValue?.count == 5, "the default limit (100) takes all five")
    }

    @Test func bulkMessagesArePagedThroughBySync() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice"), carol = try server.login("carol")
        let start = try #require(try sync(server, carol.token).json()["cursor"]?.stringValue)
        let created = try bulk(server, "c_team", .object([("count", .int(2500)), ("sender", .string("bob")), ("text", .string("bulk"))]))
        #expect(created.status == 201)
        let result = try created.json()
        let first = try #require(result["firstSeq"]?.intValue), last = try #require(result["lastSeq"]?.intValue)
        #expect(result["created"]?.intValue == 2500 && last - first == 2499)

        let (events, pages) = try pages(server, carol.token, since: start, limit: 1000)
        #expect(pages == 3)
        let messages = events.compactMap { $0["message"] }
        #expect(messages.count == 2500 && events.allSatisfy { $0["type"]?.stringValue == "message" })
        #expect(messages.compactMap { $0["seq"]?.intValue } == Array(first...last))
        #expect(messages.first?["text"]?.stringValue == "bulk 1" && messages.last?["text"]?.stringValue == "bulk 2500")
        #expect(
            messages.allSatisfy { $0["conversationId"]?.stringValue == "c_team" && $0["senderId"]?.stringValue == "bob" && $0["id"] != nil }
        )
        #expect(Set(messages.compactMap { $0["clientId"]?.stringValue }).count == 2500)

        // They are real messages: history, unread counts and the sender's clientId lookup see them.
        let latest = try server.request("GET", "/chat/v1/conversations/c_team/messages?limit=1", token: alice.token).json()["messages"]?
            .arrayValue?.first
        #expect(latest == messages.last)
        let list = try server.request("GET", "/chat/v1/conversations", token: alice.token).json()["conversations"]?.arrayValue ?? []
        let team = list.first(where: { (item: JSON) in item["id"]?.stringValue == "c_team" })
        #expect(team?["unread"]?.intValue == 2501)
        let bob = try server.login("bob")
        let clientId = try #require(messages.last?["clientId"]?.stringValue)
        #expect(
            try server.request("GET", "/chat/v1/conversations/c_team/messages?clientId=\(clientId)", token: bob.token).json()["messages"]
                == .array([latest ?? .null]))

        let again = try bulk(server, "c_team", .object([("count", .int(3)), ("sender", .string("bob"))]))
        #expect(again.status == 201, "clientIds are new on every call")
        #expect(try again.json()["firstSeq"]?.intValue == last + 1)
        let tail = try sync(server, carol.token, since: String(events.last?["seq"]?.intValue ?? 0)).json()["events"]?.arrayValue ?? []
        #expect(tail.compactMap { $0["message"]?["text"]?.stringValue } == ["message 1", "message 2", "message 3"])
    }

    @Test func bulkMessagesRefuseBadRequests() throws {
        let server = try DevServerProcess()
        let cases: [(String, JSON, Int)] = [
            ("c_team", .object([("count", .int(0)), ("sender", .string("bob"))]), 400),
            ("c_team", .object([("count", .int(1_000_001)), ("sender", .string("bob"))]), 400),
            ("c_team", .object([("count", .int(1))]), 400),
            ("c_alice_bob", .object([("count", .int(1)), ("sender", .string("carol"))]), 400),
            ("c_team", .object([("count", .int(1)), ("sender", .string("bob")), ("text", .string(""))]), 400),
            ("nope", .object([("count", .int(1)), ("sender", .string("bob"))]), 404)
        ]
        for (conversation, body, status) in cases {
            let r = try bulk(server, conversation, body)
            #expect(r.status == status, "\(conversation) \(body.serialized()): \(r.status) \(r.text)")
        }
        let anonymous = try server.request(
            "POST", "/__dev/conversations/c_team/messages", body: .json(.object([("count", .int(1)), ("sender", .string("bob"))])))
        #expect(anonymous.status == 401 && anonymous.errorCode == "INVALID_DEV_TOKEN")
        let alice = try server.login("alice")
        #expect(try sync(server, alice.token).json()["events"] == .array([]), "nothing was created")
    }

    @Test func bulkBeyondTheRetentionExpiresAnOldCursor() throws {
        let server = try DevServerProcess(["--event-retention", "100"])
        let carol = try server.login("carol")
        let old = try #require(try sync(server, carol.token).json()["cursor"]?.stringValue)
        // A long poll waiting on the old cursor while the events are dropped hears of it too.
        nonisolated(unsafe) var waited: HTTPResult?
        let done = DispatchGroup()
        let asked = try server.requests("GET /chat/v1/sync")
        done.enter()
        Thread.detachNewThread {
            waited = try? server.request("GET", "/chat/v1/sync?since=\(old)&timeout=20", token: carol.token)
            done.leave()
        }
        #expect(try server.waitForRequests("GET /chat/v1/sync", atLeast: asked + 1), "the poll reached the server")
        #expect(try bulk(server, "c_team", .object([("count", .int(200)), ("sender", .string("bob"))])).status == 201)  // 600 events
        done.wait()
        #expect(waited?.status == 410 && waited?.errorCode == "CURSOR_EXPIRED", "\(waited?.status ?? 0) \(waited?.text ?? "")")
        let expired = try sync(server, carol.token, since: old)
        #expect(expired.status == 410 && expired.errorCode == "CURSOR_EXPIRED")

        let fresh = try sync(server, carol.token, limit: 1000).json()
        let kept = fresh["events"]?.arrayValue ?? []
        #expect(!kept.isEmpty && kept.count <= 100)
        #expect(kept.last?["message"]?["text"]?.stringValue == "message 200")
        #expect(try sync(server, carol.token, since: try #require(fresh["cursor"]?.stringValue)).status == 200)
    }

    @Test func aQuietUsersCursorDoesNotGoStale() throws {
        // Carol is not in c_alice_bob: its traffic fills the retention without giving her events, and the
        // cursor of her empty answers moves along with it, so syncing between sends never expires.
        let server = try DevServerProcess(["--event-retention", "4"])
        let alice = try server.login("alice"), carol = try server.login("carol")
        var cursor = try #require(try sync(server, carol.token).json()["cursor"]?.stringValue)
        for i in 1...6 {
            _ = try server.request(
                "PUT", "/chat/v1/conversations/c_alice_bob/messages/q\(i)", token: alice.token,
                body: .json(.object([("text", .string("q\(i)"))])))
            let answer = try sync(server, carol.token, since: cursor)
            #expect(answer.status == 200, "after send \(i): \(answer.status) \(answer.text)")
            #expect(try answer.json()["events"] == .array([]))
            cursor = try #require(try answer.json()["cursor"]?.stringValue)
        }
    }
}
