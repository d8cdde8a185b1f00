import StarlineCore

/// One account's outbox as the commands see it (W5, W9): what is queued, queuing, requeuing and dropping —
/// persistence alone, never a request. The commands hold this and never the `ChatStore`: where the network and
/// the store meet (delivery, sync, tail, the reads) is a domain type the session builds, so W9 ("network and
/// persistence meet only in the domain library") is the compiler's to check.
public struct ChatOutbox: Sendable {
    /// What a command queues: a conversation, a text, and its idempotency key if it has one.
    public typealias Submission = ChatStore.Submission

    let store: ChatStore
    public let account: ChatAccount

    public init(store: ChatStore, account: ChatAccount) {
        self.store = store
        self.account = account
    }

    /// Queues `submissions` in one durable transaction (`ChatStore.enqueue`).
    public func enqueue(_ kind: OutboxKind, _ submissions: [Submission], now: Int64) throws -> [OutboxEntry] {
        try store.enqueue(kind, submissions, account: account, now: now)
    }

    /// The entries in `states` (all without), in queue order.
    public func entries(states: [OutboxState]? = nil) throws -> [OutboxEntry] {
        try store.outbox(account: account, states: states)
    }

    /// A conversation's messages not yet sent, queued before `seq` (all without), in queue order: what leaves
    /// before a new message (W5).
    public func openMessages(conversation: String, before seq: Int64? = nil) throws -> [OutboxEntry] {
        try store.openMessages(account: account, conversation: conversation, before: seq)
    }

    /// The processes holding claims on entries (client id → holder).
    public func holders() throws -> [String: String] {
        try store.holders(account: account)
    }

    public func requeue(_ clientIds: [String], now: Int64) throws -> [(clientId: String, entry: OutboxEntry?, reason: String?)] {
        try store.requeue(clientIds, account: account, now: now)
    }

    public func drop(_ clientIds: [String]) throws -> [(clientId: String, dropped: OutboxEntry?, reason: String?)] {
        try store.drop(clientIds, account: account)
    }
}
