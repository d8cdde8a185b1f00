import StarlineCore
import StarlineHTTP
import StarlineBulk

/// One blocking request of a bulk worker, and the rules by which the engine takes its answer — shared by
/// every multi-item command (`SessionRevoker`, `SessionLister`): a transport error is transient when it is
/// a network error or timeout, and stops the run when every request would meet it (an untrusted
/// certificate, `RetryPolicy.failsEveryRequest`); a 429 waits for its `Retry-After`; a 401 or a 403 ending the session
/// stops the run (no item can succeed); a 403 FORBIDDEN stops it only when `BulkCallerCheck` finds the caller
/// refused (else it is the item's failure); other retryable statuses are transient, the rest fail.
enum BulkRequest {
    /// The request on the calling thread (a reused keep-alive handle); errors carry the route.
    static func send(_ transport: any HTTPExchange, _ request: HTTPRequestSpec, route: String) -> Result<HTTPReply, StarlineError> {
        do {
            return .success(try transport.performBlocking(request))
        } catch var error as StarlineError {
            error.details = PlatformHTTP.adding([("route", .string(route))], to: error.details)
            return .failure(error)
        } catch {
            return .failure(StarlineError(.internalError, "\(error)", details: .object([("route", .string(route))])))
        }
    }

    /// `known` takes the answers the command gives a meaning of its own (its 2xx, a 404 that means "gone");
    /// nil leaves an answer to the common rules. `now` (Unix seconds, the client's clock) reads a `Retry-After` date.
    static func attempt<Value>(
        _ outcome: Result<HTTPReply, StarlineError>, route: String, now: @autoclosure () -> Int64, callerCheck: BulkCallerCheck?,
        known: (HTTPReply) -> BulkAttempt<Value>?
    ) -> BulkAttempt<Value> {
        let reply: HTTPReply
        switch outcome {
        case .failure(let error):
            if RetryPolicy.failsEveryRequest(error) { return .stopRun(error) }
            return error.retryable && (error.code == .network || error.code == .timeout) ? .transient(error) : .failed(error)
        case .success(let r): reply = r
        }
        if let attempt = known(reply) { return attempt }
        if reply.status == 429 {
            return .throttled(retryAfter: reply.header("Retry-After").flatMap { RetryPolicy.parseRetryAfter($0, now: now()) })
        }
        let error = PlatformHTTP.error(status: reply.status, body: reply.body, headers: reply.headers, route: route, now: now())
        if error.exitStatus == .sessionEnded { return .stopRun(error) }
        if error.exitStatus == .forbidden {
            guard let callerCheck else { return .stopRun(error) }
            switch callerCheck.verdict(on: error, adminRoute: route.contains(" /api/admin/")) {
            case .itemOnly:
                var own = error
                own.message += " (this item only: the run's account is still signed in with its roles, so the run goes on)"
                return .failed(own)
            case .caller(let stop): return .stopRun(stop)
            case .unknown(let cause): return .transient(cause)
            }
        }
        return RetryPolicy.isRetryable(status: reply.status) ? .transient(error) : .failed(error)
    }

    /// A 2xx answer read by `read` (a malformed one fails the item); nil for any other status.
    static func success<Value>(_ api: PlatformAPI, _ reply: HTTPReply, route: String, _ read: (AnswerReader) throws -> Value)
        -> BulkAttempt<Value>?
    {
        guard (200...299).contains(reply.status) else { return nil }
        do {
            let json = try api.expectSuccess(reply, route)
            return .done(try read(AnswerReader(json: json, route: route)))
        } catch {
            return .failed((error as? StarlineError) ?? StarlineError(.internalError, "\(error)"))
        }
    }
}
