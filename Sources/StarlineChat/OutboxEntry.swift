import StarlineCore
import StarlineSQLite

/// What an outbox entry sends: a message to a conversation, or a moment (W7, the same outbox).
public enum OutboxKind: String, Sendable, CaseIterable {
    case message, moment
}

/// The life of an outbox entry (W5):
///
/// `pending → sending → sent | failed | unknown`, and back to `pending` when an attempt found no server
/// (a network error before the request went out, a 5xx, a 429 after the run's attempts). `unknown`: the
/// request may have been written and no answer came (a timeout, a reset) — the next attempt first looks for
/// the echo by clientId and only then sends again, with the same clientId. `sending` names its process; an
/// entry whose process is gone is `unknown` for whoever finds it.
///
/// The messages of one conversation leave in the order they were queued (W5): one is not claimed while a
/// message queued before it in its conversation is in any state but `sent`. It is *held* then — it stays
/// `pending` and output names the earliest such entry as `heldBy` — behind a `failed` one until that one is
/// retried or dropped.
public enum OutboxState: String, Sendable, CaseIterable {
    case pending, sending, sent, failed, unknown

    /// Still to be delivered (flush takes these).
    public var isOpen: Bool { self == .pending || self == .unknown || self == .sending }
}

/// One row of the outbox.
public struct OutboxEntry: Sendable, Equatable {
    public var kind: OutboxKind
    public var clientId: String
    /// The conversation of a message; "" for a moment.
    public var conversationId: String
    public var text: String
    public var state: OutboxState
    public var attempts: Int
    public var createdAt: Int64
    public var updatedAt: Int64
    /// The process sending it, while `sending`.
    public var owner: ProcessIdentity?
    /// The server's record once sent (the message or moment object).
    public var server: JSON?
    /// The last error (`{"code","message",…}`).
    public var error: JSON?
    /// Order of creation (the outbox is flushed in it).
    public var seq: Int64

    init(row: SQLiteRow) throws {
        guard let kind = row.string("kind").flatMap(OutboxKind.init), let state = row.string("state").flatMap(OutboxState.init),
            let clientId = row.string("client_id"), let text = row.string("text")
        else {
            throw StarlineError(
                .storage,
                "the chat store has an outbox row it cannot read (kind \(row.string("kind") ?? "?"), state \(row.string("state") ?? "?"))")
        }
        self.kind = kind
        self.clientId = clientId
        conversationId = row.string("conversation_id") ?? ""
        self.text = text
        self.state = state
        attempts = row.int("attempts") ?? 0
        createdAt = row.int64("created_at") ?? 0
        updatedAt = row.int64("updated_at") ?? 0
        owner = row.string("owner").flatMap(ProcessIdentity.init)
        server = row.string("server_json").flatMap { try? JSON.parse($0) }
        error = row.string("error_json").flatMap { try? JSON.parse($0) }
        seq = row.int64("seq") ?? 0
    }

    /// The output record (docs/formats.md, "Outbox entry"); fields are only ever added.
    public var json: JSON {
        var fields: [(String, JSON)] = [
            ("type", .string("outbox")), ("kind", .string(kind.rawValue)), ("clientId", .string(clientId))
        ]
        if kind == .message { fields.append(("conversationId", .string(conversationId))) }
        fields += [
            ("text", .string(text)), ("state", .string(state.rawValue)), ("attempts", .int(attempts)),
            ("createdAt", .string(Timestamp.rfc3339String(createdAt))), ("updatedAt", .string(Timestamp.rfc3339String(updatedAt))),
            (kind.rawValue, server ?? .null), ("error", error ?? .null)
        ]
        return .object(fields)
    }

    /// clientIds the server accepts (docs/openapi.yaml): 1–128 of A-Z a-z 0-9 . _ -
    public static func isValidClientId(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count)
            && id.utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F || b == 0x2E
            }
    }
}
