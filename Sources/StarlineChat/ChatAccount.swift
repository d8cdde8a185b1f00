import StarlineCore

/// Whose chat this is: the chat service (its base URL) and the signed-in user. Every cached row and outbox
/// entry is keyed by it, so a switch of account (another `sl-login`) never shows or sends one account's
/// messages as another's (S14, W8).
public struct ChatAccount: Sendable, Equatable {
    public let chatBase: BaseURL
    public let userId: String

    public init(chatBase: BaseURL, userId: String) {
        self.chatBase = chatBase
        self.userId = userId
    }

    /// The `account` column: the base URL (no trailing slash) and the user id, which contains no "|"…
    /// or, if a server ever sends one, still cannot collide: the base URL never contains "|" (W4 refuses it).
    public var key: String { chatBase.description + "|" + userId }
}

/// Where a read's answer came from, so a cached answer never passes for a fresh one: the server now, or
/// the cache as of `freshAsOf`.
public struct ReadSource: Sendable {
    public enum Origin: String, Sendable { case cache, server }
    public var origin: Origin
    /// Unix seconds: when the data was last fetched from the server.
    public var freshAsOf: Int64?

    public init(_ origin: Origin, freshAsOf: Int64?) {
        self.origin = origin
        self.freshAsOf = freshAsOf
    }

    /// Adds `source` and `freshAsOf` to a record.
    public func annotate(_ record: JSON) -> JSON {
        var out = record
        out.set("source", .string(origin.rawValue))
        out.set("freshAsOf", freshAsOf.map { .string(Timestamp.rfc3339String($0)) } ?? .null)
        return out
    }
}
