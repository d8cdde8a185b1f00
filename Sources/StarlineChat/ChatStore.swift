import StarlineCore
import StarlineSQLite

/// `chat.db` in the state directory: the cache of conversations, messages, friends and moments, the sync
/// cursor, the durable outbox and the named consumer cursors (W5, W9; README, sl-chat). One SQLite file
/// (the shared store type: private files, WAL, `BEGIN IMMEDIATE` under an flock), every row keyed by the
/// account. Network I/O never happens inside a transaction.
public final class ChatStore: @unchecked Sendable {
    // @unchecked: SQLiteStore is thread-safe and this class adds no mutable state.
    public let store: SQLiteStore
    public var path: String { store.path }

    public init(paths: StarlinePaths, faults: StorageFaults = StorageFaults()) throws(StarlineError) {
        store = try SQLiteStore(path: paths.state + "/chat.db", name: "the chat store", migrations: ChatSchema.migrations, faults: faults)
        // A sync writes tens of thousands of rows whose keys (server ids) arrive in random order: with
        // SQLite's default 2 MB page cache every commit re-reads and rewrites most leaf pages.
        do { try store.database.execute("PRAGMA cache_size = -32768") } catch { throw error.starlineError }
    }

    public func transaction<T>(durable: Bool = true, _ body: (SQLiteDatabase) throws -> T) throws -> T {
        try store.checkFault(.write, "write the chat store")
        return try store.withTransaction(durable: durable, body)
    }

    var db: SQLiteDatabase { store.database }

    /// A read without the lock (a WAL reader sees the last commit), with SQLite's errors as STORAGE_ERROR.
    func reading<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        do {
            return try body(store.database)
        } catch let error as SQLiteError {
            throw error.starlineError
        }
    }

    // MARK: Messages

    /// Upserts messages by their place in the conversation (seq) and merges the echoes of our own sends by clientId: an outbox entry
    /// whose message is here is `sent` (W5). Call inside `transaction`.
    public static func storeMessages(_ messages: [ChatMessage], account: ChatAccount, _ db: SQLiteDatabase, now: Int64) throws {
        guard !messages.isEmpty else { return }
        let upsert = try db.prepare(
            """
            INSERT INTO messages (account, id, conversation_id, client_id, sender_id, text, created_at, seq) VALUES (?,?,?,?,?,?,?,?)
            ON CONFLICT (account, conversation_id, seq) DO UPDATE SET id = excluded.id, client_id = excluded.client_id,
              sender_id = excluded.sender_id, text = excluded.text, created_at = excluded.created_at
            """)
        let echo = try db.prepare(
            """
            UPDATE outbox SET state = 'sent', server_json = ?, error_json = NULL, updated_at = ?
            WHERE account = ? AND kind = 'message' AND client_id = ? AND conversation_id = ? AND state != 'sent'
            """)
        let key = SQLiteValue.text(account.key)
        for m in messages {
            try upsert.run([
                key, .text(m.id), .text(m.conversationId), m.clientId.map(SQLiteValue.text) ?? .null,
                m.senderId.map(SQLiteValue.text) ?? .null, .text(m.text), m.createdAt.map(SQLiteValue.text) ?? .null, .integer(m.seq)
            ])
            if let clientId = m.clientId, m.senderId == account.userId {
                try echo.run([.text(m.json.serialized()), .integer(now), key, .text(clientId), .text(m.conversationId)])
            }
        }
    }

    /// Cached messages of a conversation in seq order: the newest `limit` before `before`, or the oldest
    /// `limit` after `after`.
    public func messages(account: ChatAccount, conversation: String, before: Int64?, after: Int64?, limit: Int) throws -> [ChatMessage] {
        try reading { db in
            let key = SQLiteValue.text(account.key), conv = SQLiteValue.text(conversation)
            var rows: [SQLiteRow]
            if let after {
                rows = try db.query(
                    "SELECT * FROM messages WHERE account = ? AND conversation_id = ? AND seq > ? AND seq < ? ORDER BY seq LIMIT ?",
                    [key, conv, .integer(after), .integer(before ?? Int64.max), .integer(Int64(limit))])
            } else {
                rows = try db.query(
                    "SELECT * FROM messages WHERE account = ? AND conversation_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                    [key, conv, .integer(before ?? Int64.max), .integer(Int64(limit))])
                rows.reverse()
            }
            return rows.map(Self.message)
        }
    }

    static func message(_ row: SQLiteRow) -> ChatMessage {
        ChatMessage(
            id: row.string("id") ?? "", clientId: row.string("client_id"), conversationId: row.string("conversation_id") ?? "",
            senderId: row.string("sender_id"), text: row.string("text") ?? "", createdAt: row.string("created_at"),
            seq: row.int64("seq") ?? 0)
    }

    /// How many messages of the conversation the cache holds with seq in [from, before).
    func cachedCount(account: ChatAccount, conversation: String, from: Int64, before: Int64?) throws -> Int {
        try reading {
            try $0.queryFirst(
                "SELECT count(*) AS n FROM messages WHERE account = ? AND conversation_id = ? AND seq >= ? AND seq < ?",
                [.text(account.key), .text(conversation), .integer(from), .integer(before ?? Int64.max)])
        }?.int("n") ?? 0
    }

    // MARK: Conversations

    /// Replaces the cached conversation list (a full answer of `GET /v1/conversations`), keeping what is
    /// known of each conversation's history.
    public func storeConversations(_ conversations: [JSON], account: ChatAccount, now: Int64) throws {
        try transaction { db in
            let key = SQLiteValue.text(account.key)
            let ids = conversations.compactMap { $0["id"]?.stringValue }
            let existing = Set(try db.query("SELECT id FROM conversations WHERE account = ?", [key]).compactMap { $0.string("id") })
            for gone in existing.subtracting(ids) {
                try db.run("DELETE FROM conversations WHERE account = ? AND id = ?", [key, .text(gone)])
            }
            let upsert = try db.prepare(
                """
                INSERT INTO conversations (account, id, json, fetched_at) VALUES (?,?,?,?)
                ON CONFLICT (account, id) DO UPDATE SET json = excluded.json, fetched_at = excluded.fetched_at
                """)
            for c in conversations {
                guard let id = c["id"]?.stringValue else { continue }
                try upsert.run([key, .text(id), .text(c.serialized()), .integer(now)])
            }
            try db.run(
                """
                INSERT INTO sync_state (account, conversations_at) VALUES (?, ?)
                ON CONFLICT (account) DO UPDATE SET conversations_at = excluded.conversations_at
                """, [key, .integer(now)])
        }
    }

    /// The cached conversation list and when it was fetched (nil: never).
    public func conversations(account: ChatAccount) throws -> (conversations: [JSON], fetchedAt: Int64?) {
        try reading { db in
            let key = SQLiteValue.text(account.key)
            let at = try db.queryFirst("SELECT conversations_at FROM sync_state WHERE account = ?", [key])?.int64("conversations_at")
            let rows = try db.query("SELECT json FROM conversations WHERE account = ? ORDER BY id", [key])
            return (rows.compactMap { $0.string("json").flatMap { try? JSON.parse($0) } }, at)
        }
    }

    /// Where the cache's complete history of a conversation starts (nil: unknown).
    func coveredFrom(account: ChatAccount, conversation: String) throws -> Int64? {
        try reading {
            try $0.queryFirst(
                "SELECT covered_from FROM conversations WHERE account = ? AND id = ?",
                [.text(account.key), .text(conversation)])
        }?.int64("covered_from")
    }

    /// Records that the cache now holds every message of `conversation` from seq `from` on (0: all).
    static func extendCoverage(account: ChatAccount, conversation: String, from: Int64, _ db: SQLiteDatabase, now: Int64) throws {
        try db.run(
            """
            INSERT INTO conversations (account, id, json, fetched_at, covered_from) VALUES (?, ?, '{}', 0, ?)
            ON CONFLICT (account, id) DO UPDATE SET covered_from = min(coalesce(covered_from, excluded.covered_from), excluded.covered_from)
            """, [.text(account.key), .text(conversation), .integer(from)])
    }

    // MARK: Sync state

    public func syncState(account: ChatAccount) throws -> (cursor: String?, syncedAt: Int64?) {
        let row = try reading { try $0.queryFirst("SELECT cursor, synced_at FROM sync_state WHERE account = ?", [.text(account.key)]) }
        return (row?.string("cursor"), row?.int64("synced_at"))
    }

    static func setSyncState(account: ChatAccount, cursor: String?, syncedAt: Int64, _ db: SQLiteDatabase) throws {
        try db.run(
            """
            INSERT INTO sync_state (account, cursor, synced_at) VALUES (?, ?, ?)
            ON CONFLICT (account) DO UPDATE SET cursor = excluded.cursor, synced_at = excluded.synced_at
            """, [.text(account.key), cursor.map(SQLiteValue.text) ?? .null, .integer(syncedAt)])
    }

    /// A gap in the event stream: no conversation's cached history is known to be complete any more.
    static func forgetCoverage(account: ChatAccount, _ db: SQLiteDatabase) throws {
        try db.run("UPDATE conversations SET covered_from = NULL WHERE account = ?", [.text(account.key)])
    }

    // MARK: Friends and moments

    static func storeFriends(_ friends: [JSON], account: ChatAccount, replacing: Bool, _ db: SQLiteDatabase) throws {
        let key = SQLiteValue.text(account.key)
        if replacing { try db.run("DELETE FROM friends WHERE account = ?", [key]) }
        for f in friends {
            guard let id = f["id"]?.stringValue else { continue }
            try db.run(
                """
                INSERT INTO friends (account, id, json) VALUES (?,?,?) ON CONFLICT (account, id) DO UPDATE SET json = \
                excluded.json
                """,
                [key, .text(id), .text(f.serialized())])
        }
    }

    public func storeFriends(_ friends: [JSON], account: ChatAccount) throws {
        try transaction { db in try Self.storeFriends(friends, account: account, replacing: true, db) }
    }

    /// Adds or updates friends without touching the others (a redeemed link).
    public func addFriends(_ friends: [JSON], account: ChatAccount) throws {
        try transaction { db in try Self.storeFriends(friends, account: account, replacing: false, db) }
    }

    public func friends(account: ChatAccount) throws -> [JSON] {
        try reading { try $0.query("SELECT json FROM friends WHERE account = ? ORDER BY id", [.text(account.key)]) }.compactMap {
            $0.string("json").flatMap { try? JSON.parse($0) }
        }
    }

    /// Upserts moments and marks the outbox entries they echo `sent`.
    static func storeMoments(_ moments: [JSON], account: ChatAccount, _ db: SQLiteDatabase, now: Int64) throws {
        let key = SQLiteValue.text(account.key)
        for m in moments {
            guard let id = m["id"]?.stringValue else { continue }
            let clientId = m["clientId"]?.stringValue
            try db.run(
                """
                INSERT INTO moments (account, id, client_id, json) VALUES (?,?,?,?)
                ON CONFLICT (account, id) DO UPDATE SET json = excluded.json, client_id = excluded.client_id
                """, [key, .text(id), clientId.map(SQLiteValue.text) ?? .null, .text(m.serialized())])
            if let clientId, m["authorId"]?.stringValue == account.userId {
                try db.run(
                    """
                    UPDATE outbox SET state = 'sent', server_json = ?, error_json = NULL, updated_at = ?
                    WHERE account = ? AND kind = 'moment' AND client_id = ? AND state != 'sent'
                    """, [.text(m.serialized()), .integer(now), key, .text(clientId)])
            }
        }
    }

    public func storeMoments(_ moments: [JSON], account: ChatAccount, now: Int64) throws {
        try transaction { db in try Self.storeMoments(moments, account: account, db, now: now) }
    }
}
