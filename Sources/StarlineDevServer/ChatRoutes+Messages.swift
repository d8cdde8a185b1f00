import StarlineCore
import StarlineSQLite

/// Messages, read marks and the long-poll sync: the chat routes that write or read the event log.
extension ChatRoutes {
    /// A page of messages (ascending `seq`), or with `clientId` the caller's own message of that clientId
    /// (0 or 1), for a client settling a send whose answer it never got. Reading marks nothing read:
    /// that is `POST …/read`, so a client that prefetches or pages history does not clear unread counts.
    static func messages(_ c: RouteContext) throws -> HTTPResponse {
        let id = c.parameter("id")
        guard try isMember(c, id) else { throw APIError.notFound("conversation \(id)") }
        let limit = try intQuery(c, "limit", 1...200) ?? 50
        let before = try intQuery(c, "before", 0...Int64.max), after = try intQuery(c, "after", 0...Int64.max)
        var rows: [SQLiteRow]
        if let clientId = c.request.queryValue("clientId") {
            guard before == nil, after == nil else {
                throw APIError.invalidRequest("'clientId' cannot be combined with 'before' or 'after'")
            }
            guard validClientId(clientId) else { throw APIError.invalidRequest("clientId must be 1-128 characters from A-Z a-z 0-9 . _ -") }
            rows = try c.db.query(
                "SELECT * FROM messages WHERE conversation_id = ? AND sender_id = ? AND client_id = ?",
                [.text(id), .text(c.user), .text(clientId)])
        } else if let after {
            rows = try c.db.query(
                "SELECT * FROM messages WHERE conversation_id = ? AND seq > ? AND seq < ? ORDER BY seq LIMIT ?",
                [.text(id), .integer(after), .integer(before ?? Int64.max), .integer(limit)])
        } else {
            rows = try c.db.query(
                "SELECT * FROM messages WHERE conversation_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                [.text(id), .integer(before ?? Int64.max), .integer(limit)])
            rows.reverse()
        }
        return .json(200, .object([("messages", .array(rows.map(messageJSON)))]))
    }

    static func validClientId(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count)
            && id.utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F || b == 0x2E
            }
    }

    static func putMessage(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let id = c.parameter("id"), clientId = c.parameter("clientId")
        guard validClientId(clientId) else { throw APIError.invalidRequest("clientId must be 1-128 characters from A-Z a-z 0-9 . _ -") }
        let text = try c.string(try c.jsonBody(), "text")
        guard try isMember(c, id) else { throw APIError.notFound("conversation \(id)") }
        if let existing = try c.db.queryFirst(
            "SELECT * FROM messages WHERE conversation_id = ? AND sender_id = ? AND client_id = ?",
            [.text(id), .text(c.user), .text(clientId)])
        {
            guard existing.string("text") == text else {
                throw APIError(409, "CLIENT_ID_CONFLICT", "clientId \(clientId) was already used for another message")
            }
            return .json(200, messageJSON(existing))
        }
        try c.db.run(
            "INSERT INTO messages(id, client_id, conversation_id, sender_id, text, created_at) VALUES(?,?,?,?,?,?)",
            [
                .text(DevServerStore.identifier("msg")), .text(clientId), .text(id), .text(c.user), .text(text),
                .integer(c.server.clock.now().seconds)
            ])
        guard let row = try c.db.queryFirst("SELECT * FROM messages WHERE seq = ?", [.integer(c.db.lastInsertRowID)]) else {
            throw APIError(500, "INTERNAL", "message vanished")
        }
        let message = messageJSON(row)
        try publish(c, &state, to: try members(c, id), type: "message", payload: message)
        return .json(201, message)
    }

    static func members(_ c: RouteContext, _ conversation: String) throws -> [String] {
        try c.db.query("SELECT user_id FROM members WHERE conversation_id = ? ORDER BY user_id", [.text(conversation)]).compactMap {
            $0.string("user_id")
        }
    }

    /// `POST …/read` `{"upTo":"<message id>"}`: moves the caller's read mark up to that message, never back
    /// (a late request from another device cannot undo a newer read). When it moved, the caller's own
    /// devices hear of it through a `read` event; nobody else does (read receipts are not in the contract).
    static func markRead(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let id = c.parameter("id")
        guard try isMember(c, id) else { throw APIError.notFound("conversation \(id)") }
        let upTo = try c.string(try c.jsonBody(), "upTo", maxLength: 256)
        guard
            let seq = try c.db.queryFirst("SELECT seq FROM messages WHERE id = ? AND conversation_id = ?", [.text(upTo), .text(id)])?.int64(
                "seq")
        else {
            throw APIError.invalidRequest("'upTo' is not the id of a message in conversation \(id)")
        }
        try c.db.run(
            "UPDATE members SET last_read_seq = ? WHERE conversation_id = ? AND user_id = ? AND last_read_seq < ?",
            [.integer(seq), .text(id), .text(c.user), .integer(seq)])
        let moved = c.db.changes > 0
        let lastRead =
            try c.db.queryFirst(
                "SELECT last_read_seq FROM members WHERE conversation_id = ? AND user_id = ?",
                [.text(id), .text(c.user)])?.int64("last_read_seq") ?? 0
        let mark = JSON.object([
            ("conversationId", .string(id)), ("lastReadSeq", .int(Int(lastRead))),
            ("unread", .int(try unreadCount(c, id, after: lastRead)))
        ])
        if moved { try publish(c, &state, to: [c.user], type: "read", payload: mark) }
        return .json(200, mark)
    }

    /// Records an event for each user (read by /v1/sync); the request wakes the long polls when it ends.
    static func publish(_ c: RouteContext, _ state: inout DevServerState, to users: [String], type: String, payload: JSON) throws {
        for user in users {
            try c.db.run(
                "INSERT INTO events(user_id, type, payload) VALUES(?,?,?)", [.text(user), .text(type), .text(payload.serialized())])
        }
        try c.db.run(pruneEventsSQL, [.integer(Int64(c.server.configuration.eventRetention))])
        state.eventsPublished = true
    }

    /// Keeps the newest `?` events (`--event-retention`). Event sequence numbers are contiguous (only this
    /// and a reset delete rows), which is what lets `sync` tell a dropped event from one never published.
    static let pruneEventsSQL = "DELETE FROM events WHERE seq <= (SELECT max(seq) FROM events) - ?"

    /// Events after the cursor, at most `limit` (1...1000, default 100); with `timeout`, waits up to that
    /// many seconds for the first one.
    static func sync(_ c: RouteContext) throws -> LongPoll {
        var since: Int64?
        // An empty `since` is no cursor this server issued (the first call leaves it out), not the first call.
        if let cursor = c.request.queryValue("since") {
            guard let v = Int64(cursor), v >= 0 else { throw APIError(400, "INVALID_CURSOR", "the cursor is not one this server issued") }
            since = v
        }
        // Validated against the contract's range, then cut to --max-poll-wait.
        let timeout = min(try intQuery(c, "timeout", 0...30) ?? 0, Int64(c.server.configuration.maxPollWait))
        let limit = try intQuery(c, "limit", 1...1000) ?? 100
        return LongPoll(deadline: MonotonicClock.nanoseconds() + UInt64(timeout) * 1_000_000_000) {
            // Checked at every poll, not once: a request published while this one waited (a bulk
            // fixture of more than --event-retention events) can drop events after the cursor.
            if let since { try checkNotExpired(c, since) }
            let after = since ?? 0
            let rows = try c.db.query(
                "SELECT * FROM events WHERE user_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                [.text(c.user), .integer(after), .integer(limit)])
            let events: [JSON] = rows.map { row in
                let seq = row.int64("seq") ?? 0
                let type = row.string("type") ?? ""
                return .object([
                    ("seq", .int(Int(seq))), ("type", .string(type)), ("cursor", .string(String(seq))),
                    (type, (try? JSON.parse(row.string("payload") ?? "null")) ?? .null)
                ])
            }
            // A full page may have more behind it: resume after its last event. A short page is everything
            // this user has up to the newest event of anyone (all under the server's lock), so the cursor
            // moves there: a user who gets no events keeps a cursor that pruning cannot make stale.
            // Never backwards: the cursor is the client's number, which may be ahead of ours.
            let newest = try c.db.queryFirst("SELECT max(seq) AS s FROM events")?.int64("s") ?? 0
            let cursor = rows.count == Int(limit) ? (rows.last?.int64("seq") ?? after) : max(after, newest)
            return (.json(200, .object([("events", .array(events)), ("cursor", .string(String(cursor)))])), ready: !rows.isEmpty)
        }
    }

    /// 410 when events after `since` were pruned. Sequence numbers start at 1 and only pruning removes
    /// rows (a reset restarts them), so a gap between the cursor and the oldest kept event means events
    /// were dropped — perhaps only other users', which we can no longer tell. (`oldest - 1`, not
    /// `since + 1`: the cursor is the client's, up to Int64.max; sequence numbers are ours.)
    static func checkNotExpired(_ c: RouteContext, _ since: Int64) throws {
        if let oldest = try c.db.queryFirst("SELECT min(seq) AS s FROM events")?.int64("s"), since < oldest - 1 {
            throw APIError(
                410, "CURSOR_EXPIRED",
                "events after this cursor were dropped (the server keeps the newest \(c.server.configuration.eventRetention)); read the history again and sync without 'since'"
            )
        }
        // A cursor beyond every sequence number this server ever issued (sqlite_sequence survives pruning) was
        // issued by a state that is gone — a reset, or a restart without --db: what the client saw is not
        // here, and an empty answer would let it wait silently until the numbers catch up.
        let issued = try c.db.queryFirst("SELECT seq FROM sqlite_sequence WHERE name = 'events'")?.int64("seq") ?? 0
        if since > issued {
            throw APIError(
                410, "CURSOR_EXPIRED",
                """
                this cursor is ahead of every event this server has issued (it was reset or restarted without --db); read the \
                history again and sync without 'since'
                """)
        }
    }
}
