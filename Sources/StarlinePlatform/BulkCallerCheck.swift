import StarlineCore
import StarlineHTTP

/// Whose a 403 FORBIDDEN in a bulk run is (S16). The server refuses for the caller — no admin role, or the
/// role taken away mid-run — and for one target — a protected account, a policy on that user. Only the first
/// stops the run (no other item could succeed); the second is that item's failure and the run goes on, as
/// GAM goes on past a user it may not touch. The server is asked, not guessed: `GET /api/me` with the run's
/// token says whether the caller is still signed in and, for an admin route, still has the admin role.
///
/// One answer serves every 403 for `maxAge` seconds, and concurrent 403s wait for the one question in flight,
/// so a run of 403s costs one extra request a second, not one per item.
public final class BulkCallerCheck: Sendable {
    public enum Verdict: Sendable {
        /// The caller is signed in (and an admin, for an admin route): the 403 is the item's.
        case itemOnly
        /// The caller may do nothing more: the run stops with this error.
        case caller(StarlineError)
        /// No answer to the question: the item is tried again (a transient failure).
        case unknown(StarlineError)
    }

    let api: PlatformAPI
    let transport: any HTTPExchange
    let token: String
    let maxAge: UInt64

    private struct Answer {
        var roles: [String]
        var at: UInt64
    }

    /// The last answer; the lock is held while a question is out, so concurrent 403s share it.
    private let last = Locked<Answer?>(nil)

    public init(api: PlatformAPI, transport: any HTTPExchange, token: String, maxAge: Double = 1) {
        self.api = api
        self.transport = transport
        self.token = token
        self.maxAge = ReplyLimits.nanoseconds(maxAge)
    }

    /// The verdict on a 403 FORBIDDEN (`forbidden`) answered on a route that needs the admin role or not.
    public func verdict(on forbidden: StarlineError, adminRoute: Bool) -> Verdict {
        let roles: [String]
        switch currentRoles() {
        case .success(let r): roles = r
        case .failure(let error):
            if error.exitStatus == .sessionEnded || error.exitStatus == .forbidden { return .caller(error) }
            return .unknown(error)
        }
        guard !adminRoute || roles.contains("admin") else {
            return .caller(
                StarlineError(
                    .forbidden,
                    "the run's account no longer has the admin role (\(forbidden.message)); nothing more can be revoked for other users",
                    details: forbidden.details))
        }
        return .itemOnly
    }

    /// The outage probe of a run's tail (`BulkRun`): nil when the server answers `GET /api/me` at all (any
    /// status below 500: it is up, whatever it thinks of the token), else the failure.
    public func serverAnswers() -> StarlineError? {
        switch askMe() {
        case .failure(let error): return error
        case .success(let reply): return reply.status >= 500 ? error(reply) : nil
        }
    }

    static let meRoute = "GET /api/me"

    /// One `GET /api/me` with the run's token, on the calling worker's connection.
    private func askMe() -> Result<HTTPReply, StarlineError> {
        let request = HTTPRequestSpec(
            method: "GET", url: api.url("/api/me"), headers: [("Accept", "application/json"), ("Authorization", "Bearer " + token)])
        return BulkRequest.send(transport, request, route: Self.meRoute)
    }

    /// The error an answer of `GET /api/me` stands for.
    private func error(_ reply: HTTPReply) -> StarlineError {
        PlatformHTTP.error(status: reply.status, body: reply.body, headers: reply.headers, route: Self.meRoute, now: api.clock.now())
    }

    /// The caller's roles, as the server says now (or said less than `maxAge` ago).
    private func currentRoles() -> Result<[String], StarlineError> {
        last.withLock { last in
            let now = MonotonicClock.nanoseconds()
            if let answer = last, now &- answer.at < maxAge { return .success(answer.roles) }
            switch askMe() {
            case .failure(let error): return .failure(error)
            case .success(let reply):
                guard (200...299).contains(reply.status) else { return .failure(error(reply)) }
                do {
                    let json = try api.expectSuccess(reply, Self.meRoute)
                    let roles = try AnswerReader(json: json, route: Self.meRoute).strings("roles")
                    last = Answer(roles: roles, at: MonotonicClock.nanoseconds())
                    return .success(roles)
                } catch {
                    return .failure((error as? StarlineError) ?? StarlineError(.internalError, "\(error)"))
                }
            }
        }
    }
}
