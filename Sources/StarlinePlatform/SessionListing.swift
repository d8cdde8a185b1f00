import StarlineCore

/// Listing many users' device sessions as an admin, one blocking request per user, for the workers of
/// `BulkEngine` (issue 11 item 1): the same rate gate, retries and stop rules as a bulk revocation.
public struct SessionLister: Sendable {
    public let api: PlatformAPI
    let transport: HTTPTransport
    let token: String

    public init(api: PlatformAPI, transport: HTTPTransport, token: String) {
        self.api = api
        self.transport = transport
        self.token = token
    }

    /// `GET /api/admin/users/{uid}/sessions`: the user's sessions.
    public func sessions(of user: String) -> BulkAttempt<[JSON]> {
        let route = "GET /api/admin/users/{uid}/sessions"
        let answer = get(route, "/api/admin/users/\(PlatformAPI.segment(user))/sessions")
        return answer.map(route) { json in json["sessions"]?.arrayValue }
    }

    /// `GET /api/admin/users?limit=&cursor=`: one page of the user list and the cursor of the next.
    public func users(limit: Int, cursor: String?) -> BulkAttempt<(users: [String], next: String?)> {
        let route = "GET /api/admin/users"
        var path = "/api/admin/users?limit=\(limit)"
        if let cursor { path += "&cursor=" + PercentEncoding.encode(cursor) }
        return get(route, path).map(route) { json in
            guard let users = json["users"]?.arrayValue else { return nil }
            let ids = users.compactMap { $0["id"]?.stringValue }
            guard ids.count == users.count else { return nil }
            return (ids, json["nextCursor"]?.stringValue)
        }
    }

    struct Answer {
        var outcome: Result<HTTPReply, StarlineError>

        /// 2xx through `read` (nil: malformed); errors as the engine takes them (see `SessionRevoker.classify`).
        func map<Value>(_ route: String, _ read: (JSON) -> Value?) -> BulkAttempt<Value> {
            switch outcome {
            case .failure(let error):
                let transient = error.retryable && (error.code == .network || error.code == .timeout)
                return transient ? .transient(error) : .failed(error)
            case .success(let reply):
                switch reply.status {
                case 200...299:
                    guard let json = try? reply.json(), let value = read(json) else {
                        return .failed(StarlineError(.data, "unexpected answer from \(route) (HTTP \(reply.status))", details: .object([("route", .string(route))])))
                    }
                    return .done(value)
                case 429:
                    return .throttled(retryAfter: reply.header("Retry-After").flatMap { RetryPolicy.parseRetryAfter($0) })
                default:
                    let error = PlatformAPI.error(status: reply.status, body: reply.body, headers: reply.headers, route: route)
                    if error.exitStatus == .sessionEnded || error.exitStatus == .forbidden { return .stopRun(error) }
                    return RetryPolicy.isRetryable(status: reply.status) ? .transient(error) : .failed(error)
                }
            }
        }
    }

    private func get(_ route: String, _ path: String) -> Answer {
        let request = HTTPRequestSpec(method: "GET", url: api.url(path), headers: [("Accept", "application/json"), ("Authorization", "Bearer " + token)])
        do {
            return Answer(outcome: .success(try transport.transfer(request, cancel: nil)))
        } catch let error as StarlineError {
            var e = error
            e.details = PlatformAPI.adding([("route", .string(route))], to: e.details)
            return Answer(outcome: .failure(e))
        } catch {
            return Answer(outcome: .failure(StarlineError(.internalError, "\(error)")))
        }
    }
}
