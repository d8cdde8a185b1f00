import StarlineCore
import StarlineHTTP
import StarlineBulk

/// Listing many users' device sessions as an admin, one blocking request per user, for the workers of
/// `BulkEngine` (S16): the same rate gate, retries and stop rules as a bulk revocation.
public struct SessionLister: Sendable {
    public let api: PlatformAPI
    /// The run's transport (keep-alive handles for the workers); `api` gives the routes and the clock.
    let transport: any HTTPExchange
    let token: String
    /// Whose a 403 is: one user's listing refused is that user's failure while the caller is still an admin.
    public let callerCheck: BulkCallerCheck

    public init(api: PlatformAPI, transport: any HTTPExchange, token: String) {
        self.api = api
        self.transport = transport
        self.token = token
        callerCheck = BulkCallerCheck(api: api, transport: transport, token: token)
    }

    /// `GET /api/admin/users/{uid}/sessions`: the user's sessions.
    public func sessions(of user: String) -> BulkAttempt<[JSON]> {
        get("GET /api/admin/users/{uid}/sessions", "/api/admin/users/\(PlatformHTTP.segment(user))/sessions") { try $0.array("sessions") }
    }

    /// `GET /api/sessions`: the caller's own sessions.
    public func ownSessions() -> BulkAttempt<[JSON]> {
        get("GET /api/sessions", "/api/sessions") { try $0.array("sessions") }
    }

    /// `GET /api/admin/users?limit=&cursor=`: the ids on one page of the user list and the cursor of the next.
    public func users(limit: Int, cursor: String?) -> BulkAttempt<(users: [String], next: String?)> {
        var path = "/api/admin/users?limit=\(limit)"
        if let cursor { path += "&cursor=" + PercentEncoding.encode(cursor) }
        return get("GET /api/admin/users", path) { answer in
            let page = try PlatformAPI.userPage(answer)
            let ids = page.users.compactMap { $0["id"]?.stringValue }
            guard ids.count == page.users.count else { throw answer.malformed("a user without an 'id' string") }
            return (ids, page.nextCursor)
        }
    }

    private func get<Value>(_ route: String, _ path: String, _ read: (AnswerReader) throws -> Value) -> BulkAttempt<Value> {
        let request = HTTPRequestSpec(
            method: "GET", url: api.url(path), headers: [("Accept", "application/json"), ("Authorization", "Bearer " + token)])
        return BulkRequest.attempt(
            BulkRequest.send(transport, request, route: route), route: route, now: api.clock.now(), callerCheck: callerCheck
        ) { reply in
            BulkRequest.success(api, reply, route: route, read)
        }
    }
}
