import StarlineCore
import StarlineSQLite
import StarlineCrypto
import StarlineHTTP

/// `tail`: the event stream as JSON Lines, optionally for one conversation, optionally following it, and
/// with `--cursor NAME` a named consumer whose position lives in the chat store (W9).
///
/// Delivery is at least once and, with the cursor, never twice: a page is handed to `deliver` (which
/// prints and flushes it), and only then are the cursor and the per-conversation positions committed. A
/// consumer killed between the two sees that page again; one killed before sees it for the first time.
/// One process per named cursor (an flock, CURSOR_IN_USE otherwise), so two never both deliver an event.
///
/// When the server has dropped the events after the cursor, `tail` delivers an explicit `gap` record, then
/// the messages after each conversation's position from history (`backfill: true`), then the retained
/// events from the start — message events at or below a position are not repeated.
public final class EventTail {
    public enum Start: String, Sendable, CaseIterable { case start, now }

    public let api: ChatAPI
    public let store: ChatStore
    public let account: ChatAccount
    public let name: String?
    public let conversation: String?
    let sameAccount: @Sendable () -> Bool
    private var lock: FileLock?
    private var cursor: String?
    private var positions: [String: Int64] = [:]
    private var delivered = 0

    public init(
        api: ChatAPI, store: ChatStore, account: ChatAccount, name: String?, conversation: String?,
        sameAccount: @escaping @Sendable () -> Bool
    ) {
        self.api = api
        self.store = store
        self.account = account
        self.name = name
        self.conversation = conversation
        self.sameAccount = sameAccount
    }

    /// Named cursors: 1–64 characters from A-Z a-z 0-9 . _ -
    public static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && OutboxEntry.isValidClientId(name)
    }

    /// Runs until the stream is drained (or, following, until killed). `deliver` prints and flushes a page;
    /// `notice` reports reconnects on stderr.
    ///
    /// The cursors are a `CursorChain`: a cursor the server gave before is a cycle (DATA_ERROR) — every one of
    /// a drain, the newest `CursorChain.followWindow` when following. Following, an answer that brings no new
    /// event (no seq above every seq seen) before its long poll was half over is no progress: such answers in
    /// a row are spaced out with a growing pause (0.5 s up to 30 s), so a server answering at once with
    /// nothing (or with old events under new cursors) cannot drive a hot loop.
    public func run(
        follow: Bool, from start: Start, pollSeconds: Int = 25,
        deliver: ([JSON]) throws -> Void, notice: (String) -> Void
    ) throws {
        let isNew = try open()
        if isNew && start == .now { try skipToHead() }
        var chain = CursorChain(route: ChatEvents.syncRoute, start: cursor, following: follow)
        var highest: Int64?
        var failures = 0, idle = 0, gapsInARow = 0
        while true {
            let answer: SyncAnswer
            let asked = MonotonicClock.nanoseconds()
            do {
                answer = try api.sync(since: cursor, limit: 1000, timeout: follow ? pollSeconds : 0)
                failures = 0
            } catch let error as StarlineError where follow && error.exitStatus == .transient && !RetryPolicy.failsEveryRequest(error) {
                // A certificate that does not verify is not an outage: reconnecting meets the same certificate.
                failures += 1
                let wait = RetryPolicy(retries: 0, baseDelay: 0.5, maxDelay: 30).backoff(min(failures - 1, 16))
                notice("sl-chat tail: \(error.message); reconnecting in \(format1(wait)) s")
                api.clock.pause(wait)
                continue
            }
            let took = MonotonicClock.nanoseconds() - asked
            guard sameAccount() else { throw OutboxDelivery.accountChanged() }
            switch answer {
            case .expired(let code):
                guard cursor != nil else { throw ChatAPI.malformed("GET /v1/sync", "the server refused a sync from the start (\(code))") }
                gapsInARow += 1
                guard gapsInARow <= ChatEvents.maximumGapsInARow else { throw ChatEvents.tooManyGaps(gapsInARow) }
                try deliver([ChatEvents.gap(after: cursor, serverCode: code, now: api.clock.now())])
                try backfill(deliver: deliver)
                cursor = nil
                try commit([], cursor: nil, delivered: 0)
                // A new stream: a server that was reset issues its cursors and seqs again.
                chain.restart(at: nil)
                highest = nil
            case .events(let events, let next):
                if !events.isEmpty && next == cursor {
                    throw ChatAPI.malformed("GET /v1/sync", "the cursor did not move past a page of events")
                }
                // Before anything is delivered: a cycle would hand the consumer old events again.
                try chain.move(to: next)
                let newHighest = ChatEvents.newHighest(events, above: highest)
                if let newHighest { highest = newHighest }
                let fresh = events.filter(isNew(_:))
                if !fresh.isEmpty { try deliver(fresh) }
                try commit(events, cursor: next, delivered: fresh.count)
                cursor = next
                if events.isEmpty {
                    gapsInARow = 0  // the end of the stream
                    if !follow { return }
                }
                guard follow else { continue }
                if newHighest != nil || took >= UInt64(pollSeconds) * 500_000_000 {
                    idle = 0
                } else {
                    idle += 1
                    let pause = RetryPolicy(retries: 0, baseDelay: 0.5, maxDelay: 30).backoff(min(idle - 1, 16))
                    notice(
                        "sl-chat tail: the server answered at once with no new event (\(idle) in a row); asking again in \(format1(pause)) s"
                    )
                    api.clock.pause(pause)
                }
            }
        }
    }

    /// True for an event this consumer has not delivered and that passes the conversation filter.
    private func isNew(_ event: JSON) -> Bool {
        let conv = ChatEvents.conversation(of: event)
        if let conversation, conv != conversation { return false }
        if let conv, let seq = ChatEvents.message(of: event)?.seq, let at = positions[conv], seq <= at { return false }
        return true
    }

    /// Loads (or creates) the consumer; true when it is new. Takes the named cursor's lock.
    private func open() throws -> Bool {
        guard let name else { return true }
        let lock = try FileLock(path: try Self.lockPath(store: store, account: account, name: name))
        guard try lock.tryLock() else {
            throw StarlineError(
                .cursorInUse, "another sl-chat tail is reading with the cursor '\(name)'; one consumer per cursor at a time",
                details: .object([("cursor", .string(name))]))
        }
        self.lock = lock
        let key = SQLiteValue.text(account.key)
        let row = try store.reading { try $0.queryFirst("SELECT * FROM consumers WHERE account = ? AND name = ?", [key, .text(name)]) }
        guard let row else { return true }
        let filter = row.string("conversation_filter")
        guard filter == conversation else {
            throw StarlineError(
                .usage,
                "the cursor '\(name)' follows \(filter.map { "conversation \($0)" } ?? "every conversation"); use another cursor name for \(conversation.map { "conversation \($0)" } ?? "every conversation")"
            )
        }
        cursor = row.string("cursor")
        delivered = row.int("delivered") ?? 0
        for p in try store.reading({
            try $0.query("SELECT conversation_id, seq FROM consumer_positions WHERE account = ? AND name = ?", [key, .text(name)])
        }) {
            if let c = p.string("conversation_id"), let s = p.int64("seq") { positions[c] = s }
        }
        return false
    }

    /// `--from now`: moves a new consumer to the end of the stream without delivering anything.
    private func skipToHead() throws {
        var chain = CursorChain(route: ChatEvents.syncRoute, start: cursor)
        var gaps = 0
        while true {
            switch try api.sync(since: cursor, limit: 1000, timeout: 0) {
            case .expired(let code):
                guard cursor != nil else { throw ChatAPI.malformed("GET /v1/sync", "the server refused a sync from the start (\(code))") }
                gaps += 1
                guard gaps <= ChatEvents.maximumGapsInARow else { throw ChatEvents.tooManyGaps(gaps) }
                cursor = nil
                chain.restart(at: nil)
            case .events(let events, let next):
                for event in events {
                    if let m = ChatEvents.message(of: event) { positions[m.conversationId] = max(positions[m.conversationId] ?? 0, m.seq) }
                }
                try commit(events, cursor: next, delivered: 0, advanceOnly: true)
                if events.isEmpty || next == cursor { return }
                try chain.move(to: next)
                cursor = next
            }
        }
    }

    /// The messages after each conversation's position, from history, delivered page by page.
    private func backfill(deliver: ([JSON]) throws -> Void) throws {
        let conversations = try conversation.map { [$0] } ?? api.conversations().compactMap { $0["id"]?.stringValue }
        let route = "GET /v1/conversations/{id}/messages"
        for conv in conversations {
            // Each page starts after the newest message delivered, so the `after` values are a chain too.
            var chain = CursorChain(route: route, start: "after=\(positions[conv] ?? 0)")
            while true {
                let after = positions[conv] ?? 0
                let page = try api.messages(conversation: conv, after: after, limit: 200)
                guard sameAccount() else { throw OutboxDelivery.accountChanged() }
                // W8, and what keeps the chain moving: every message is of this conversation and after `after`.
                guard page.allSatisfy({ $0.conversationId == conv && $0.seq > after }) else {
                    throw ChatAPI.malformed(
                        route, "a page after seq \(after) of \(conv) holds a message of another conversation or at or before that seq")
                }
                if page.isEmpty { break }
                try deliver(page.map(ChatEvents.backfilled))
                let events = page.map { m -> JSON in .object([("type", .string("message")), ("message", m.json)]) }
                try commit(events, cursor: cursor, delivered: page.count)
                if page.count < 200 { break }
                try chain.advance(to: "after=\(positions[conv] ?? 0)")
            }
        }
    }

    /// Records what was delivered (`count` of `events` were handed to `deliver`): positions, cursor and the
    /// cache, in one transaction.
    private func commit(_ events: [JSON], cursor next: String?, delivered count: Int, advanceOnly: Bool = false) throws {
        let now = api.clock.now()
        var moved: [String: Int64] = [:]
        for event in events {
            guard let m = ChatEvents.message(of: event) else { continue }
            if let conversation, m.conversationId != conversation { continue }
            if m.seq > (positions[m.conversationId] ?? 0) || advanceOnly {
                moved[m.conversationId] = max(moved[m.conversationId] ?? 0, m.seq)
            }
        }
        delivered += count
        for (c, s) in moved { positions[c] = max(positions[c] ?? 0, s) }
        // Not durable: a commit lost in a power cut means the page is delivered again (at least once).
        try store.transaction(durable: false) { db in
            try ChatEvents.store(events, account: account, db, now: now)
            guard let name else { return }
            let key = SQLiteValue.text(account.key)
            try db.run(
                """
                INSERT INTO consumers (account, name, cursor, conversation_filter, delivered, updated_at) VALUES (?,?,?,?,?,?)
                ON CONFLICT (account, name) DO UPDATE SET cursor = excluded.cursor, delivered = excluded.delivered, updated_at = excluded.updated_at
                """,
                [
                    key, .text(name), next.map(SQLiteValue.text) ?? .null, conversation.map(SQLiteValue.text) ?? .null,
                    .integer(Int64(delivered)), .integer(now)
                ])
            for (c, _) in moved {
                try db.run(
                    """
                    INSERT INTO consumer_positions (account, name, conversation_id, seq) VALUES (?,?,?,?)
                    ON CONFLICT (account, name, conversation_id) DO UPDATE SET seq = max(seq, excluded.seq)
                    """, [key, .text(name), .text(c), .integer(positions[c] ?? 0)])
            }
        }
    }

    /// One lock file per account and cursor name, in the state directory's lock directory.
    static func lockPath(store: ChatStore, account: ChatAccount, name: String) throws -> String {
        let directory = SQLiteStore.directory(of: store.path) + "/locks"
        try PrivateFiles.ensurePrivateDirectory(directory)
        let digest = Base64.encodeURL(Array(SHA256.hash(Array((account.key + "\n" + name).utf8)).prefix(16)))
        return directory + "/chat-cursor-" + digest
    }
}

/// One decimal: "0.5", "12.0".
func format1(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}
