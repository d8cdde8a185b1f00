import StarlineCore

/// A complete HTTP answer, whatever its status: the transport throws only when there is no answer.
public struct HTTPReply: Sendable {
    public var status: Int
    /// Header names lowercased; repeated headers joined with ", ".
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as JSON; `DATA_ERROR` when it is not.
    public func json() throws -> JSON {
        do {
            return try JSON.parse(body)
        } catch let error as StarlineError {
            throw StarlineError(
                .data, "the server's answer (HTTP \(status)) is not JSON: \(error.message)",
                details: .object([("status", .int(status))]))
        }
    }
}
