import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// The chat routes under /chat.
@Suite struct DevServerChatTests {
    func send(_ server: DevServerProcess, _ token: String, _ conversation: String, _ clientId: String, _ text: String) throws -> HTTPResult
    {
        try server.request(
            "PUT", "/chat/v1/conversations/\(conversation)/messages/\(clientId)", token: token,
            body: .json(.object([("text", .string(text))])))
    }

    @Test func conversationsFromTheSeed() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice")
        let list = try server.request("GET", "/chat/v1/conversations", token: alice.token).json()["conversations"]?.arrayValue ?? []
        #expect(list.compactMap { $0["id"]?.stringValue } == ["c_alice_bob", "c_team"])
        let direct = try #require(list.first)
        #expect(direct["kind"]?.stringValue == "direct")
        #expect(direct["members"] == .array([.string("alice"), .string("bob")]))
        #expect(direct["lastMessage"]?["text"]?.stringValue == "Hi Alice, welcome to Starline.")
        #expect(direct["unread"]?.intValue == 1)
        let carol = try server.login("carol")
        #expect(try server.request("GET", "/chat/v1/conversations", token: carol.token).json()["conversations"]?.arrayValue?.count == 1)
    }

    @Test func idempotentSendWithClientId() throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        let first = try send(server, bob.token, "c_team", "cid-1", "hello team")
        #expect(first.status == 201)
        let message = try first.json()
        #expect(message["clientId"]?.stringValue == "cid-1" && message["senderId"]?.stringValue == "bob")
        let repeated = try send(server, bob.token, "c_team", "cid-1", "hello team")
        #expect(repeated.status == 200)
        #expect(try repeated.json()["id"] == message["id"])
        let conflict = try send(server, bob.token, "c_team", "cid-1", "something else")
        #expect(conflict.status == 409 && conflict.errorCode == "CLIENT_ID_CONFLICT")
        let carol = try server.login("carol")
        #expect(try send(server, carol.token, "c_alice_bob", "x", "intruder").status == 404)
        #expect(try send(server, bob.token, "c_team", "bad%20id", "x").status == 400)
        #expect(
            try server.request("PUT", "/chat/v1/conversations/c_team/messages/cid-2", token: bob.token, body: .json(.object([]))).errorCode
                == "INVALID_REQUEST")
    }

    @Test func messagesPageBothWays() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice")
        for i in 1...10 { _ = try send(server, alice.token, "c_team", "m\(i)", "message \(i)") }
        let latest =
            try server.request("GET", "/chat/v1/conversations/c_team/messages?limit=3", token: alice.token).json()["messages"]?.arrayValue
            ?? []
        #expect(latest.compactMap { $0["text"]?.stringValue } == ["message 8", "message 9", "message 10"])
        let firstSeq = try #require(latest.first?["seq"]?.intValue)
        let older =
            try server.request("GET", "/chat/v1/conversations/c_team/messages?limit=2&before=\(firstSeq)", token: alice.token).json()[
                "messages"]?.arrayValue ?? []
        #expect(older.compactMap { $0["text"]?.stringValue } == ["message 6", "message 7"])
        let newer =
            try server.request("GET", "/chat/v1/conversations/c_team/messages?after=\(firstSeq)", token: alice.token).json()["messages"]?
            .arrayValue ?? []
        #expect(newer.compactMap { $0["text"]?.stringValue } == ["message 9", "message 10"])
        #expect(try server.request("GET", "/chat/v1/conversations/c_team/messages?limit=0", token: alice.token).status == 400)
        #expect(try server.request("GET", "/chat/v1/conversations/nope/messages", token: alice.token).status == 404)
    }

    func unread(_ server: DevServerProcess, _ token: String, _ conversation: String) throws -> Int64? {
        let list = try server.request("GET", "/chat/v1/conversations", token: token).json()["conversations"]?.arrayValue ?? []
        let entry = list.first(where: { (item: JSON) in item["id"]?.stringValue == conversation })
        return entry?["unread"]?.intValue
    }

    func markRead(_ server: DevServerProcess, _ token: String, _ conversation: String, _ upTo: String) throws -> HTTPResult {
        try server.request(
            "POST", "/chat/v1/conversations/\(conversation)/read", token: token, body: .json(.object([("upTo", .string(upTo))])))
    }

    @Test func readingMessagesMarksNothingRead() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice")
        #expect(try unread(server, alice.token, "c_alice_bob") == 1)
        #expect(try server.request("GET", "/chat/v1/conversations/c_alice_bob/messages", token: alice.token).status == 200)
        #expect(try server.request("GET", "/chat/v1/conversations/c_alice_bob/messages?after=0&limit=1", token: alice.token).status == 200)
        #expect(try unread(server, alice.token, "c_alice_bob") == 1)
    }

    @Test func theReadMarkMovesForwardOnly() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice"), bob = try server.login("bob")
        let seeded =
            try server.request("GET", "/chat/v1/conversations/c_alice_bob/messages", token: alice.token).json()["messages"]?.arrayValue
            ?? []
        let m1 = try send(server, bob.token, "c_alice_bob", "r1", "one").json(),
            m2 = try send(server, bob.token, "c_alice_bob", "r2", "two").json()
        #expect(try unread(server, alice.token, "c_alice_bob") == 3)
        let start = try #require(try server.request("GET", "/chat/v1/sync", token: alice.token).json()["cursor"]?.stringValue)

        let read = try markRead(server, alice.token, "c_alice_bob", try #require(m1["id"]?.stringValue))
        #expect(read.status == 200)
        #expect(
            try read.json()
                == .object([("conversationId", .string("c_alice_bob")), ("lastReadSeq", m1["seq"] ?? .null), ("unread", .int(1))]))
        #expect(try unread(server, alice.token, "c_alice_bob") == 1)
        #expect(try unread(server, bob.token, "c_alice_bob") == 1, "bob's own mark is his")

        // Alice's other devices hear of it; bob does not.
        let events = try server.request("GET", "/chat/v1/sync?since=\(start)", token: alice.token).json()
        #expect(events["events"]?.arrayValue?.map { $0["type"]?.stringValue } == ["read"])
        let mark = try read.json()
        #expect(events["events"]?.arrayValue?.first?["read"] == mark)
        let after = try #require(events["cursor"]?.stringValue)
        let bobEvents = try server.request("GET", "/chat/v1/sync", token: bob.token).json()["events"]?.arrayValue ?? []
        #expect(!bobEvents.contains { $0["type"]?.stringValue == "read" })

        // An older message leaves the mark, and publishes nothing.
        let back = try markRead(server, alice.token, "c_alice_bob", try #require(seeded.first?["id"]?.stringValue))
        #expect(back.status == 200)
        #expect(try back.json() == read.json(), "the mark stayed at m1")
        #expect(try server.request("GET", "/chat/v1/sync?since=\(after)", token: alice.token).json()["events"] == .array([]))
        #expect(try markRead(server, alice.token, "c_alice_bob", try #require(m2["id"]?.stringValue)).json()["unread"]?.intValue == 0)
        #expect(try unread(server, alice.token, "c_alice_bob") == 0)
    }

    @Test func readRefusesUnknownConversationsNonMembersAndForeignMessages() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice"), carol = try server.login("carol")
        let team = try #require(
            try server.request("GET", "/chat/v1/conversations/c_team/messages", token: alice.token).json()["messages"]?.arrayValue?.first?[
                "id"]?.stringValue)
        let direct = try #require(
            try server.request("GET", "/chat/v1/conversations/c_alice_bob/messages", token: alice.token).json()["messages"]?.arrayValue?
                .first?["id"]?.stringValue)
        #expect(try markRead(server, alice.token, "nope", direct).status == 404)
        #expect(try markRead(server, carol.token, "c_alice_bob", direct).status == 404)
        let foreign = try markRead(server, alice.token, "c_alice_bob", team)
        #expect(foreign.status == 400 && foreign.errorCode == "INVALID_REQUEST")
        #expect(try markRead(server, alice.token, "c_alice_bob", "msg_unknown").errorCode == "INVALID_REQUEST")
        #expect(
            try server.request("POST", "/chat/v1/conversations/c_alice_bob/read", token: alice.token, body: .json(.object([]))).errorCode
                == "INVALID_REQUEST")
        #expect(try unread(server, alice.token, "c_alice_bob") == 1)
    }

    @Test func aSendIsSettledByLookingUpItsClientId() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice"), bob = try server.login("bob"), carol = try server.login("carol")
        let lookup = { (token: String, query: String) in
            try server.request("GET", "/chat/v1/conversations/c_team/messages?\(query)", token: token)
        }
        let sent = try send(server, bob.token, "c_team", "settle-1", "did this arrive?").json()
        let found = try lookup(bob.token, "clientId=settle-1").json()["messages"]?.arrayValue ?? []
        #expect(found == [sent])
        #expect(try lookup(alice.token, "clientId=settle-1").json()["messages"] == .array([]), "only the caller's own messages")
        let hers = try send(server, alice.token, "c_team", "settle-1", "mine").json()
        #expect(try lookup(alice.token, "clientId=settle-1").json()["messages"] == .array([hers]))
        #expect(try lookup(bob.token, "clientId=settle-1&limit=5").json()["messages"] == .array([sent]))
        #expect(try lookup(bob.token, "clientId=never-sent").json()["messages"] == .array([]))
        for query in ["clientId=settle-1&before=100", "clientId=settle-1&after=0", "clientId=bad%20id", "clientId="] {
            let bad = try lookup(bob.token, query)
            #expect(bad.status == 400 && bad.errorCode == "INVALID_REQUEST", "\(query): \(bad.status)")
        }
        #expect(
            try server.request("GET", "/chat/v1/conversations/c_alice_bob/messages?clientId=settle-1", token: carol.token).status == 404)
    }

    @Test func syncLongPollIsWokenByASend() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice"), bob = try server.login("bob")
        let initial = try server.request("GET", "/chat/v1/sync", token: bob.token).json()
        let cursor = try #require(initial["cursor"]?.stringValue)
        let waiting = DispatchGroup()
        nonisolated(unsafe) var polled: HTTPResult?
        let asked = try server.requests("GET /chat/v1/sync")
        waiting.enter()
        Thread.detachNewThread {
            polled = try? server.request("GET", "/chat/v1/sync?since=\(cursor)&timeout=20", token: bob.token)
            waiting.leave()
        }
        #expect(try server.waitForRequests("GET /chat/v1/sync", atLeast: asked + 1), "the poll reached the server")
        _ = try send(server, alice.token, "c_alice_bob", "wake", "wake up")
        waiting.wait()
        let events = try #require(polled).json()["events"]?.arrayValue ?? []
        #expect(events.count == 1)
        #expect(events.first?["type"]?.stringValue == "message")
        #expect(events.first?["message"]?["text"]?.stringValue == "wake up")
        let empty = try server.request(
            "GET", "/chat/v1/sync?since=\(events.first?["cursor"]?.stringValue ?? "")&timeout=1", token: bob.token
        ).json()
        #expect(empty["events"] == .array([]))
        #expect(try server.request("GET", "/chat/v1/sync?since=abc", token: bob.token).errorCode == "INVALID_CURSOR")
        #expect(try server.request("GET", "/chat/v1/sync?timeout=99", token: bob.token).status == 400)
    }

    /// The cursor is the client's number; at Int64.max it used to overflow the server's
    /// "events were dropped" check (`since + 1`) and kill it.
    @Test func syncCursorAtTheEndOfInt64() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice"), bob = try server.login("bob")
        _ = try send(server, alice.token, "c_alice_bob", "edge", "an event, so the oldest one exists")
        // Beyond every sequence number the server issued: a cursor of a state that is gone (410, a gap).
        let edge = try server.request("GET", "/chat/v1/sync?since=9223372036854775807", token: bob.token)
        #expect(edge.status == 410 && edge.curlExit == 0, "\(edge.status) \(edge.text)")
        #expect(edge.errorCode == "CURSOR_EXPIRED")
        #expect(try server.request("GET", "/chat/v1/sync?since=9223372036854775808", token: bob.token).errorCode == "INVALID_CURSOR")
        #expect(try server.request("GET", "/chat/v1/sync", token: bob.token).status == 200, "the server is still there")
    }

    @Test func friendLinksAreSingleUseAndExpire() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice"), carol = try server.login("carol"), bob = try server.login("bob")
        let link = try server.request("POST", "/chat/v1/friend-links", token: alice.token, body: .json(.object([])))
        #expect(link.status == 201)
        let code = try #require(try link.json()["code"]?.stringValue)
        #expect(try link.json()["url"]?.stringValue == server.chatBase + "/f/" + code)
        let info = try server.request("GET", "/chat/f/\(code)").json()
        #expect(info["inviter"]?["id"]?.stringValue == "alice" && info["redeemed"] == .bool(false))
        #expect(try server.request("POST", "/chat/v1/friend-links/\(code)/redeem", token: alice.token).errorCode == "OWN_LINK")
        let redeemed = try server.request("POST", "/chat/v1/friend-links/\(code)/redeem", token: carol.token)
        #expect(redeemed.status == 200)
        let conversation = try #require(try redeemed.json()["conversationId"]?.stringValue)
        #expect(try redeemed.json()["friend"]?["id"]?.stringValue == "alice")
        #expect(try redeemed.json()["alreadyFriends"] == .bool(false))
        // Redeemed again by the friend it made (a retry whose answer was lost): the same answer, nothing changed.
        let again = try server.request("POST", "/chat/v1/friend-links/\(code)/redeem", token: carol.token)
        let againFriends = (try? again.json())?["alreadyFriends"]
        #expect(again.status == 200 && againFriends == .bool(true), "\(again.text)")
        #expect(try again.json()["conversationId"]?.stringValue == conversation)
        // Someone who is not a friend of alice's finds it used.
        let users = try server.dev("POST", "/__dev/users", .object([("count", .int(1)), ("prefix", .string("dave"))])).json()
        let dave = try server.login(try #require(users["users"]?.arrayValue?.first?.stringValue))
        let used = try server.request("POST", "/chat/v1/friend-links/\(code)/redeem", token: dave.token)
        #expect(used.status == 410 && used.errorCode == "LINK_USED")
        // bob is alice's friend already (the seeded direct conversation): her new link stays unused for someone else.
        let fresh = try #require(
            try server.request("POST", "/chat/v1/friend-links", token: alice.token, body: .json(.object([]))).json()["code"]?.stringValue)
        let known = try server.request("POST", "/chat/v1/friend-links/\(fresh)/redeem", token: bob.token)
        let knownFriends = (try? known.json())?["alreadyFriends"]
        #expect(known.status == 200 && knownFriends == .bool(true), "\(known.text)")
        #expect(try server.request("GET", "/chat/f/\(fresh)").json()["redeemed"] == .bool(false))
        let friends = try server.request("GET", "/chat/v1/friends", token: carol.token).json()["friends"]?.arrayValue ?? []
        #expect(friends.first?["id"]?.stringValue == "alice" && friends.first?["conversationId"]?.stringValue == conversation)
        #expect(try server.request("POST", "/chat/v1/friend-links/unknown-code/redeem", token: bob.token).status == 404)
        let short = try server.request("POST", "/chat/v1/friend-links", token: alice.token, body: .json(.object([("ttlSeconds", .int(1))])))
            .json()
        try server.advanceClock(2)
        let expired = try server.request("POST", "/chat/v1/friend-links/\(short["code"]?.stringValue ?? "")/redeem", token: dave.token)
        #expect(expired.status == 410 && expired.errorCode == "LINK_EXPIRED")
    }

    @Test func momentsAreIdempotentByClientId() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice"), bob = try server.login("bob")
        let put = { (token: String, id: String, text: String) in
            try server.request("PUT", "/chat/v1/moments/\(id)", token: token, body: .json(.object([("text", .string(text))])))
        }
        #expect(try put(alice.token, "m1", "first").status == 201)
        #expect(try put(alice.token, "m1", "first").status == 200)
        #expect(try put(alice.token, "m1", "changed").status == 409)
        #expect(try put(bob.token, "m1", "bob's own m1").status == 201)
        let feed = try server.request("GET", "/chat/v1/moments", token: bob.token).json()["moments"]?.arrayValue ?? []
        #expect(feed.compactMap { $0["text"]?.stringValue } == ["bob's own m1", "first"])
        let older =
            try server.request("GET", "/chat/v1/moments?before=\(feed.first?["id"]?.stringValue ?? "")", token: bob.token).json()[
                "moments"]?.arrayValue ?? []
        #expect(older.compactMap { $0["text"]?.stringValue } == ["first"])
    }

    @Test(
        """
        a path parameter that starts with a combining mark or emoji modifier reaches its route (400, not 404; found \
        by schemathesis)
        """)
    func pathParameterWithExtendingScalar() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice")
        // U+1F3FB EMOJI MODIFIER FITZPATRICK TYPE-1-2 and U+0301 COMBINING ACUTE: each forms one Character with
        // the "/". The route is found, and its clientId check answers.
        for id in ["%F0%9F%8F%BB", "%CC%81x"] {
            let put = try server.request(
                "PUT", "/chat/v1/moments/\(id)", token: alice.token, body: .json(.object([("text", .string("hi"))])))
            #expect(put.status == 400 && put.errorCode == "INVALID_REQUEST", "\(id): \(put.status) \(put.text)")
        }
        let fault = try server.dev(
            "POST", "/__dev/faults", .object([("route", .string("PUT /chat/v1/moments/*")), ("status", .int(503)), ("count", .int(1))]))
        #expect((200..<300).contains(fault.status))
        #expect(
            try server.request("PUT", "/chat/v1/moments/%F0%9F%8F%BB", token: alice.token, body: .json(.object([("text", .string("hi"))])))
                .status == 503,
            "a wildcard fault matches the same segment")
    }

    @Test func chatNeedsAWorkbenchSession() throws {
        let server = try DevServerProcess()
        let game = try server.login("bob", app: "com.example.game")
        let r = try server.request("GET", "/chat/v1/conversations", token: game.token)
        #expect(r.status == 403 && r.errorCode == "FORBIDDEN")
        #expect(try server.request("GET", "/chat/v1/conversations").errorCode == "INVALID_TOKEN")
    }
}
