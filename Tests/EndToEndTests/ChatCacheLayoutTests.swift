import Foundation
import StarlineCore
import StarlineSQLite
import StarlineTestSupport
import Testing

@testable import StarlineChat

/// How chat.db holds messages (W5): by their place in the conversation, so a sync of many messages writes
/// each page of the cache about once, the same seq again updates its message, and a cache from before the
/// layout keeps what it held.
@Suite struct ChatCacheLayoutTests {
    let home = TemporaryDirectory("chat-cache-layout")
    let base = try! BaseURL(validating: "http://127.0.0.1:8080/chat")

    var paths: StarlinePaths {
        StarlinePaths(config: home.file("config"), state: home.file("state"), data: home.file("data"), runtime: home.file("runtime"))
    }

    /// A server id as the dev server makes them: random, so in no useful order.
    static func randomId() -> String {
        "msg_" + (0..<10).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    static func message(_ conversation: String, _ seq: Int64, id: String = randomId(), text: String? = nil) -> ChatMessage {
        ChatMessage(
            id: id, clientId: "cl_\(conversation)_\(seq)", conversationId: conversation, senderId: "u_bob",
            text: text ?? "message \(seq) of \(conversation)", createdAt: "2026-12-05T10:00:00Z", seq: seq)
    }

    @Test("W5 a sync of 40,000 messages with random ids writes its cache about once: the WAL stays within 3× the database")
    func w5SyncWritesTheCacheAboutOnce() throws {
        let store = try ChatStore(paths: paths)
        let account = ChatAccount(chatBase: base, userId: "u_alice")
        // No checkpoint while it runs: the WAL then holds every page each commit wrote. With messages keyed by
        // their random server ids, each commit of 1,000 rewrote most leaves of the table (about 20× the
        // database); in seq order, a commit appends to the end of each conversation.
        try store.store.database.execute("PRAGMA wal_autocheckpoint = 0")
        let conversations = ["c_team", "c_alice_bob", "c_family", "c_ops"]
        var seq: Int64 = 0
        for _ in 0..<40 {
            var batch: [ChatMessage] = []
            for _ in 0..<250 {
                seq += 1
                for conversation in conversations { batch.append(Self.message(conversation, seq)) }
            }
            try store.transaction(durable: false) { db in try ChatStore.storeMessages(batch, account: account, db, now: 1) }
        }
        let pageSize = try #require(try store.store.database.queryFirst("PRAGMA page_size")?.int64("page_size"))
        let pages = try #require(try store.store.database.queryFirst("PRAGMA page_count")?.int64("page_count"))
        let wal = try FileManager.default.attributesOfItem(atPath: store.path + "-wal")[.size] as? Int64 ?? 0
        #expect(pages * pageSize > 2_000_000, "the cache holds the 40,000 messages")
        #expect(wal <= 3 * pages * pageSize, "WAL \(wal) bytes for a database of \(pages * pageSize)")
        let read = try store.messages(account: account, conversation: "c_ops", before: nil, after: 9_990, limit: 100)
        #expect(read.map(\.seq) == Array(9_991...10_000))
    }

    @Test("W5 the same seq of a conversation again is the same message, updated (an edit, or a page fetched twice)")
    func w5SameSeqIsTheSameMessage() throws {
        let store = try ChatStore(paths: paths)
        let account = ChatAccount(chatBase: base, userId: "u_alice")
        let other = ChatAccount(chatBase: base, userId: "u_carol")
        try store.transaction { db in
            try ChatStore.storeMessages(
                [Self.message("c_team", 1, id: "msg_a"), Self.message("c_team", 2, id: "msg_b")], account: account, db, now: 1)
            try ChatStore.storeMessages([Self.message("c_team", 1, id: "msg_a", text: "carol's copy")], account: other, db, now: 1)
        }
        try store.transaction { db in
            try ChatStore.storeMessages([Self.message("c_team", 1, id: "msg_a", text: "edited")], account: account, db, now: 2)
        }
        let read = try store.messages(account: account, conversation: "c_team", before: nil, after: nil, limit: 10)
        #expect(read.map(\.id) == ["msg_a", "msg_b"])
        #expect(read.map(\.text) == ["edited", "message 2 of c_team"])
        let carol = try store.messages(account: other, conversation: "c_team", before: nil, after: nil, limit: 10)
        #expect(carol.map(\.text) == ["carol's copy"], "S14: another account's row is its own")
    }

    @Test("W5 a chat cache written before messages were keyed by seq keeps every message, in seq order")
    func w5CacheFromBeforeTheSeqKeyKeepsItsMessages() throws {
        let path = paths.state + "/chat.db"
        let account = ChatAccount(chatBase: base, userId: "u_alice")
        do {
            let old = try SQLiteStore(path: path, name: "the chat store", migrations: Array(ChatSchema.migrations.prefix(2)))
            try old.withTransaction { db in
                for (id, seq) in [("msg_z", 3), ("msg_y", 1), ("msg_x", 2)] {
                    try db.run(
                        """
                        INSERT INTO messages (account, id, conversation_id, client_id, sender_id, text, created_at, seq) VALUES \
                        (?,?,?,?,?,?,?,?)
                        """,
                        [
                            .text(account.key), .text(id), .text("c_team"), .null, .text("u_bob"), .text("text \(seq)"), .null,
                            .integer(Int64(seq))
                        ])
                }
            }
        }
        let store = try ChatStore(paths: paths)
        let read = try store.messages(account: account, conversation: "c_team", before: nil, after: nil, limit: 10)
        #expect(read.map(\.id) == ["msg_y", "msg_x", "msg_z"])
        #expect(read.map(\.text) == ["text 1", "text 2", "text 3"])
        #expect(try store.store.database.queryFirst("PRAGMA user_version")?.int64("user_version") == Int64(ChatSchema.migrations.count))
    }
}
