import StarlineCore
import StarlineSQLite

/// Which pages of a conversation's history the cache can answer without the server.
///
/// Each conversation records `covered_from`: every message with seq ≥ it is cached (NULL: nothing known).
/// A page fetched from the server extends it when the page touches the covered range or reaches an end
/// of the history; events from `sync`/`tail` keep the top of the range current; a gap in the event stream
/// forgets it. A page is served from the cache only when the range it needs lies inside, and the cache was
/// synced recently enough (`ReadOptions.maxAge`).
public struct HistoryPage: Sendable, Equatable {
    public var before: Int64?
    public var after: Int64?
    public var limit: Int

    public init(before: Int64?, after: Int64?, limit: Int) {
        self.before = before
        self.after = after
        self.limit = limit
    }
}

extension ChatStore {
    /// The page from the cache, or nil when the cache cannot be known to hold all of it.
    public func cachedHistory(_ page: HistoryPage, account: ChatAccount, conversation: String) throws -> [ChatMessage]? {
        guard let covered = try coveredFrom(account: account, conversation: conversation) else { return nil }
        if let after = page.after {
            guard after + 1 >= covered else { return nil }
        } else if covered > 0 {
            // The newest `limit` before `before`: all of them must lie at or above the covered start.
            guard try cachedCount(account: account, conversation: conversation, from: covered, before: page.before) >= page.limit else {
                return nil
            }
        }
        return try messages(account: account, conversation: conversation, before: page.before, after: page.after, limit: page.limit)
    }

    /// Stores a page fetched from the server and extends the conversation's covered range when it can.
    public func storeHistory(_ messages: [ChatMessage], page: HistoryPage, account: ChatAccount, conversation: String, now: Int64) throws {
        try transaction { db in
            try Self.storeMessages(messages, account: account, db, now: now)
            let covered = try db.queryFirst(
                "SELECT covered_from FROM conversations WHERE account = ? AND id = ?",
                [.text(account.key), .text(conversation)])?.int64("covered_from")
            let full = messages.count >= page.limit
            var from: Int64?
            if let after = page.after {
                // Covers (after, last], or (after, before) / (after, newest] when the page was not full; it
                // extends the coverage when its top meets the covered range (or is the newest message).
                let last = messages.last?.seq ?? after
                let reaches: Bool
                if let before = page.before {
                    reaches = covered.map { before >= $0 && (!full || last + 1 >= $0) } ?? false
                } else {
                    reaches = !full || covered.map { last + 1 >= $0 } ?? false
                }
                if reaches { from = after + 1 }
            } else {
                // Covers [first, before); from the very start when the page was not full.
                let start = full ? (messages.first?.seq ?? 0) : 0
                if page.before == nil {
                    from = start
                } else if let covered, let before = page.before, before >= covered {
                    from = start
                }
            }
            if let from { try Self.extendCoverage(account: account, conversation: conversation, from: from, db, now: now) }
        }
    }
}
