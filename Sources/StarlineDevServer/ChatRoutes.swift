import StarlineCore
import StarlineSQLite
import StarlineCrypto

/// The chat service, mounted under /chat: conversations, idempotent messages, long-poll sync,
/// friends and friend links, moments. Sessions of the app `workbench` only.
enum ChatRoutes {
    static var routes: [Route] {
        [
            Route("GET", "/chat/v1/conversations", .chat, conversations),
            Route("GET", "/chat/v1/conversations/{id}/messages", .chat, messages),
            Route("PUT", "/chat/v1/conversations/{id}/messages/{clientId}", .chat, putMessage),
            Route("GET", "/chat/v1/sync", .chat, longPoll: sync),
            Route("GET", "/chat/v1/friends", .chat, friends),
            Route("POST", "/chat/v1/friend-links", .chat, createFriendLink),
            Route("POST", "/chat/v1/friend-links/{code}/redeem", .chat, redeemFriendLink),
            Route("GET", "/chat/f/{code}", .open, friendLinkInfo),
            Route("GET", "/chat/v1/moments", .chat, moments),
            Route("PUT", "/chat/v1/moments/{clientId}", .chat, putMoment),
        ]
    }

    static func messageJSON(_ row: SQLiteRow) -> JSON {
        .object([
            ("id", .optional(row.string("id"))), ("clientId", .optional(row.string("client_id"))),
            ("conversationId", .optional(row.string("conversation_id"))), ("senderId", .optional(row.string("sender_id"))),
            ("text", .optional(row.string("text"))), ("createdAt", .string(Timestamp.rfc3339String(row.int64("created_at") ?? 0))),
            ("seq", .int(Int(row.int64("seq") ?? 0))),
        ])
    }

    static func momentJSON(_ row: SQLiteRow) -> JSON {
        .object([
            ("id", .optional(row.string("id"))), ("clientId", .optional(row.string("client_id"))),
            ("authorId", .optional(row.string("author_id"))), ("text", .optional(row.string("text"))),
            ("createdAt", .string(Timestamp.rfc3339String(row.int64("created_at") ?? 0))),
        ])
    }

    static func isMember(_ c: RouteContext, _ conversation: String) throws -> Bool {
        try c.db.queryFirst("SELECT 1 AS x FROM members WHERE conversation_id = ? AND user_id = ?", [.text(conversation), .text(c.user)]) != nil
    }

    /// Records an event for each user (read by /v1/sync); the request wakes the long polls when it ends.
    static func publish(_ c: RouteContext, _ state: inout DevServerState, to users: [String], type: String, payload: JSON) throws {
        for user in users {
            try c.db.run("INSERT INTO events(user_id, type, payload) VALUES(?,?,?)", [.text(user), .text(type), .text(payload.serialized())])
        }
        try c.db.run("DELETE FROM events WHERE seq <= (SELECT max(seq) FROM events) - ?", [.integer(Int64(c.server.configuration.eventRetention))])
        state.eventsPublished = true
    }

    static func conversations(_ c: RouteContext) throws -> HTTPResponse {
        let rows = try c.db.query("""
            SELECT c.id, c.kind, c.title, m.last_read_seq FROM conversations c JOIN members m ON m.conversation_id = c.id
            WHERE m.user_id = ? ORDER BY c.id
            """, [.text(c.user)])
        var list: [JSON] = []
        for row in rows {
            let id = row.string("id") ?? ""
            let members = try c.db.query("SELECT user_id FROM members WHERE conversation_id = ? ORDER BY user_id", [.text(id)]).compactMap { $0.string("user_id") }
            let last = try c.db.queryFirst("SELECT * FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1", [.text(id)])
            let unread = try c.db.queryFirst("SELECT count(*) AS n FROM messages WHERE conversation_id = ? AND seq > ? AND sender_id != ?",
                                             [.text(id), .integer(row.int64("last_read_seq") ?? 0), .text(c.user)])?.int("n") ?? 0
            list.append(.object([
                ("id", .string(id)), ("kind", .optional(row.string("kind"))), ("title", .optional(row.string("title"))),
                ("members", .array(members.map(JSON.string))), ("lastMessage", last.map(messageJSON) ?? .null), ("unread", .int(unread)),
            ]))
        }
        return .json(200, .object([("conversations", .array(list))]))
    }

    static func intQuery(_ c: RouteContext, _ name: String, _ range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = c.request.queryValue(name) else { return nil }
        guard let v = Int64(text), range.contains(v) else {
            throw APIError.invalidRequest("'\(name)' must be an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }

    static func messages(_ c: RouteContext) throws -> HTTPResponse {
        let id = c.parameter("id")
        guard try isMember(c, id) else { throw APIError.notFound("conversation \(id)") }
        let limit = try intQuery(c, "limit", 1...200) ?? 50
        let before = try intQuery(c, "before", 0...Int64.max), after = try intQuery(c, "after", 0...Int64.max)
        var rows: [SQLiteRow]
        if let after {
            rows = try c.db.query("SELECT * FROM messages WHERE conversation_id = ? AND seq > ? AND seq < ? ORDER BY seq LIMIT ?",
                                  [.text(id), .integer(after), .integer(before ?? Int64.max), .integer(limit)])
        } else {
            rows = try c.db.query("SELECT * FROM messages WHERE conversation_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                                  [.text(id), .integer(before ?? Int64.max), .integer(limit)])
            rows.reverse()
        }
        if let newest = rows.last?.int64("seq") {
            try c.db.run("UPDATE members SET last_read_seq = max(last_read_seq, ?) WHERE conversation_id = ? AND user_id = ?",
                         [.integer(newest), .text(id), .text(c.user)])
        }
        return .json(200, .object([("messages", .array(rows.map(messageJSON)))]))
    }

    static func validClientId(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count) && id.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F || b == 0x2E
        }
    }

    static func putMessage(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let id = c.parameter("id"), clientId = c.parameter("clientId")
        guard validClientId(clientId) else { throw APIError.invalidRequest("clientId must be 1-128 characters from A-Z a-z 0-9 . _ -") }
        let text = try c.string(try c.jsonBody(), "text")
        guard try isMember(c, id) else { throw APIError.notFound("conversation \(id)") }
        if let existing = try c.db.queryFirst("SELECT * FROM messages WHERE conversation_id = ? AND sender_id = ? AND client_id = ?",
                                              [.text(id), .text(c.user), .text(clientId)]) {
            guard existing.string("text") == text else {
                throw APIError(409, "CLIENT_ID_CONFLICT", "clientId \(clientId) was already used for another message")
            }
            return .json(200, messageJSON(existing))
        }
        try c.db.run("INSERT INTO messages(id, client_id, conversation_id, sender_id, text, created_at) VALUES(?,?,?,?,?,?)",
                     [.text(DevServerStore.identifier("msg")), .text(clientId), .text(id), .text(c.user), .text(text), .integer(Timestamp.now().seconds)])
        guard let row = try c.db.queryFirst("SELECT * FROM messages WHERE seq = ?", [.integer(c.db.lastInsertRowID)]) else {
            throw APIError(500, "INTERNAL", "message vanished")
        }
        let message = messageJSON(row)
        let members = try c.db.query("SELECT user_id FROM members WHERE conversation_id = ?", [.text(id)]).compactMap { $0.string("user_id") }
        try publish(c, &state, to: members, type: "message", payload: message)
        return .json(201, message)
    }

    /// Events after the cursor; with `timeout`, waits up to that many seconds for the first one.
    static func sync(_ c: RouteContext) throws -> LongPoll {
        var since: Int64 = 0
        if let cursor = c.request.queryValue("since"), !cursor.isEmpty {
            guard let v = Int64(cursor), v >= 0 else { throw APIError(400, "INVALID_CURSOR", "the cursor is not one this server issued") }
            since = v
            // Sequence numbers start at 1 and only pruning removes rows (a reset restarts them), so a
            // gap between the cursor and the oldest kept event means events were dropped. (`oldest - 1`, not
            // `since + 1`: the cursor is the client's, up to Int64.max; sequence numbers are ours.)
            if let oldest = try c.db.queryFirst("SELECT min(seq) AS s FROM events")?.int64("s"), since < oldest - 1 {
                throw APIError(410, "CURSOR_EXPIRED", "events after this cursor were dropped (the server keeps the newest \(c.server.configuration.eventRetention)); read the history again and sync without 'since'")
            }
        }
        let timeout = try intQuery(c, "timeout", 0...30) ?? 0
        return LongPoll(deadline: MonotonicClock.nanoseconds() + UInt64(timeout) * 1_000_000_000) {
            let rows = try c.db.query("SELECT * FROM events WHERE user_id = ? AND seq > ? ORDER BY seq LIMIT 100", [.text(c.user), .integer(since)])
            let events: [JSON] = rows.map { row in
                let seq = row.int64("seq") ?? 0
                let type = row.string("type") ?? ""
                return .object([("seq", .int(Int(seq))), ("type", .string(type)), ("cursor", .string(String(seq))),
                                (type, (try? JSON.parse(row.string("payload") ?? "null")) ?? .null)])
            }
            let cursor = rows.last?.int64("seq") ?? since
            return (.json(200, .object([("events", .array(events)), ("cursor", .string(String(cursor)))])), ready: !rows.isEmpty)
        }
    }

    static func friendJSON(_ c: RouteContext, _ friend: String, conversation: String) throws -> JSON {
        var user = try c.store.userJSON(friend) ?? .object([("id", .string(friend))])
        user.set("conversationId", .string(conversation))
        return user
    }

    static func friends(_ c: RouteContext) throws -> HTTPResponse {
        let rows = try c.db.query("SELECT friend_id, conversation_id FROM friends WHERE user_id = ? ORDER BY friend_id", [.text(c.user)])
        return .json(200, .object([("friends", .array(try rows.map { try friendJSON(c, $0.string("friend_id") ?? "", conversation: $0.string("conversation_id") ?? "") }))]))
    }

    static func createFriendLink(_ c: RouteContext) throws -> HTTPResponse {
        let body = try c.jsonBody()
        var ttl: Int64 = 7 * 86400
        if let requested = body["ttlSeconds"] {
            guard let v = requested.intValue, (1...(30 * 86400)).contains(v) else { throw APIError.invalidRequest("'ttlSeconds' must be 1...2592000") }
            ttl = v
        }
        let code = Base64.encodeURL(Sodium.randomBytes(12))
        let expires = Timestamp.now().seconds + ttl
        try c.db.run("INSERT INTO friend_links(code, user_id, expires_at) VALUES(?,?,?)", [.text(code), .text(c.user), .integer(expires)])
        return .json(201, .object([("code", .string(code)), ("url", .string(c.server.chatBase + "/f/" + code)),
                                   ("expiresAt", .string(Timestamp.rfc3339String(expires)))]))
    }

    static func redeemFriendLink(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let code = c.parameter("code")
        guard let link = try c.db.queryFirst("SELECT * FROM friend_links WHERE code = ?", [.text(code)]) else { throw APIError.notFound("friend link") }
        let inviter = link.string("user_id") ?? ""
        guard inviter != c.user else { throw APIError(400, "OWN_LINK", "this is your own friend link") }
        guard link.isNull("redeemed_by") else { throw APIError(410, "LINK_USED", "the friend link was already used") }
        guard (link.int64("expires_at") ?? 0) > Timestamp.now().seconds else { throw APIError(410, "LINK_EXPIRED", "the friend link expired") }
        let now = Timestamp.now().seconds
        try c.db.run("UPDATE friend_links SET redeemed_by = ?, redeemed_at = ? WHERE code = ?", [.text(c.user), .integer(now), .text(code)])
        let conversation: String
        if let existing = try c.db.queryFirst("SELECT conversation_id FROM friends WHERE user_id = ? AND friend_id = ?", [.text(c.user), .text(inviter)]) {
            conversation = existing.string("conversation_id") ?? ""
        } else {
            conversation = DevServerStore.identifier("c")
            let names = [inviter, c.user].sorted()
            try c.db.run("INSERT INTO conversations(id, kind, title) VALUES(?, 'direct', ?)", [.text(conversation), .text(names.joined(separator: " & "))])
            for (a, b) in [(inviter, c.user), (c.user, inviter)] {
                try c.db.run("INSERT INTO members(conversation_id, user_id) VALUES(?,?)", [.text(conversation), .text(a)])
                try c.db.run("INSERT INTO friends(user_id, friend_id, conversation_id, created_at) VALUES(?,?,?,?)", [.text(a), .text(b), .text(conversation), .integer(now)])
            }
            try publish(c, &state, to: [inviter], type: "friend", payload: try friendJSON(c, c.user, conversation: conversation))
            try publish(c, &state, to: [c.user], type: "friend", payload: try friendJSON(c, inviter, conversation: conversation))
        }
        return .json(200, .object([("friend", try friendJSON(c, inviter, conversation: conversation)), ("conversationId", .string(conversation))]))
    }

    static func friendLinkInfo(_ c: RouteContext) throws -> HTTPResponse {
        let code = c.parameter("code")
        guard let link = try c.db.queryFirst("SELECT * FROM friend_links WHERE code = ?", [.text(code)]) else { throw APIError.notFound("friend link") }
        return .json(200, .object([
            ("code", .string(code)), ("inviter", try c.store.userJSON(link.string("user_id") ?? "") ?? .null),
            ("expiresAt", .string(Timestamp.rfc3339String(link.int64("expires_at") ?? 0))), ("redeemed", .bool(!link.isNull("redeemed_by"))),
        ]))
    }

    static func moments(_ c: RouteContext) throws -> HTTPResponse {
        let limit = try intQuery(c, "limit", 1...200) ?? 50
        var beforeSeq = Int64.max
        if let before = c.request.queryValue("before") {
            guard let row = try c.db.queryFirst("SELECT seq FROM moments WHERE id = ?", [.text(before)]) else { throw APIError.invalidRequest("unknown moment id in 'before'") }
            beforeSeq = row.int64("seq") ?? 0
        }
        let rows = try c.db.query("""
            SELECT * FROM moments WHERE seq < ? AND (author_id = ? OR author_id IN (SELECT friend_id FROM friends WHERE user_id = ?))
            ORDER BY seq DESC LIMIT ?
            """, [.integer(beforeSeq), .text(c.user), .text(c.user), .integer(limit)])
        return .json(200, .object([("moments", .array(rows.map(momentJSON)))]))
    }

    static func putMoment(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let clientId = c.parameter("clientId")
        guard validClientId(clientId) else { throw APIError.invalidRequest("clientId must be 1-128 characters from A-Z a-z 0-9 . _ -") }
        let text = try c.string(try c.jsonBody(), "text")
        if let existing = try c.db.queryFirst("SELECT * FROM moments WHERE author_id = ? AND client_id = ?", [.text(c.user), .text(clientId)]) {
            guard existing.string("text") == text else { throw APIError(409, "CLIENT_ID_CONFLICT", "clientId \(clientId) was already used for another moment") }
            return .json(200, momentJSON(existing))
        }
        try c.db.run("INSERT INTO moments(id, client_id, author_id, text, created_at) VALUES(?,?,?,?,?)",
                     [.text(DevServerStore.identifier("mom")), .text(clientId), .text(c.user), .text(text), .integer(Timestamp.now().seconds)])
        guard let row = try c.db.queryFirst("SELECT * FROM moments WHERE seq = ?", [.integer(c.db.lastInsertRowID)]) else {
            throw APIError(500, "INTERNAL", "moment vanished")
        }
        let moment = momentJSON(row)
        let audience = [c.user] + (try c.db.query("SELECT friend_id FROM friends WHERE user_id = ?", [.text(c.user)]).compactMap { $0.string("friend_id") })
        try publish(c, &state, to: audience, type: "moment", payload: moment)
        return .json(201, moment)
    }
}
