import StarlineCore
import StarlineHTTP
import StarlineBulk

/// One attempt at revoking a target, blocking, for the workers of `BulkEngine` (S16).
public struct SessionRevoker: Sendable {
    public let api: PlatformAPI
    let transport: any HTTPExchange
    let token: String
    /// The caller's user id: a target of that user goes through the caller's own route, so that `list --jsonl`
    /// (which names the user) piped into revoke works without the admin role.
    let ownUser: String?
    /// Whose a 403 is: one target refused is that item's failure while the caller is still an admin.
    public let callerCheck: BulkCallerCheck

    /// `transport` carries the run's keep-alive connections (one handle per worker, reused).
    public init(api: PlatformAPI, transport: any HTTPExchange, token: String, ownUser: String?) {
        self.api = api
        self.transport = transport
        self.token = token
        self.ownUser = ownUser
        callerCheck = BulkCallerCheck(api: api, transport: transport, token: token)
    }

    public struct Answer: Sendable {
        public var attempt: BulkAttempt<BulkItemStatus>
        /// The server said this was the caller's own session (`current: true`): the local one must be cleared (S16).
        public var wasCurrent: Bool
        /// What the answer said of the server's rate limit, for the run's gate.
        public var rateLimit: RateLimitHint? = nil
    }

    public func revoke(_ target: RevocationTarget) -> Answer {
        let adminUser = target.user == ownUser ? nil : target.user
        let (route, path) =
            adminUser.map {
                (
                    "DELETE /api/admin/users/{uid}/sessions/{id}",
                    "/api/admin/users/\(PlatformHTTP.segment($0))/sessions/\(PlatformHTTP.segment(target.id))"
                )
            } ?? ("DELETE /api/sessions/{id}", "/api/sessions/" + PlatformHTTP.segment(target.id))
        let request = HTTPRequestSpec(
            method: "DELETE", url: api.url(path),
            headers: [("Accept", "application/json"), ("Authorization", "Bearer " + token)])
        return classify(BulkRequest.send(transport, request, route: route), route: route)
    }

    /// How the bulk engine should take an answer: `{revoked, current}` on 2xx, 404 as "not found", the rest
    /// by `BulkRequest`'s common rules.
    func classify(_ outcome: Result<HTTPReply, StarlineError>, route: String) -> Answer {
        var wasCurrent = false
        let attempt: BulkAttempt<BulkItemStatus> = BulkRequest.attempt(
            outcome, route: route, now: api.clock.now(), callerCheck: callerCheck
        ) { reply in
            if reply.status == 404 { return .done(.notFound) }
            return BulkRequest.success(api, reply, route: route) { answer in
                wasCurrent = answer.json["current"]?.boolValue ?? false
                return try answer.bool("revoked") ? .revoked : .alreadyRevoked
            }
        }
        var hint: RateLimitHint?
        if case .success(let reply) = outcome { hint = RateLimitHint.parse(reply, now: api.clock.now()) }
        return Answer(attempt: attempt, wasCurrent: wasCurrent, rateLimit: hint)
    }
}
