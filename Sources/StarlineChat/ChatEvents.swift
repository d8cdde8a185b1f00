import StarlineCore
import StarlineSQLite

/// The events of `GET /v1/sync` (`{"seq","type","cursor", <type>: payload}`) as the cache takes them: a
/// message is upserted by server id (merging the echo of our own send by clientId), a friend or a moment
/// upserted; other types are passed on untouched. One function, so `sync` and `tail` store alike.
public enum ChatEvents {
    /// The message an event carries, if it is a message event.
    public static func message(of event: JSON) -> ChatMessage? {
        guard event["type"]?.stringValue == "message", let payload = event["message"] else { return nil }
        return try? ChatMessage(json: payload, route: "GET /v1/sync")
    }

    /// The conversation an event belongs to (message events only).
    public static func conversation(of event: JSON) -> String? {
        event["type"]?.stringValue == "message" ? event["message"]?["conversationId"]?.stringValue : nil
    }

    /// Stores the events of one page. Call inside a transaction.
    static func store(_ events: [JSON], account: ChatAccount, _ db: SQLiteDatabase, now: Int64) throws {
        var messages: [ChatMessage] = [], friends: [JSON] = [], moments: [JSON] = []
        for event in events {
            switch event["type"]?.stringValue {
            case "message":
                if let m = message(of: event) { messages.append(m) }
            case "friend":
                if let f = event["friend"], f["id"]?.stringValue != nil { friends.append(f) }
            case "moment":
                if let m = event["moment"], m["id"]?.stringValue != nil { moments.append(m) }
            default: break
            }
        }
        try ChatStore.storeMessages(messages, account: account, db, now: now)
        if !friends.isEmpty { try ChatStore.storeFriends(friends, account: account, replacing: false, db) }
        if !moments.isEmpty { try ChatStore.storeMoments(moments, account: account, db, now: now) }
    }

    /// The explicit record of a gap (never a silent skip): events after `cursor` are gone from the server.
    public static func gap(after cursor: String?, serverCode: String, now: Int64) -> JSON {
        .object([
            ("type", .string("gap")), ("after", .optional(cursor)), ("reason", .string(serverCode)),
            ("detectedAt", .string(Timestamp.rfc3339String(now))),
            ("message", .string("the server no longer has the events after this cursor; the messages are backfilled from history"))
        ])
    }

    /// The route of the event stream, as errors name it.
    static let syncRoute = "GET /v1/sync"

    /// Gaps in a row, with no page between them that reached the end of the stream: past this many the server
    /// is expiring every cursor it hands out (c1 → c2 → 410 → from the start → c1 …), and paging stops.
    public static let maximumGapsInARow = 8

    static func tooManyGaps(_ count: Int) -> StarlineError {
        StarlineError(
            .data, "the server expired the cursor \(count) times in a row before the stream reached its end; stopped paging",
            details: .object([("route", .string(syncRoute)), ("gaps", .int(count))]))
    }

    /// The highest `seq` of `events` when it is above `highest` (events the chain has not seen), else nil.
    /// Event seqs increase strictly along the caller's stream (docs/openapi.yaml, schema Event).
    static func newHighest(_ events: [JSON], above highest: Int64?) -> Int64? {
        guard let top = events.compactMap({ $0["seq"]?.intValue }).max() else { return nil }
        if let highest, top <= highest { return nil }
        return top
    }

    /// A message read from history to fill a gap, shaped as a message event.
    public static func backfilled(_ message: ChatMessage) -> JSON {
        .object([("type", .string("message")), ("backfill", .bool(true)), ("seq", .null), ("cursor", .null), ("message", message.json)])
    }

    /// An event as `tail` prints it: with `eventSeq`, the event's position in the account's event stream, first.
    /// The event's own `seq` has the same value, but next to the message's `seq` (the conversation's numbering,
    /// which `history --after` and `--before` take) it reads as that: `eventSeq` cannot be mistaken for it.
    /// `seq` stays, as docs/formats.md's compatibility rule requires (fields are only ever added); a gap has
    /// neither. A backfilled message has no event, so its `eventSeq` is null.
    public static func tailRecord(_ event: JSON) -> JSON {
        guard let members = event.objectValue, let seq = members.first(where: { $0.0 == "seq" })?.1 else { return event }
        return .object([("eventSeq", seq)] + members.filter { $0.0 != "eventSeq" })
    }
}
