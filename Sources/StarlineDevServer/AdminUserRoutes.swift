import StarlineCore
import StarlineSQLite

/// `GET /api/admin/users`: every user, paged by id so that `sl-sessions list --all-users` sees each
/// user exactly once even while users are added or removed between pages.
extension PlatformRoutes {
    static func adminListUsers(_ c: RouteContext) throws -> HTTPResponse {
        try requireAdminRole(c)
        let limit = try ChatRoutes.intQuery(c, "limit", 1...Int64(Limits.maxUserPage)) ?? Int64(Limits.defaultUserPage)
        let after = try c.request.queryValue("cursor").map(UserCursor.decode) ?? ""
        // One row more than the page says whether there is a next page, without a count(*) per page.
        let rows = try c.db.query(
            "SELECT id, name, display_name, roles, restricted FROM users WHERE id > ? ORDER BY id LIMIT ?",
            [.text(after), .integer(limit + 1)])
        let page = rows.prefix(Int(limit))
        let users: [JSON] = page.map { row in
            var user = DevServerStore.userJSON(row)
            user.set("roles", (try? JSON.parse(row.string("roles") ?? "[]")) ?? .array([]))
            user.set("restricted", .bool(row.bool("restricted") == true))
            return user
        }
        let next = rows.count > page.count ? page.last?.string("id").map(UserCursor.encode) : nil
        return .json(200, .object([("users", .array(users)), ("nextCursor", next.map(JSON.string) ?? .null)]))
    }
}

/// The admin user list's cursor: base64url of a version tag and the last id of the page. Opaque to
/// clients; keyed by id (not an offset) so a page boundary does not move when users are added.
enum UserCursor {
    static let tag = "u1:"

    static func encode(_ lastId: String) -> String { Base64.encodeURL(Array((tag + lastId).utf8)) }

    /// The id to continue after; a cursor this server could not have made is `INVALID_REQUEST`.
    static func decode(_ cursor: String) throws -> String {
        guard cursor.utf8.count <= 1024, let bytes = Base64.decode(cursor), Base64.encodeURL(bytes) == cursor,
            let text = String(validating: bytes, as: UTF8.self), text.hasPrefix(tag), text.count > tag.count
        else {
            throw APIError.invalidRequest("'cursor' is not a cursor from this list (pass nextCursor back unchanged)")
        }
        return String(text.dropFirst(tag.count))
    }
}
