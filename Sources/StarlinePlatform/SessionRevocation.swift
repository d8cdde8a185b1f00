import StarlineCore

/// One device session to revoke: the caller's own (`user` nil: `DELETE /api/sessions/{id}`) or a user's, as an
/// admin (`DELETE /api/admin/users/{uid}/sessions/{id}`).
public struct RevocationTarget: Sendable, Hashable {
    public var id: String
    public var user: String?

    public init(id: String, user: String?) {
        self.id = id
        self.user = user
    }
}

/// One attempt at revoking a target, blocking, for the workers of `BulkEngine` (issue 11 item 3).
public struct SessionRevoker: Sendable {
    public let api: PlatformAPI
    let transport: HTTPTransport
    let token: String
    /// The caller's user id: a target of that user goes through the caller's own route, so that `list --jsonl`
    /// (which names the user) piped into revoke works without the admin role.
    let ownUser: String?

    /// `transport` carries the run's keep-alive connections (one handle per worker, reused).
    public init(api: PlatformAPI, transport: HTTPTransport, token: String, ownUser: String?) {
        self.api = api
        self.transport = transport
        self.token = token
        self.ownUser = ownUser
    }

    public struct Answer: Sendable {
        public var attempt: BulkAttempt<BulkItemStatus>
        /// The server said this was the caller's own session (`current: true`): the local one must be cleared (S16).
        public var wasCurrent: Bool
    }

    public func revoke(_ target: RevocationTarget) -> Answer {
        let adminUser = target.user == ownUser ? nil : target.user
        let (route, path) = adminUser.map {
            ("DELETE /api/admin/users/{uid}/sessions/{id}", "/api/admin/users/\(PlatformAPI.segment($0))/sessions/\(PlatformAPI.segment(target.id))")
        } ?? ("DELETE /api/sessions/{id}", "/api/sessions/" + PlatformAPI.segment(target.id))
        let request = HTTPRequestSpec(method: "DELETE", url: api.url(path),
                                      headers: [("Accept", "application/json"), ("Authorization", "Bearer " + token)])
        let outcome: Result<HTTPReply, StarlineError>
        do {
            outcome = .success(try transport.transfer(request, cancel: nil))
        } catch let error as StarlineError {
            outcome = .failure(error)
        } catch {
            outcome = .failure(StarlineError(.internalError, "\(error)"))
        }
        return Self.classify(outcome, route: route)
    }

    /// How the bulk engine should take an answer.
    static func classify(_ outcome: Result<HTTPReply, StarlineError>, route: String) -> Answer {
        let reply: HTTPReply
        switch outcome {
        case .failure(var error):
            error.details = PlatformAPI.adding([("route", .string(route))], to: error.details)
            let transient = error.retryable && (error.code == .network || error.code == .timeout)
            return Answer(attempt: transient ? .transient(error) : .failed(error), wasCurrent: false)
        case .success(let r): reply = r
        }
        switch reply.status {
        case 200...299:
            guard let json = try? reply.json(), let revoked = json["revoked"]?.boolValue else {
                return Answer(attempt: .failed(StarlineError(.data, "unexpected answer from \(route) (HTTP \(reply.status)): no 'revoked'",
                                                             details: .object([("route", .string(route))]))), wasCurrent: false)
            }
            return Answer(attempt: .done(revoked ? .revoked : .alreadyRevoked), wasCurrent: json["current"]?.boolValue ?? false)
        case 404:
            return Answer(attempt: .done(.notFound), wasCurrent: false)
        case 429:
            let retryAfter = reply.header("Retry-After").flatMap { RetryPolicy.parseRetryAfter($0) }
            return Answer(attempt: .throttled(retryAfter: retryAfter), wasCurrent: false)
        default:
            let error = PlatformAPI.error(status: reply.status, body: reply.body, headers: reply.headers, route: route)
            switch error.exitStatus {
            // The caller's own session ended (S15), or the caller may not do this at all: no item can succeed.
            case .sessionEnded, .forbidden: return Answer(attempt: .stopRun(error), wasCurrent: false)
            default: break
            }
            if RetryPolicy.isRetryable(status: reply.status) { return Answer(attempt: .transient(error), wasCurrent: false) }
            return Answer(attempt: .failed(error), wasCurrent: false)
        }
    }
}
