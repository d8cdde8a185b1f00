import StarlineCore
import StarlineSQLite
import StarlineCrypto

/// The outbox's rows (W5). Every change is one short transaction under the store's
/// flock, so a cron `outbox flush` and an interactive `send` never take the same entry at once: `claim`
/// moves an entry to `sending` with the claiming process's identity, and only that process may settle it.
/// A message is claimed only once every message queued before it in its conversation is sent (W5).
extension ChatStore {
    /// A new clientId: 16 random bytes, URL-safe (the server accepts A-Z a-z 0-9 . _ -).
    public static func mintClientId() -> String { "cl_" + Base64.encodeURL(Sodium.randomBytes(16)) }

    /// What to store: one text, with the caller's clientId or nil to mint one.
    public struct Submission: Sendable {
        public var conversation: String
        public var text: String
        public var clientId: String?

        public init(conversation: String, text: String, clientId: String?) {
            self.conversation = conversation
            self.text = text
            self.clientId = clientId
        }
    }

    /// Stores entries before the first attempt — all of them in one durable transaction, so a crash right
    /// after leaves every one of them queued. With a caller's `clientId` that exists already: the same
    /// entry again when the text (and conversation) match, CLIENT_ID_CONFLICT (exit 12, nothing stored)
    /// when they do not.
    public func enqueue(_ kind: OutboxKind, _ submissions: [Submission], account: ChatAccount, now: Int64) throws -> [OutboxEntry] {
        let ids = submissions.map { $0.clientId ?? Self.mintClientId() }
        for id in ids where !OutboxEntry.isValidClientId(id) {
            throw StarlineError(.usage, "--client-id must be 1 to 128 characters from A-Z a-z 0-9 . _ - (got \(id.utf8.count) bytes)")
        }
        return try transaction { db in
            let key = SQLiteValue.text(account.key)
            let select = try db.prepare("SELECT * FROM outbox WHERE account = ? AND kind = ? AND client_id = ?")
            let insert = try db.prepare(
                """
                INSERT INTO outbox (account, kind, client_id, conversation_id, text, state, attempts, created_at, updated_at, seq)
                VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)
                """)
            var seq = (try db.queryFirst("SELECT max(seq) AS s FROM outbox WHERE account = ?", [key])?.int64("s") ?? 0)
            var entries: [OutboxEntry] = []
            for (submission, id) in zip(submissions, ids) {
                let params: [SQLiteValue] = [key, .text(kind.rawValue), .text(id)]
                if let row = try select.query(params).first {
                    let existing = try OutboxEntry(row: row)
                    guard existing.text == submission.text, existing.conversationId == submission.conversation else {
                        throw StarlineError(
                            .clientIdConflict,
                            """
                            client id \(id) was already used for another \(kind.rawValue)\(existing.conversationId == submission.conversation ? "" : " in conversation \(existing.conversationId)") (it is \(existing.state.rawValue)); a client id names one \(kind.rawValue): \
                            to send changed content, give it a new client id (\(id).2), or leave --client-id out
                            """,
                            details: .object([("clientId", .string(id)), ("state", .string(existing.state.rawValue))]))
                    }
                    entries.append(existing)
                    continue
                }
                seq += 1
                try insert.run(
                    params + [.text(submission.conversation), .text(submission.text), .integer(now), .integer(now), .integer(seq)])
                guard let row = try select.query(params).first else { throw StarlineError(.internalError, "the outbox entry vanished") }
                entries.append(try OutboxEntry(row: row))
            }
            return entries
        }
    }

    /// An entry taken by one process for one attempt series.
    public struct Claim: Sendable {
        public var entry: OutboxEntry
        /// The request may have reached the server before (state `unknown`, or `sending` by a process that is
        /// gone): look for the echo by clientId before sending again.
        public var needsLookup: Bool
    }

    /// What `claim` came to.
    public enum ClaimOutcome: Sendable {
        case claimed(Claim)
        /// Not to be sent yet (W5): `holder` is the earliest message of the same conversation queued before it
        /// and not sent (pending, sending, unknown or failed); the entry is left as it was.
        case held(by: OutboxEntry)
        /// Sent, failed, being sent by a live process, or not there.
        case unavailable
    }

    /// Takes an entry for `owner`: `pending` and `unknown` ones, and `sending` ones whose process is gone —
    /// unless it is a message with an earlier message of its conversation not sent yet (W5: one conversation
    /// leaves in queue order). The check and the take are one transaction under the store's lock, so two
    /// processes flushing at once never send past an entry the other is sending.
    ///
    /// Not durable (no fsync): a claim lost in a power cut leaves the entry pending, and sending it again is
    /// safe — the server keeps one message per clientId.
    public func claim(_ kind: OutboxKind, clientId: String, account: ChatAccount, owner: ProcessIdentity, now: Int64) throws -> ClaimOutcome
    {
        try transaction(durable: false) { db in
            let key = SQLiteValue.text(account.key)
            guard
                let row = try db.queryFirst(
                    "SELECT * FROM outbox WHERE account = ? AND kind = ? AND client_id = ?",
                    [key, .text(kind.rawValue), .text(clientId)])
            else { return .unavailable }
            var entry = try OutboxEntry(row: row)
            var needsLookup = entry.state == .unknown
            switch entry.state {
            case .pending, .unknown: break
            case .sending:
                if let current = entry.owner, current != owner, current.isAlive { return .unavailable }
                needsLookup = true  // its sender died mid-attempt: the request may have gone out
            case .sent, .failed: return .unavailable
            }
            if kind == .message, let holder = try Self.holder(of: entry, account: account, db) { return .held(by: holder) }
            try db.run(
                """
                UPDATE outbox SET state = 'sending', owner = ?, updated_at = ? WHERE account = ? AND kind = ? AND client_id = \
                ?
                """,
                [.text(owner.description), .integer(now), key, .text(kind.rawValue), .text(clientId)])
            entry.state = .sending
            entry.owner = owner
            entry.updatedAt = now
            return .claimed(Claim(entry: entry, needsLookup: needsLookup))
        }
    }

    /// The earliest message of `entry`'s conversation queued before it and not sent yet, which leaves first.
    static func holder(of entry: OutboxEntry, account: ChatAccount, _ db: SQLiteDatabase) throws -> OutboxEntry? {
        try db.queryFirst(
            """
            SELECT * FROM outbox WHERE account = ? AND conversation_id = ? AND seq < ? AND kind = 'message' AND state != 'sent'
            ORDER BY seq LIMIT 1
            """, [.text(account.key), .text(entry.conversationId), .integer(entry.seq)]
        ).map { try OutboxEntry(row: $0) }
    }

    /// For `outbox list` (W5): every message not sent that has an earlier message of its conversation not
    /// sent, mapped to the earliest of those (its clientId) — the entry it waits for. Moments hold nothing.
    public func holders(account: ChatAccount) throws -> [String: String] {
        try reading { db in
            var holders: [String: String] = [:]
            var first: (conversation: String, clientId: String)?
            for row in try db.query(
                """
                SELECT client_id, conversation_id FROM outbox WHERE account = ? AND kind = 'message' AND state != 'sent'
                ORDER BY conversation_id, seq
                """, [.text(account.key)])
            {
                guard let id = row.string("client_id"), let conversation = row.string("conversation_id") else { continue }
                if let first, first.conversation == conversation { holders[id] = first.clientId } else { first = (conversation, id) }
            }
            return holders
        }
    }

    /// The messages of `conversation` still to be delivered (pending, unknown, or sending), queued before
    /// `seq` (all of them when nil), oldest first: what must leave before a new entry of it (W5).
    public func openMessages(account: ChatAccount, conversation: String, before seq: Int64? = nil) throws -> [OutboxEntry] {
        try reading { db in
            try db.query(
                """
                SELECT * FROM outbox WHERE account = ? AND conversation_id = ? AND seq < ? AND kind = 'message' AND state != 'sent'
                  AND state IN ('pending', 'unknown', 'sending')
                ORDER BY seq
                """, [.text(account.key), .text(conversation), .integer(seq ?? Int64.max)]
            ).map { try OutboxEntry(row: $0) }
        }
    }

    /// How an attempt series ended for an entry.
    public enum Settlement: Sendable {
        case sent(JSON)
        /// Refused for good (auth or validation): `failed`, with the error.
        case failed(StarlineError)
        /// No answer that settles it; back to `pending` (nothing was written) or `unknown` (it may have been).
        case open(maybeWritten: Bool, StarlineError?)
    }

    /// Settles an entry this process claimed, adding `attempts`. Returns the entry as stored — unchanged
    /// when another process settled it meanwhile (an echo seen by `sync`), never overwriting a `sent`.
    /// Not durable: a settlement lost in a power cut leaves the entry `sending` by a process that is gone,
    /// which the next flush settles by looking up its echo.
    @discardableResult
    public func settle(
        _ entry: OutboxEntry, account: ChatAccount, owner: ProcessIdentity, _ settlement: Settlement, attempts: Int,
        now: Int64
    ) throws -> OutboxEntry {
        try transaction(durable: false) { db in
            let key = SQLiteValue.text(account.key)
            let select = "SELECT * FROM outbox WHERE account = ? AND kind = ? AND client_id = ?"
            let params: [SQLiteValue] = [key, .text(entry.kind.rawValue), .text(entry.clientId)]
            guard let row = try db.queryFirst(select, params) else {
                throw StarlineError(.notFound, "outbox entry \(entry.clientId) was dropped while it was being sent")
            }
            let current = try OutboxEntry(row: row)
            var state: OutboxState, server: JSON? = current.server, error: JSON? = current.error
            switch settlement {
            case .sent(let json):
                state = .sent
                server = json
                error = nil
                if entry.kind == .message,
                    let message = try? ChatMessage(json: json, route: "PUT /v1/conversations/{id}/messages/{clientId}")
                {
                    try Self.storeMessages([message], account: account, db, now: now)
                } else if entry.kind == .moment {
                    try Self.storeMoments([json], account: account, db, now: now)
                }
            case .failed(let e):
                state = .failed
                error = e.json["error"]
            case .open(let maybeWritten, let e):
                state = maybeWritten ? .unknown : .pending
                if let e { error = e.json["error"] }
            }
            // Someone else settled it (the echo arrived through a sync), or took it over: keep theirs.
            if current.state == .sent || current.owner != owner { return current }
            try db.run(
                """
                UPDATE outbox SET state = ?, owner = NULL, attempts = attempts + ?, updated_at = ?, server_json = ?, error_json = ?
                WHERE account = ? AND kind = ? AND client_id = ?
                """,
                [
                    .text(state.rawValue), .integer(Int64(attempts)), .integer(now), server.map { .text($0.serialized()) } ?? .null,
                    error.map { .text($0.serialized()) } ?? .null
                ] + params)
            guard let updated = try db.queryFirst(select, params) else { throw StarlineError(.internalError, "the outbox entry vanished") }
            return try OutboxEntry(row: updated)
        }
    }

    /// Entries in creation order, optionally only those in `states`.
    public func outbox(account: ChatAccount, states: [OutboxState]? = nil, kind: OutboxKind? = nil) throws -> [OutboxEntry] {
        try reading { db in
            var sql = "SELECT * FROM outbox WHERE account = ?"
            var params: [SQLiteValue] = [.text(account.key)]
            if let states {
                sql += " AND state IN (" + states.map { _ in "?" }.joined(separator: ",") + ")"
                params += states.map { .text($0.rawValue) }
            }
            if let kind {
                sql += " AND kind = ?"
                params.append(.text(kind.rawValue))
            }
            return try db.query(sql + " ORDER BY seq", params).map { try OutboxEntry(row: $0) }
        }
    }

    public func outboxEntry(_ clientId: String, account: ChatAccount) throws -> OutboxEntry? {
        try reading { db in
            try db.queryFirst(
                "SELECT * FROM outbox WHERE account = ? AND client_id = ? ORDER BY kind LIMIT 1",
                [.text(account.key), .text(clientId)]
            ).map { try OutboxEntry(row: $0) }
        }
    }

    /// Removes entries that are not being sent by a live process; returns what was removed and what was not.
    public func drop(_ clientIds: [String], account: ChatAccount) throws -> [(clientId: String, dropped: OutboxEntry?, reason: String?)] {
        try transaction { db in
            try clientIds.map { id in
                let key = SQLiteValue.text(account.key)
                guard let row = try db.queryFirst("SELECT * FROM outbox WHERE account = ? AND client_id = ?", [key, .text(id)]) else {
                    return (id, nil, "no outbox entry has this client id")
                }
                let entry = try OutboxEntry(row: row)
                if entry.state == .sending, let owner = entry.owner, owner.isAlive {
                    return (id, nil, "process \(owner.pid) is sending it now")
                }
                try db.run(
                    "DELETE FROM outbox WHERE account = ? AND kind = ? AND client_id = ?", [key, .text(entry.kind.rawValue), .text(id)])
                return (id, entry, nil)
            }
        }
    }

    /// Makes failed entries pending again (they are sent with the same clientId: the server keeps them idempotent).
    public func requeue(_ clientIds: [String], account: ChatAccount, now: Int64) throws -> [(
        clientId: String, entry: OutboxEntry?, reason: String?
    )] {
        try transaction { db in
            try clientIds.map { id in
                let key = SQLiteValue.text(account.key)
                guard let row = try db.queryFirst("SELECT * FROM outbox WHERE account = ? AND client_id = ?", [key, .text(id)]) else {
                    return (id, nil, "no outbox entry has this client id")
                }
                var entry = try OutboxEntry(row: row)
                guard entry.state == .failed else { return (id, entry, entry.state == .sent ? "it was sent already" : nil) }
                try db.run(
                    "UPDATE outbox SET state = 'pending', updated_at = ? WHERE account = ? AND kind = ? AND client_id = ?",
                    [.integer(now), key, .text(entry.kind.rawValue), .text(id)])
                entry.state = .pending
                entry.updatedAt = now
                return (id, entry, nil)
            }
        }
    }
}
