import StarlineCore
import StarlineSQLite

/// Bulk fixtures for tests and benchmarks (`POST /__dev/users`, `POST /__dev/conversations/{id}/messages`)
/// and what a bulk revocation did to each session (`GET /__dev/revocations`): the proof behind "every
/// session revoked exactly once".
extension DevControlRoutes {
    /// `POST /__dev/users` `{"count":N,"prefix":"u","password":…,"sessionsPerUser":M,"appId":…}`.
    /// Ids are the prefix and a number from 1, zero-padded to at least 4 digits (as many as `count`
    /// has), so `u0001…u0100` sort by id in creation order and a test can name them in advance.
    /// All or nothing, in one transaction: an id that exists already is 409 and creates no one.
    static func createUsers(_ c: RouteContext) throws -> HTTPResponse {
        let body = try c.jsonBody()
        guard let count = body["count"]?.intValue, (1...Int64(Limits.maxBulkUsers)).contains(count) else {
            throw APIError.invalidRequest("'count' must be an integer 1...\(Limits.maxBulkUsers)")
        }
        let prefix = try c.string(body, "prefix", maxLength: 32)
        // Ids end up in URL paths and file names of test runs: keep them to unreserved characters.
        guard
            prefix.utf8.allSatisfy({
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || "._-".utf8.contains($0)
            })
        else {
            throw APIError.invalidRequest("'prefix' may hold only ASCII letters, digits, '.', '_' and '-'")
        }
        let password = try body["password"].map { _ in try c.string(body, "password", maxLength: 256) }
        let perUser = try optionalInt(body, "sessionsPerUser", 0...Int64(Limits.maxSessionsPerUser)) ?? 0
        guard count * perUser <= Int64(Limits.maxBulkSessions) else {
            throw APIError.invalidRequest("count × sessionsPerUser must be at most \(Limits.maxBulkSessions)")
        }
        let app = try body["appId"].map { _ in try c.string(body, "appId", maxLength: 256) } ?? "workbench"
        guard try PlatformRoutes.appExists(c, app) else { throw APIError.notFound("app \(app)") }

        let width = max(4, String(count).count)
        let ids = (1...Int(count)).map { i in prefix + String(repeating: "0", count: width - String(i).count) + String(i) }
        let ttl = c.server.configuration.sessionTTL
        let sessions = try c.db.transaction { () throws -> [JSON] in
            var sessions: [JSON] = []
            sessions.reserveCapacity(Int(count * perUser))
            for id in ids {
                if try c.db.queryFirst("SELECT id FROM users WHERE id = ?", [.text(id)]) != nil {
                    throw APIError(409, "USER_EXISTS", "user \(id) exists already; use another prefix or POST /__dev/reset")
                }
                try c.store.createUser(id: id, name: id, displayName: id, password: password ?? "\(id)-pass", phone: nil, roles: .array([]))
                for n in 0..<perUser {
                    let session = try c.store.createSession(
                        user: id, app: app, deviceName: "bulk device \(n + 1)", platform: "linux",
                        ip: "127.0.0.1", ttl: ttl, authCode: nil)
                    sessions.append(.object([("user", .string(id)), ("id", .string(session.id)), ("token", .string(session.token))]))
                }
            }
            return sessions
        }
        return .json(201, .object([("users", .array(ids.map(JSON.string))), ("sessions", .array(sessions))]))
    }

    /// `POST /__dev/conversations/{id}/messages` `{"count":N,"sender":"bob","text":"prefix"}`: N messages
    /// from `sender` ("prefix 1" … "prefix N", default prefix "message"), each with the `message` event
    /// for every member that a PUT would publish, so sync pages through them as through real traffic.
    /// One transaction and three statements compiled once: 100,000 messages are about 400,000 inserts.
    static func createMessages(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let id = c.parameter("id")
        guard try c.db.queryFirst("SELECT id FROM conversations WHERE id = ?", [.text(id)]) != nil else {
            throw APIError.notFound("conversation \(id)")
        }
        let body = try c.jsonBody()
        guard let count = body["count"]?.intValue, (1...Int64(Limits.maxBulkMessages)).contains(count) else {
            throw APIError.invalidRequest("'count' must be an integer 1...\(Limits.maxBulkMessages)")
        }
        let sender = try c.string(body, "sender", maxLength: 256)
        let members = try ChatRoutes.members(c, id)
        guard members.contains(sender) else { throw APIError.invalidRequest("'sender' must be a member of conversation \(id)") }
        let prefix = try body["text"].map { _ in try c.string(body, "text", maxLength: 3900) } ?? "message"
        // clientIds must be new for (conversation, sender) even when this route runs twice: a random batch name.
        let batch = DevServerStore.identifier("bulk")
        let retention = SQLiteValue.integer(Int64(c.server.configuration.eventRetention))
        let now = c.server.clock.now().seconds
        let (first, last) = try c.db.transaction { () throws -> (Int64, Int64) in
            let insertMessage = try c.db.prepare(
                "INSERT INTO messages(id, client_id, conversation_id, sender_id, text, created_at) VALUES(?,?,?,?,?,?)")
            let insertEvent = try c.db.prepare("INSERT INTO events(user_id, type, payload) VALUES(?, 'message', ?)")
            let prune = try c.db.prepare(ChatRoutes.pruneEventsSQL)
            var first: Int64 = 0, seq: Int64 = 0
            for i in 1...count {
                let messageId = DevServerStore.identifier("msg"), clientId = "\(batch)-\(i)", text = "\(prefix) \(i)"
                try insertMessage.run([.text(messageId), .text(clientId), .text(id), .text(sender), .text(text), .integer(now)])
                seq = c.db.lastInsertRowID
                if i == 1 { first = seq }
                let payload = SQLiteValue.text(
                    ChatRoutes.messageJSON(
                        id: messageId, clientId: clientId, conversation: id, sender: sender,
                        text: text, createdAt: now, seq: seq
                    ).serialized())
                for member in members { try insertEvent.run([.text(member), payload]) }
                // Pruning as we go, as PUTs would, keeps the table near --event-retention rows, not count × members.
                if i % 1000 == 0 { try prune.run([retention]) }
            }
            try prune.run([retention])
            return (first, seq)
        }
        state.eventsPublished = true
        return .json(201, .object([("created", .int(Int(count))), ("firstSeq", .int(Int(first))), ("lastSeq", .int(Int(last)))]))
    }

    static func optionalInt(_ body: JSON, _ key: String, _ range: ClosedRange<Int64>) throws -> Int64? {
        // Present means given: a null is refused like any other value that is not such an integer.
        try DevControlRoutes.member(body, key, "an integer \(range.lowerBound)...\(range.upperBound)") { value in
            value.intValue.flatMap { range.contains($0) ? $0 : nil }
        }
    }

    /// `GET /__dev/revocations[?user=UID]` → `{"sessions":{"<id>":N,…}}`: every session (of that user),
    /// with how many DELETE requests reached it through `DELETE /api/sessions/{id}` or
    /// `DELETE /api/admin/users/{uid}/sessions/{id}` — the one that revoked it and any later ones that
    /// found it revoked already. Requests answered by a fault or refused before the handler (401, 403,
    /// 404) are not in it; `/__dev/counters` has those.
    static func revocations(_ c: RouteContext) throws -> HTTPResponse {
        let user = c.request.queryValue("user")
        let rows = try c.db.query(
            """
            SELECT s.id, coalesce(r.count, 0) AS n FROM sessions s LEFT JOIN revoke_requests r ON r.session_id = s.id
            WHERE ? IS NULL OR s.user_id = ? ORDER BY s.id
            """, [user.map(SQLiteValue.text) ?? .null, user.map(SQLiteValue.text) ?? .null])
        return .json(200, .object([("sessions", .object(rows.map { ($0.string("id") ?? "", .int(Int($0.int64("n") ?? 0))) }))]))
    }
}
