#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineSQLite
import StarlineCrypto

/// What a route needs before its handler runs.
enum Access: Sendable {
    case open            // no credentials (metadata, /oauth/*, SMS reset, friend-link pages)
    case bearer          // a valid platform session
    case chat            // a valid session of the chat app `workbench`
    case dev             // the X-Dev-Token header
}

/// The authenticated session of a request.
struct AuthSession {
    var id: String
    var userId: String
    var appId: String
    var expiresAt: Int64
}

/// Everything a handler sees.
struct RouteContext {
    var request: HTTPRequest
    var parameters: [String: String]
    var session: AuthSession?
    var server: DevServer

    package var store: DevServerStore { server.store }
    var db: SQLiteDatabase { server.store.db }
    func parameter(_ name: String) -> String { parameters[name] ?? "" }
    var user: String { session?.userId ?? "" }

    /// The JSON body as an object (`INVALID_JSON` / `INVALID_REQUEST` otherwise); an empty body is `{}`.
    func jsonBody() throws -> JSON {
        if request.body.isEmpty { return .object([]) }
        let value: JSON
        do { value = try JSON.parse(request.body) } catch { throw APIError(400, "INVALID_JSON", "the request body is not valid JSON") }
        guard case .object = value else { throw APIError.invalidRequest("the request body must be a JSON object") }
        return value
    }

    func string(_ body: JSON, _ key: String, maxLength: Int = 4000) throws -> String {
        guard let v = body[key]?.stringValue, !v.isEmpty else { throw APIError.invalidRequest("'\(key)' must be a non-empty string") }
        guard v.count <= maxLength else { throw APIError.invalidRequest("'\(key)' is longer than \(maxLength) characters") }
        return v
    }

    /// `application/x-www-form-urlencoded` body fields.
    func form() -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = PercentEncoding.decodeForm(parts[0])
            if fields[key] == nil { fields[key] = parts.count > 1 ? PercentEncoding.decodeForm(parts[1]) : "" }
        }
        return fields
    }
}

/// A handler: runs whole under the server's lock, with the state the lock owns.
typealias RouteHandler = (RouteContext, inout DevServerState) throws -> HTTPResponse

/// A long poll's handler: checks the request under the lock and says what to wait for.
typealias LongPollHandler = (RouteContext) throws -> LongPoll

/// What a long poll (`GET /chat/v1/sync`) waits for. The server runs `poll` under its lock now and again
/// each time a request publishes events (the lock is released in between, so those requests go on),
/// until it is ready or `deadline` passes; then it answers with one last `poll`, ready or not.
struct LongPoll {
    /// CLOCK_MONOTONIC nanoseconds (`MonotonicClock.nanoseconds`).
    var deadline: UInt64
    /// The answer as of now, and whether it is worth sending before the deadline.
    var poll: () throws -> (response: HTTPResponse, ready: Bool)
}

struct Route {
    enum Body {
        case handler(RouteHandler)
        case longPoll(LongPollHandler)
    }

    var method: String
    var template: String
    var access: Access
    var body: Body
    var segments: [Substring]

    init(_ method: String, _ template: String, _ access: Access, body: Body) {
        self.method = method
        self.template = template
        self.access = access
        self.body = body
        segments = pathSegments(template)
    }

    /// A route whose handler needs the server's state (faults, counters, rate limit, event notification).
    init(_ method: String, _ template: String, _ access: Access, _ handler: @escaping RouteHandler) {
        self.init(method, template, access, body: .handler(handler))
    }

    /// A route whose handler needs only the request and the database.
    init(_ method: String, _ template: String, _ access: Access, _ handler: @escaping (RouteContext) throws -> HTTPResponse) {
        self.init(method, template, access, body: .handler { context, _ in try handler(context) })
    }

    init(_ method: String, _ template: String, _ access: Access, longPoll: @escaping LongPollHandler) {
        self.init(method, template, access, body: .longPoll(longPoll))
    }

    var key: String { "\(method) \(template)" }

    func match(_ pathSegments: [Substring]) -> [String: String]? {
        guard pathSegments.count == segments.count else { return nil }
        var parameters: [String: String] = [:]
        for (t, p) in zip(segments, pathSegments) {
            if t.hasPrefix("{") && t.hasSuffix("}") {
                guard !p.isEmpty else { return nil }
                parameters[String(t.dropFirst().dropLast())] = String(p)
            } else if t != p {
                return nil
            }
        }
        return parameters
    }
}

/// The segments of a URL path, split at every "/" scalar (a path like `/🏻`, found by schemathesis, must
/// still split; see `splitAtScalar`).
func pathSegments(_ path: String) -> [Substring] { path.splitAtScalar("/") }

/// An injected fault (`POST /__dev/faults`).
struct Fault {
    var id: Int
    var method: String
    var pattern: [Substring]
    var route: String
    var status: Int?
    var reset: Bool
    var delayMs: Int
    var remaining: Int?

    func matches(method: String, path: [Substring]) -> Bool {
        guard method == self.method, path.count == pattern.count else { return false }
        return zip(pattern, path).allSatisfy { $0 == "*" ? !$1.isEmpty : $0 == $1 }
    }
}

public struct DevServerConfiguration: Sendable {
    public var port: UInt16 = 0
    public var databasePath = ":memory:"
    public var fixture: JSON = DevServerStore.defaultFixture
    public var autoApprove: String?
    public var logPath: String?
    public var devToken: String?
    public var deviceInterval = 5
    public var sessionTTL: Int64 = 86_400
    public var codeTTL: Int64 = 60
    public var deviceCodeTTL: Int64 = 600
    /// The first N polls of every device code answer `slow_down` (to test clients' handling of it).
    public var deviceSlowDowns = 0
    public init() {}
}

/// The dev server's mutable state, owned by its lock (`DevServer.state`).
struct DevServerState {
    var faults: [Fault] = []
    var nextFaultId = 1
    var counters: [String: Int] = [:]
    var rateLimit = 0
    var rateWindowSecond: Int64 = 0
    var rateWindowCount = 0
    /// Set by `ChatRoutes.publish` (new rows in `events`); the request then wakes the long polls.
    var eventsPublished = false
}

/// The Starline platform + chat server for demos, tests and offline pipelines.
public final class DevServer: @unchecked Sendable {
    // @unchecked: the mutable state is in `state` (a lock); the database in `store` is used only inside
    // that lock too (every handler runs in it), except by the front-end before `start`. `http` and
    // `baseURL` are set by start/stop, not while requests are served; the rest is immutable.
    let configuration: DevServerConfiguration
    package let store: DevServerStore
    package let devToken: String
    /// One request at a time touches the database and this state; long polls wait on its condition.
    private let state = Locked(DevServerState())
    private let routes: [Route]
    private var http: HTTPServer?
    private let logFile: UnsafeMutablePointer<FILE>?
    public private(set) var baseURL = ""
    var chatBase: String { baseURL + "/chat" }

    public init(configuration: DevServerConfiguration) throws {
        self.configuration = configuration
        store = try DevServerStore(path: configuration.databasePath, fixture: configuration.fixture)
        devToken = configuration.devToken ?? Base64.encodeURL(Sodium.randomBytes(18))
        if let logPath = configuration.logPath {
            guard let file = fopen(logPath, "a") else {
                throw StarlineError(.storage, "cannot open log file \(logPath): \(String(cString: strerror(errno)))")
            }
            logFile = file
        } else {
            logFile = nil
        }
        routes = PlatformRoutes.routes + ChatRoutes.routes + DevControlRoutes.routes + [
            Route("GET", "/openapi.yaml", .open) { _ in
                HTTPResponse(status: 200, headers: [("Content-Type", "application/yaml")], body: Array(OpenAPIDocument.text.utf8))
            },
        ]
    }

    /// Every route as `METHOD /template`.
    public var routeList: [String] { routes.map(\.key) }

    public func start() throws {
        http = try HTTPServer(port: configuration.port) { [unowned self] request in self.handle(request) }
        baseURL = "http://127.0.0.1:\(http!.port)"
    }

    public func stop() {
        http?.stop()
        http = nil
        if let logFile { fflush(logFile) }
    }

    deinit {
        stop()
        if let logFile { fclose(logFile) }
    }

    /// Runs `body` with the lock held; when it published events (`eventsPublished`), even if it then threw,
    /// wakes the long polls once the lock is released.
    private func withState<T>(_ body: (inout DevServerState) throws -> T) rethrows -> T {
        var published = false
        defer {
            // withLockNotifying broadcasts after its body: here an empty one, as only the body above
            // knew whether there was anything to wake for (most requests publish nothing).
            if published { state.withLockNotifying { _ in } }
        }
        return try state.withLock { state in
            defer {
                published = state.eventsPublished
                state.eventsPublished = false
            }
            return try body(&state)
        }
    }

    // MARK: Request pipeline

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        let started = Timestamp.nowMilliseconds()
        let pathSegments = StarlineDevServer.pathSegments(request.path)
        var matched: (Route, [String: String])?
        var allowed: [String] = []
        for route in routes {
            if let parameters = route.match(pathSegments) {
                if route.method == request.method || (request.method == "HEAD" && route.method == "GET") {
                    matched = (route, parameters)
                    break
                }
                allowed.append(route.method)
            }
        }
        let counterKey = matched.map { $0.0.key } ?? "\(request.method) \(request.path)"
        var response = state.withLock { state -> HTTPResponse? in
            state.counters[counterKey, default: 0] += 1
            if let fault = state.takeFault(method: request.method, path: pathSegments) {
                if fault.reset { var r = HTTPResponse(status: 0); r.dropConnection = true; return r }
                if let status = fault.status { return HTTPResponse.error(status, "INJECTED_FAULT", "fault injected by sl-devserver") }
                var r = HTTPResponse(status: -1)
                r.delayMilliseconds = fault.delayMs
                return r
            }
            return nil
        }
        let delay = response?.status == -1 ? response!.delayMilliseconds : 0
        if response == nil || delay > 0 {
            response = dispatch(request, matched: matched, allowed: allowed)
            response!.delayMilliseconds = delay
        }
        log(request, route: matched?.0.template, status: response!.dropConnection ? 0 : response!.status, started: started)
        return response!
    }

    private func dispatch(_ request: HTTPRequest, matched: (Route, [String: String])?, allowed: [String]) -> HTTPResponse {
        guard let (route, parameters) = matched else {
            if !allowed.isEmpty {
                return APIError(405, "METHOD_NOT_ALLOWED", "\(request.method) is not allowed on \(request.path)",
                                headers: [("Allow", Set(allowed).sorted().joined(separator: ", "))]).response
            }
            return APIError(404, "NOT_FOUND", "no route for \(request.method) \(request.path)").response
        }
        if request.bodyTooLarge {
            return APIError(413, "PAYLOAD_TOO_LARGE", "request bodies are limited to \(HTTPServer.maxBodyBytes) bytes").response
        }
        do {
            if route.access != .dev, let limited = state.withLock({ $0.rateLimited() }) { return limited }
            switch route.body {
            case .handler(let handler):
                // The handler runs whole under the lock.
                return try withState { state in try handler(try authorized(route, request, parameters), &state) }
            case .longPoll(let handler):
                let longPoll = try state.withLock { _ in try handler(try authorized(route, request, parameters)) }
                // Between checks the lock is released, so other requests (the sends that wake us) go on.
                let early = try state.await(deadline: longPoll.deadline) { _ -> HTTPResponse? in
                    let (response, ready) = try longPoll.poll()
                    return ready ? response : nil
                }
                if let early { return early }
                return try state.withLock { _ in try longPoll.poll().response }
            }
        } catch let error as APIError {
            return error.response
        } catch let error as OAuthError {
            return .oauthError(error.status, error.error, error.description)
        } catch let error as SQLiteError {
            return .error(500, "INTERNAL", "database error: \(error.message)")
        } catch let error as StarlineError {
            return .error(500, "INTERNAL", error.message)
        } catch {
            return .error(500, "INTERNAL", "\(error)")
        }
    }

    /// The handler's context once the request has the access the route needs (call with the lock held).
    private func authorized(_ route: Route, _ request: HTTPRequest, _ parameters: [String: String]) throws -> RouteContext {
        var context = RouteContext(request: request, parameters: parameters, session: nil, server: self)
        switch route.access {
        case .open: break
        case .dev:
            guard let token = request.header("X-Dev-Token"), Sodium.constantTimeEquals(Array(token.utf8), Array(devToken.utf8)) else {
                throw APIError(401, "INVALID_DEV_TOKEN", "the X-Dev-Token header is missing or wrong")
            }
        case .bearer, .chat:
            context.session = try authenticate(request)
            if route.access == .chat, context.session?.appId != "workbench" {
                throw APIError(403, "FORBIDDEN", "chat needs a session of the app 'workbench'")
            }
        }
        return context
    }

    /// Bearer token → session, with the contract's 401/403 answers.
    func authenticate(_ request: HTTPRequest) throws -> AuthSession {
        let challenge = [("WWW-Authenticate", "Bearer realm=\"starline\"")]
        guard let header = request.header("Authorization"), header.count > 7, header.prefix(7).lowercased() == "bearer " else {
            throw APIError(401, "INVALID_TOKEN", "a bearer token is required", headers: challenge)
        }
        let token = String(header.dropFirst(7)).trimmingWhitespace()
        guard let row = try store.db.queryFirst("""
            SELECT s.id, s.user_id, s.app_id, s.expires_at, s.revoked_at, s.last_seen_at, u.restricted, a.disabled
            FROM sessions s JOIN users u ON u.id = s.user_id LEFT JOIN apps a ON a.id = s.app_id WHERE s.token = ?
            """, [.text(token)]) else {
            throw APIError(401, "INVALID_TOKEN", "the bearer token is not valid", headers: challenge)
        }
        let now = Timestamp.now().seconds
        if !row.isNull("revoked_at") { throw APIError(401, "SESSION_REVOKED", "the session was revoked", headers: challenge) }
        let expiresAt = row.int64("expires_at") ?? 0
        if expiresAt <= now { throw APIError(401, "SESSION_EXPIRED", "the session expired", headers: challenge) }
        if row.bool("restricted") == true { throw APIError(403, "ACCOUNT_RESTRICTED", "the account is restricted") }
        if row.bool("disabled") == true { throw APIError(403, "APP_UNAVAILABLE", "the app is unavailable") }
        let id = row.string("id") ?? ""
        if now - (row.int64("last_seen_at") ?? 0) >= 60 {
            try store.db.run("UPDATE sessions SET last_seen_at = ?, ip = ? WHERE id = ?", [.integer(now), .text(request.clientAddress), .text(id)])
        }
        return AuthSession(id: id, userId: row.string("user_id") ?? "", appId: row.string("app_id") ?? "", expiresAt: expiresAt)
    }

    // MARK: Log

    /// One JSON line per request: the route template, never the raw path or query (codes and tokens
    /// can appear there), never headers or bodies.
    private func log(_ request: HTTPRequest, route: String?, status: Int, started: Int64) {
        guard let logFile else { return }
        let line = JSON.object([
            ("time", .string(Timestamp.rfc3339String(started / 1000))), ("method", .string(request.method)),
            ("route", .string(route ?? "(unmatched)")), ("status", .int(status)),
            ("durationMs", .int(Int(Timestamp.nowMilliseconds() - started))), ("client", .string(request.clientAddress)),
        ]).serialized() + "\n"
        state.withLock { _ in
            fputs(line, logFile)
            fflush(logFile)
        }
    }
}

// MARK: Faults, counters, rate limit

extension DevServerState {
    /// The first matching fault, its count decremented.
    mutating func takeFault(method: String, path: [Substring]) -> Fault? {
        guard let i = faults.firstIndex(where: { $0.matches(method: method, path: path) }) else { return nil }
        let fault = faults[i]
        if let remaining = fault.remaining {
            if remaining <= 1 { faults.remove(at: i) } else { faults[i].remaining = remaining - 1 }
        }
        return fault
    }

    mutating func addFault(route: String, status: Int?, reset: Bool, delayMs: Int, count: Int?) throws -> Fault {
        let parts = route.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[1].hasPrefix("/") else {
            throw APIError.invalidRequest("'route' must be 'METHOD /path' with * for one path segment")
        }
        let fault = Fault(id: nextFaultId, method: parts[0].uppercased(), pattern: pathSegments(String(parts[1])),
                          route: route, status: status, reset: reset, delayMs: delayMs, remaining: count)
        nextFaultId += 1
        faults.append(fault)
        return fault
    }

    mutating func clearFaults() -> Int {
        defer { faults.removeAll() }
        return faults.count
    }

    mutating func setRateLimit(_ rps: Int) {
        rateLimit = rps
        rateWindowCount = 0
    }

    mutating func rateLimited() -> HTTPResponse? {
        guard rateLimit > 0 else { return nil }
        let second = Timestamp.now().seconds
        if second != rateWindowSecond {
            rateWindowSecond = second
            rateWindowCount = 0
        }
        rateWindowCount += 1
        guard rateWindowCount > rateLimit else { return nil }
        return APIError(429, "RATE_LIMITED", "more than \(rateLimit) requests per second", headers: [("Retry-After", "1")]).response
    }
}
