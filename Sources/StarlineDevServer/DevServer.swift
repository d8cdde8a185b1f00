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

typealias RouteHandler = (RouteContext) throws -> HTTPResponse

struct Route {
    var method: String
    var template: String
    var access: Access
    var handler: RouteHandler
    var segments: [Substring]

    init(_ method: String, _ template: String, _ access: Access, _ handler: @escaping RouteHandler) {
        self.method = method
        self.template = template
        self.access = access
        self.handler = handler
        segments = pathSegments(template)
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

/// The Starline platform + chat server for demos, tests and offline pipelines.
public final class DevServer: @unchecked Sendable {
    // @unchecked: every mutable member is read and written under `lock` (the database, faults,
    // counters, rate limiter); `condition` is signalled under it for long polls.
    let configuration: DevServerConfiguration
    package let store: DevServerStore
    package let devToken: String
    private let lock = Mutex()
    private var condition = pthread_cond_t()
    private var lockHandle: UnsafeMutablePointer<pthread_mutex_t>
    private var routes: [Route] = []
    private var faults: [Fault] = []
    private var nextFaultId = 1
    var counters: [String: Int] = [:]
    private var rateLimit = 0
    private var rateWindowSecond: Int64 = 0
    private var rateWindowCount = 0
    private var http: HTTPServer?
    private let logFile: UnsafeMutablePointer<FILE>?
    public private(set) var baseURL = ""
    var chatBase: String { baseURL + "/chat" }

    public init(configuration: DevServerConfiguration) throws {
        self.configuration = configuration
        store = try DevServerStore(path: configuration.databasePath, fixture: configuration.fixture)
        devToken = configuration.devToken ?? Base64.encodeURL(Sodium.randomBytes(18))
        lockHandle = .allocate(capacity: 1)
        pthread_mutex_init(lockHandle, nil)
        pthread_cond_init(&condition, nil)
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
        pthread_cond_destroy(&condition)
        pthread_mutex_destroy(lockHandle)
        lockHandle.deallocate()
    }

    /// Runs `body` with the state lock held (one request at a time touches the database).
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(lockHandle)
        defer { pthread_mutex_unlock(lockHandle) }
        return try body()
    }

    /// Wakes long polls; call with the lock held after adding events.
    func notifyEvents() { pthread_cond_broadcast(&condition) }

    /// Waits for `notifyEvents` or until `deadlineMs`; call with the lock held (inside `locked`).
    func waitForEvents(until deadlineMs: Int64) {
        var ts = timespec(tv_sec: Int(deadlineMs / 1000), tv_nsec: Int(deadlineMs % 1000) * 1_000_000)
        pthread_cond_timedwait(&condition, lockHandle, &ts)
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
        var response = locked { () -> HTTPResponse? in
            counters[counterKey, default: 0] += 1
            if let fault = takeFault(method: request.method, path: pathSegments) {
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
            if route.access != .dev, let limited = rateLimited() { return limited }
            // Long polls wait on the condition inside the handler; every other handler runs whole under the lock.
            return try locked {
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
                return try route.handler(context)
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

    // MARK: Faults, counters, rate limit

    /// The first matching fault, its count decremented (call with the lock held).
    private func takeFault(method: String, path: [Substring]) -> Fault? {
        guard let i = faults.firstIndex(where: { $0.matches(method: method, path: path) }) else { return nil }
        let fault = faults[i]
        if let remaining = fault.remaining {
            if remaining <= 1 { faults.remove(at: i) } else { faults[i].remaining = remaining - 1 }
        }
        return fault
    }

    func addFault(route: String, status: Int?, reset: Bool, delayMs: Int, count: Int?) throws -> Fault {
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

    func clearFaults() -> Int {
        defer { faults.removeAll() }
        return faults.count
    }

    func setRateLimit(_ rps: Int) {
        rateLimit = rps
        rateWindowCount = 0
    }

    private func rateLimited() -> HTTPResponse? {
        locked {
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
        locked {
            fputs(line, logFile)
            fflush(logFile)
        }
    }
}

