import StarlineCore

/// A chat message as the server describes it (docs/openapi.yaml): `{id, clientId, conversationId, senderId, text,
/// createdAt, seq}`. Output adds fields, never renames them (docs/formats.md, "Chat records").
public struct ChatMessage: Sendable, Equatable {
    public var id: String
    public var clientId: String?
    public var conversationId: String
    public var senderId: String?
    public var text: String
    public var createdAt: String?
    public var seq: Int64

    public init(id: String, clientId: String?, conversationId: String, senderId: String?, text: String, createdAt: String?, seq: Int64) {
        self.id = id
        self.clientId = clientId
        self.conversationId = conversationId
        self.senderId = senderId
        self.text = text
        self.createdAt = createdAt
        self.seq = seq
    }

    /// Reads a message object of an answer; DATA_ERROR naming the route when a required field is missing.
    public init(json: JSON, route: String) throws {
        func required(_ key: String) throws -> String {
            guard let value = json[key]?.stringValue, !value.isEmpty else {
                throw StarlineError(
                    .data, "unexpected answer from \(route): message '\(key)' is missing or not a string",
                    details: .object([("route", .string(route))]))
            }
            return value
        }
        guard let seq = json["seq"]?.intValue, seq >= 0 else {
            throw StarlineError(
                .data, "unexpected answer from \(route): message 'seq' is missing or not a non-negative integer",
                details: .object([("route", .string(route))]))
        }
        guard let text = json["text"]?.stringValue else {
            throw StarlineError(
                .data, "unexpected answer from \(route): message 'text' is missing or not a string",
                details: .object([("route", .string(route))]))
        }
        self.init(
            id: try required("id"), clientId: json["clientId"]?.stringValue, conversationId: try required("conversationId"),
            senderId: json["senderId"]?.stringValue, text: text, createdAt: json["createdAt"]?.stringValue, seq: seq)
    }

    public var json: JSON {
        .object([
            ("id", .string(id)), ("clientId", .optional(clientId)), ("conversationId", .string(conversationId)),
            ("senderId", .optional(senderId)), ("text", .string(text)), ("createdAt", .optional(createdAt)), ("seq", .int(seq))
        ])
    }
}
