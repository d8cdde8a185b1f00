import StarlineCore
import StarlineHTTP

/// The admin routes (role admin, else FORBIDDEN).
extension PlatformAPI {
    /// `GET /api/admin/users`: one page of users in id order (`limit` 1...1000, the server's default 100
    /// when nil) and the cursor of the next page, nil on the last. Pass `nextCursor` back unchanged.
    public func adminUsers(token: String, limit: Int?, cursor: String?) async throws -> (users: [JSON], nextCursor: String?) {
        let route = "GET /api/admin/users"
        var query: [(String, String)] = []
        if let limit { query.append(("limit", String(limit))) }
        if let cursor { query.append(("cursor", cursor)) }
        let json = try await call(route, "/api/admin/users" + (query.isEmpty ? "" : "?" + PlatformAPI.formEncode(query)), token: token)
        return try PlatformAPI.userPage(AnswerReader(json: json, route: route))
    }

    /// One page of `GET /api/admin/users`: the users and the cursor of the next page (nil on the last).
    static func userPage(_ answer: AnswerReader) throws -> (users: [JSON], nextCursor: String?) {
        let next: String?
        switch answer.json["nextCursor"] {
        case nil, .null?: next = nil
        case .string(let text)? where !text.isEmpty: next = text
        default: throw answer.malformed("'nextCursor' is not a non-empty string or null")
        }
        return (try answer.array("users"), next)
    }

    public func adminSessions(token: String, user: String) async throws -> [JSON] {
        let route = "GET /api/admin/users/{uid}/sessions"
        let json = try await call(route, "/api/admin/users/\(PlatformHTTP.segment(user))/sessions", token: token)
        return try AnswerReader(json: json, route: route).array("sessions")
    }

    public func adminRevokeSession(token: String, user: String, id: String) async throws -> Bool {
        let route = "DELETE /api/admin/users/{uid}/sessions/{id}"
        let json = try await call(
            route, "/api/admin/users/\(PlatformHTTP.segment(user))/sessions/\(PlatformHTTP.segment(id))",
            method: "DELETE", token: token)
        return try AnswerReader(json: json, route: route).bool("revoked")
    }

    public func adminRevokeAll(token: String, user: String) async throws -> Int {
        let route = "POST /api/admin/users/{uid}/sessions/revoke-all"
        let json = try await call(route, "/api/admin/users/\(PlatformHTTP.segment(user))/sessions/revoke-all", method: "POST", token: token)
        return Int(try AnswerReader(json: json, route: route).int("revoked"))
    }
}
