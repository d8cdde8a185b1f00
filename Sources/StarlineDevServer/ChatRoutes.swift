import StarlineCore
import StarlineSQLite
import StarlineCrypto

/// The chat service, mounted under /chat: conversations, friends and friend links, moments; messages,
/// read marks and the long-poll sync are in ChatRoutes+Messages. Sessions of the app `workbench` only.
enum ChatRoutes {
    static var routes: [Route] {
        [
            Route("GET", "/chat/v1/conversations", .chat, conversations),
            Route("GET", "/chat/v1/conversations/{id}/messages", .chat, messages),
            Route("PUT", "/chat/v1/conversations/{id}/messages/{clientId}", .chat, putMessage),
            Route("POST", "/chat/v1/conversations/{id}/read", .chat, markRead),
            Route("GET", "/chat/v1/sync", .chat, longPoll: sync),
            Route("GET", "/chat/v1/friends", .chat, friends),
            Route("POST", "/chat/v1/friend-links", .chat, createFriendLink),
            Route("POST", "/chat/v1/friend-links/{code}/redeem", .chat, redeemFriendLink),
            Route("GET", "/chat/f/{code}", .open, friendLinkInfo),
            Route("GET", "/chat/v1/moments", .chat, moments),
            Route("PUT", "/chat/v1/moments/{clientId}", .chat, putMoment)
        ]
    }

    static func messageJSON(_ row: SQLiteRow) -> JSON {
        messageJSON(
            id: row.string("id") ?? "", clientId: row.string("client_id") ?? "", conversation: row.string("conversation_id") ?? "",
            sender: row.string("sender_id") ?? "", text: row.string("text") ?? "", createdAt: row.int64("created_at") ?? 0,
            seq: row.int64("seq") ?? 0)
    }

    /// The one Message shape: answers, `message` events, and the bulk fixture (which builds it without reading the row back).
    static func messageJSON(id: String, clientId: String, conversation: String, sender: String, text: String, createdAt: Int64, seq: Int64)
        -> JSON
    {
        .object([
            ("id", .string(id)), ("clientId", .string(clientId)), ("conversationId", .string(conversation)), ("senderId", .string(sender)),
            ("text", .string(text)), ("createdAt", .string(Timestamp.rfc3339String(createdAt))), ("seq", .int(Int(seq)))
        ])
    }

    static func momentJSON(_ row: SQLiteRow) -> JSON {
        .object([
            ("id", .optional(row.string("id"))), ("clientId", .optional(row.string("client_id"))),
            ("authorId", .optional(row.string("author_id"))), ("text", .optional(row.string("text"))),
            ("createdAt", .string(Timestamp.rfc3339String(row.int64("created_at") ?? 0)))
        ])
    }

    static func isMember(_ c: RouteContext, _ conversation: String) throws -> Bool {
        try c.db.queryFirst("SELECT 1 AS x FROM members WHERE conversation_id = ? AND user_id = ?", [.text(conversation), .text(c.user)])
            != nil
    }

    static func conversations(_ c: RouteContext) throws -> HTTPResponse {
        let rows = try c.db.query(
            """
            SELECT c.id, c.kind, c.title, m.last_read_seq FROM conversations c JOIN members m ON m.conversation_id = c.id
            WHERE m.user_id = ? ORDER BY c.id
            """, [.text(c.user)])
        var list: [JSON] = []
        for row in rows {
            let id = row.string("id") ?? ""
            let members = try c.db.query("SELECT user_id FROM members WHERE conversation_id = ? ORDER BY user_id", [.text(id)]).compactMap {
                $0.string("user_id")
            }
            let last = try c.db.queryFirst("SELECT * FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1", [.text(id)])
            let unread = try unreadCount(c, id, after: row.int64("last_read_seq") ?? 0)
            list.append(
                .object([
                    ("id", .string(id)), ("kind", .optional(row.string("kind"))), ("title", .optional(row.string("title"))),
                    ("members", .array(members.map(JSON.string))), ("lastMessage", last.map(messageJSON) ?? .null), ("unread", .int(unread))
                ]))
        }
        return .json(200, .object([("conversations", .array(list))]))
    }

    /// Messages of others after the caller's read mark (their own never count).
    static func unreadCount(_ c: RouteContext, _ conversation: String, after lastRead: Int64) throws -> Int {
        try c.db.queryFirst(
            "SELECT count(*) AS n FROM messages WHERE conversation_id = ? AND seq > ? AND sender_id != ?",
            [.text(conversation), .integer(lastRead), .text(c.user)])?.int("n") ?? 0
    }

    static func intQuery(_ c: RouteContext, _ name: String, _ range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = c.request.queryValue(name) else { return nil }
        guard let v = Int64(text), range.contains(v) else {
            throw APIError.invalidRequest("'\(name)' must be an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }

    static func friendJSON(_ c: RouteContext, _ friend: String, conversation: String) throws -> JSON {
        var user = try c.store.userJSON(friend) ?? .object([("id", .string(friend))])
        user.set("conversationId", .string(conversation))
        return user
    }

    static func friends(_ c: RouteContext) throws -> HTTPResponse {
        let rows = try c.db.query("SELECT friend_id, conversation_id FROM friends WHERE user_id = ? ORDER BY friend_id", [.text(c.user)])
        return .json(
            200,
            .object([
                (
                    "friends",
                    .array(
                        try rows.map { try friendJSON(c, $0.string("friend_id") ?? "", conversation: $0.string("conversation_id") ?? "") })
                )
            ]))
    }

    static func createFriendLink(_ c: RouteContext) throws -> HTTPResponse {
        let body = try c.jsonBody()
        var ttl: Int64 = 7 * 86400
        if let requested = body["ttlSeconds"] {
            guard let v = requested.intValue, (1...(30 * 86400)).contains(v) else {
                throw APIError.invalidRequest("'ttlSeconds' must be 1...2592000")
            }
            ttl = v
        }
        let code = Base64.encodeURL(Sodium.randomBytes(12))
        let expires = c.server.clock.now().seconds + ttl
        try c.db.run("INSERT INTO friend_links(code, user_id, expires_at) VALUES(?,?,?)", [.text(code), .text(c.user), .integer(expires)])
        return .json(
            201,
            .object([
                ("code", .string(code)), ("url", .string(c.server.chatBase + "/f/" + code)),
                ("expiresAt", .string(Timestamp.rfc3339String(expires)))
            ]))
    }

    static func redeemFriendLink(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let code = c.parameter("code")
        guard let link = try c.db.queryFirst("SELECT * FROM friend_links WHERE code = ?", [.text(code)]) else {
            throw APIError.notFound("friend link")
        }
        let inviter = link.string("user_id") ?? ""
        guard inviter != c.user else { throw APIError(400, "OWN_LINK", "this is your own friend link") }
        // A friend's link redeemed again (a retry whose answer was lost, a second scan) changes nothing and says so;
        // the link stays as it is (unused, it can still bring someone else).
        if let existing = try c.db.queryFirst(
            "SELECT conversation_id FROM friends WHERE user_id = ? AND friend_id = ?", [.text(c.user), .text(inviter)])
        {
            let conversation = existing.string("conversation_id") ?? ""
            return .json(
                200,
                .object([
                    ("friend", try friendJSON(c, inviter, conversation: conversation)), ("conversationId", .string(conversation)),
                    ("alreadyFriends", .bool(true))
                ]))
        }
        guard link.isNull("redeemed_by") else { throw APIError(410, "LINK_USED", "the friend link was already used") }
        guard (link.int64("expires_at") ?? 0) > c.server.clock.now().seconds else {
            throw APIError(410, "LINK_EXPIRED", "the friend link expired")
        }
        let now = c.server.clock.now().seconds
        try c.db.run("UPDATE friend_links SET redeemed_by = ?, redeemed_at = ? WHERE code = ?", [.text(c.user), .integer(now), .text(code)])
        let conversation = DevServerStore.identifier("c")
        let names = [inviter, c.user].sorted()
        try c.db.run(
            "INSERT INTO conversations(id, kind, title) VALUES(?, 'direct', ?)",
            [.text(conversation), .text(names.joined(separator: " & "))])
        for (a, b) in [(inviter, c.user), (c.user, inviter)] {
            try c.db.run("INSERT INTO members(conversation_id, user_id) VALUES(?,?)", [.text(conversation), .text(a)])
            try c.db.run(
                "INSERT INTO friends(user_id, friend_id, conversation_id, created_at) VALUES(?,?,?,?)",
                [.text(a), .text(b), .text(conversation), .integer(now)])
        }
        try publish(c, &state, to: [inviter], type: "friend", payload: try friendJSON(c, c.user, conversation: conversation))
        try publish(c, &state, to: [c.user], type: "friend", payload: try friendJSON(c, inviter, conversation: conversation))
        return .json(
            200,
            .object([
                ("friend", try friendJSON(c, inviter, conversation: conversation)), ("conversationId", .string(conversation)),
                ("alreadyFriends", .bool(false))
            ]))
    }

    static func friendLinkInfo(_ c: RouteContext) throws -> HTTPResponse {
        let code = c.parameter("code")
        guard let link = try c.db.queryFirst("SELECT * FROM friend_links WHERE code = ?", [.text(code)]) else {
            throw APIError.notFound("friend link")
        }
        return .json(
            200,
            .object([
                ("code", .string(code)), ("inviter", try c.store.userJSON(link.string("user_id") ?? "") ?? .null),
                ("expiresAt", .string(Timestamp.rfc3339String(link.int64("expires_at") ?? 0))),
                ("redeemed", .bool(!link.isNull("redeemed_by")))
            ]))
    }

    static func moments(_ c: RouteContext) throws -> HTTPResponse {
        let limit = try intQuery(c, "limit", 1...200) ?? 50
        var beforeSeq = Int64.max
        if let before = c.request.queryValue("before") {
            guard let row = try c.db.queryFirst("SELECT seq FROM moments WHERE id = ?", [.text(before)]) else {
                throw APIError.invalidRequest("unknown moment id in 'before'")
            }
            beforeSeq = row.int64("seq") ?? 0
        }
        let rows = try c.db.query(
            """
            SELECT * FROM moments WHERE seq < ? AND (author_id = ? OR author_id IN (SELECT friend_id FROM friends WHERE user_id = ?))
            ORDER BY seq DESC LIMIT ?
            """, [.integer(beforeSeq), .text(c.user), .text(c.user), .integer(limit)])
        return .json(200, .object([("moments", .array(rows.map(momentJSON)))]))
    }

    static func putMoment(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let clientId = c.parameter("clientId")
        guard validClientId(clientId) else { throw APIError.invalidRequest("clientId must be 1-128 characters from A-Z a-z 0-9 . _ -") }
        let text = try c.string(try c.jsonBody(), "text")
        if let existing = try c.db.queryFirst(
            "SELECT * FROM moments WHERE author_id = ? AND client_id = ?", [.text(c.user), .text(clientId)])
        {
            guard existing.string("text") == text else {
                throw APIError(409, "CLIENT_ID_CONFLICT", "clientId \(clientId) was already used for another moment")
            }
            return .json(200, momentJSON(existing))
        }
        try c.db.run(
            "INSERT INTO moments(id, client_id, author_id, text, created_at) VALUES(?,?,?,?,?)",
            [.text(DevServerStore.identifier("mom")), .text(clientId), .text(c.user), .text(text), .integer(c.server.clock.now().seconds)])
        guard let row = try c.db.queryFirst("SELECT * FROM moments WHERE seq = ?", [.integer(c.db.lastInsertRowID)]) else {
            throw APIError(500, "INTERNAL", "moment vanished")
        }
        let moment = momentJSON(row)
        let audience =
            [c.user]
            + (try c.db.query("SELECT friend_id FROM friends WHERE user_id = ?", [.text(c.user)]).compactMap { $0.string("friend_id") })
        try publish(c, &state, to: audience, type: "moment", payload: moment)
        return .json(201, moment)
    }
}
