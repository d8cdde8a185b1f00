#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineSQLite
import StarlineCrypto

/// The Starline platform + chat server for demos, tests and offline pipelines.
public final class DevServer: @unchecked Sendable {
    // @unchecked: the mutable state is in `state` (a lock); the database in `store` is used only inside
    // that lock too (every handler runs in it), except by the front-end before `start`. `http` and
    // `baseURL` are set by start/stop, not while requests are served; the rest is immutable.
    let configuration: DevServerConfiguration
    package let store: DevServerStore
    /// The server's wall time: the system's, moved by `POST /__dev/clock` (`timeOffset` seconds), so tests
    /// see codes, links and sessions expire without sleeping out their lifetimes. What limits throughput (the
    /// rate limit's window, sign-in throttling) counts real seconds.
    package let clock: StarlineClock
    /// Seconds the clock is moved by.
    let timeOffset = Locked<Int64>(0)
    package let devToken: String
    /// One request at a time touches the database and this state; long polls wait on its condition.
    private let state = Locked(DevServerState())
    private let routes: [Route]
    private var http: HTTPServer?
    private let logFile: UnsafeMutablePointer<FILE>?
    public private(set) var baseURL = ""
    /// `Host` values answered (set by start with the bound port): see `misdirected`.
    private var allowedHosts: Set<String> = []
    var chatBase: String { baseURL + "/chat" }

    public init(configuration: DevServerConfiguration) throws {
        // An empty token would open /__dev/ (reset, faults, SMS codes) to any request with an empty header.
        if let token = configuration.devToken, token.trimmingWhitespace().isEmpty {
            throw StarlineError(.usage, "the dev token must not be empty")
        }
        self.configuration = configuration
        let offset = timeOffset
        clock = StarlineClock.system.shifted { offset.withLock { $0 } }
        store = try DevServerStore(
            path: configuration.databasePath, fixture: configuration.fixture, scratch: configuration.databaseIsScratch, clock: clock)
        devToken = try store.devToken(explicit: configuration.devToken) { Base64.encodeURL(Sodium.randomBytes(18)) }
        if let logPath = configuration.logPath {
            guard let file = fopen(logPath, "a") else {
                throw StarlineError(.storage, "cannot open log file \(logPath): \(String(cString: strerror(errno)))")
            }
            logFile = file
        } else {
            logFile = nil
        }
        routes =
            PlatformRoutes.routes + ChatRoutes.routes + DevControlRoutes.routes + [
                Route("GET", "/openapi.yaml", .open) { _ in
                    HTTPResponse(status: 200, headers: [("Content-Type", "application/yaml")], body: Array(OpenAPIDocument.text.utf8))
                }
            ]
    }

    /// Every route as `METHOD /template`.
    public var routeList: [String] { routes.map(\.key) }

    public func start() throws {
        var limits = HTTPServer.ConnectionLimits()
        limits.connections = configuration.maxConnections
        limits.connectionsPerIP = configuration.maxConnectionsPerIP
        limits.idleTimeoutSeconds = configuration.connectionTimeout
        http = try HTTPServer(port: configuration.port, limits: limits) { [unowned self] request in self.handle(request) }
        let port = http!.port
        baseURL = "http://127.0.0.1:\(port)"
        allowedHosts = Set(["127.0.0.1", "localhost", "[::1]"].flatMap { port == 80 ? [$0, "\($0):80"] : ["\($0):\(port)"] })
    }

    /// Stops promptly whatever the clients do: long polls answer at once (an empty page when nothing came),
    /// then the HTTP server closes every connection, keep-alive ones too.
    public func stop() {
        state.withLockNotifying { $0.stopping = true }
        http?.stop()
        http = nil
        if let logFile { fflush(logFile) }
    }

    deinit {
        stop()
        if let logFile { fclose(logFile) }
    }

    /// Runs `body` with the lock held; when it published events (`eventsPublished`) or cleared the faults
    /// (`faultClears` moved: held requests go on), even if it then threw, wakes the waiters once the lock is
    /// released.
    private func withState<T>(_ body: (inout DevServerState) throws -> T) rethrows -> T {
        var wake = false
        defer {
            // withLockNotifying broadcasts after its body: here an empty one, as only the body above
            // knew whether there was anything to wake for (most requests publish nothing).
            if wake { state.withLockNotifying { _ in } }
        }
        return try state.withLock { state in
            let clears = state.faultClears
            defer {
                wake = state.eventsPublished || state.faultClears != clears
                state.eventsPublished = false
            }
            return try body(&state)
        }
    }

    // MARK: Request pipeline

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        let started = Timestamp.nowMilliseconds()
        if let refused = misdirected(request) {
            state.withLock { $0.count(method: request.method, route: nil, unmatched: "wrong host") }
            log(request, route: nil, status: refused.status, started: started)
            return refused
        }
        let pathSegments = StarlineDevServer.pathSegments(request.path)
        var matched: (Route, [String: String])?
        var allowed: [String] = []
        // A literal segment beats a parameter: /api/sessions/revoke-others is the resource of POST
        // …/revoke-others, never session "revoke-others" of DELETE /api/sessions/{id} (which would also put DELETE
        // in its 405's Allow, a method the contract does not give that path).
        var literals = -1
        for route in routes {
            guard let parameters = route.match(pathSegments), route.literalSegments >= literals else { continue }
            if route.literalSegments > literals {
                literals = route.literalSegments
                matched = nil
                allowed = []
            }
            if matched == nil, route.method == request.method || (request.method == "HEAD" && route.method == "GET") {
                matched = (route, parameters)
            } else if route.method != request.method {
                allowed.append(route.method)
            }
        }
        let fault = state.withLock { state -> FaultAction? in
            state.count(method: request.method, route: matched?.0)
            guard let fault = state.takeFault(method: request.method, path: pathSegments) else { return nil }
            if fault.reset {
                var dropped = HTTPResponse(status: 0)
                dropped.dropConnection = true
                return .answer(dropped)
            }
            if let status = fault.status {
                var r = HTTPResponse.error(status, "INJECTED_FAULT", "fault injected by sl-devserver")
                r.headers += fault.headers
                return .answer(r)
            }
            return fault.hold ? .hold(since: state.faultClears) : .delay(milliseconds: fault.delayMs)
        }
        var response: HTTPResponse
        switch fault {
        case .answer(let answer)?: response = answer
        case .hold(let clears)?:
            // Until the faults are cleared or the server stops; no longer than a delay may last.
            let deadline = MonotonicClock.nanoseconds() + UInt64(Limits.maxFaultWaitMilliseconds) * 1_000_000
            _ = state.await(deadline: deadline) { $0.faultClears != clears || $0.stopping ? true : nil }
            response = dispatch(request, matched: matched, allowed: allowed)
        case .delay(let milliseconds)?:
            response = dispatch(request, matched: matched, allowed: allowed)
            response.delayMilliseconds = milliseconds
        case nil: response = dispatch(request, matched: matched, allowed: allowed)
        }
        log(request, route: matched?.0.template, status: response.dropConnection ? 0 : response.status, started: started)
        return response
    }

    /// What an injected fault does to a request.
    private enum FaultAction {
        /// Answered by the fault (a status, or a dropped connection); the handler does not run.
        case answer(HTTPResponse)
        /// The handler runs once the faults were cleared since `since` (`DevServerState.faultClears`).
        case hold(since: Int)
        /// The handler runs, then the answer waits.
        case delay(milliseconds: Int)
    }

    /// DNS rebinding: a web page whose name was rebound to 127.0.0.1 reaches this server from the
    /// browser with its own name in `Host`; only the loopback names with the bound port are answered.
    private func misdirected(_ request: HTTPRequest) -> HTTPResponse? {
        guard let host = request.header("Host"), allowedHosts.contains(host.lowercased()) else {
            return APIError(421, "MISDIRECTED_REQUEST", "this server answers only Host 127.0.0.1, localhost or [::1] with its port")
                .response
        }
        return nil
    }

    /// `answer`, under the rate limit when one is set: a route of the API (not `/__dev`) counts against it and
    /// its answer says how much is left (`DevServerState.rateQuota`).
    private func dispatch(_ request: HTTPRequest, matched: (Route, [String: String])?, allowed: [String]) -> HTTPResponse {
        guard let route = matched?.0, route.access != .dev, let quota = state.withLock({ $0.rateQuota() }) else {
            return answer(request, matched: matched, allowed: allowed)
        }
        var response = quota.refusal ?? answer(request, matched: matched, allowed: allowed)
        response.headers += quota.headers
        return response
    }

    private func answer(_ request: HTTPRequest, matched: (Route, [String: String])?, allowed: [String]) -> HTTPResponse {
        guard let (route, parameters) = matched else {
            if !allowed.isEmpty {
                return APIError(
                    405, "METHOD_NOT_ALLOWED", "\(request.method) is not allowed on \(request.path)",
                    headers: [("Allow", Set(allowed).sorted().joined(separator: ", "))]
                ).response
            }
            return APIError(404, "NOT_FOUND", "no route for \(request.method) \(request.path)").response
        }
        if request.bodyTooLarge {
            return APIError(413, "PAYLOAD_TOO_LARGE", "request bodies are limited to \(HTTPServer.maxBodyBytes) bytes").response
        }
        do {
            switch route.body {
            case .handler(let handler):
                // The handler runs whole under the lock.
                return try withState { state in try handler(try authorized(route, request, parameters), &state) }
            case .longPoll(let handler):
                let longPoll = try state.withLock { _ in try handler(try authorized(route, request, parameters)) }
                // Between checks the lock is released, so other requests (the sends that wake us) go on.
                let early = try state.await(deadline: longPoll.deadline) { state -> HTTPResponse? in
                    let (response, ready) = try longPoll.poll()
                    return ready || state.stopping ? response : nil
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
        guard
            let row = try store.db.queryFirst(
                """
                SELECT s.id, s.user_id, s.app_id, s.expires_at, s.revoked_at, s.last_seen_at, u.restricted, a.disabled
                FROM sessions s JOIN users u ON u.id = s.user_id LEFT JOIN apps a ON a.id = s.app_id WHERE s.token = ?
                """, [.text(token)])
        else {
            throw APIError(401, "INVALID_TOKEN", "the bearer token is not valid", headers: challenge)
        }
        let now = clock.now().seconds
        if !row.isNull("revoked_at") { throw APIError(401, "SESSION_REVOKED", "the session was revoked", headers: challenge) }
        let expiresAt = row.int64("expires_at") ?? 0
        if expiresAt <= now { throw APIError(401, "SESSION_EXPIRED", "the session expired", headers: challenge) }
        if row.bool("restricted") == true { throw APIError(403, "ACCOUNT_RESTRICTED", "the account is restricted") }
        if row.bool("disabled") == true { throw APIError(403, "APP_UNAVAILABLE", "the app is unavailable") }
        let id = row.string("id") ?? ""
        if now - (row.int64("last_seen_at") ?? 0) >= 60 {
            try store.db.run(
                "UPDATE sessions SET last_seen_at = ?, ip = ? WHERE id = ?", [.integer(now), .text(request.clientAddress), .text(id)])
        }
        return AuthSession(id: id, userId: row.string("user_id") ?? "", appId: row.string("app_id") ?? "", expiresAt: expiresAt)
    }

    // MARK: Log

    /// One JSON line per request: the route template, never the raw path or query (codes and tokens
    /// can appear there), never headers or bodies.
    private func log(_ request: HTTPRequest, route: String?, status: Int, started: Int64) {
        guard let logFile else { return }
        let line =
            JSON.object([
                ("time", .string(Timestamp.rfc3339String(started / 1000))), ("startedMs", .int(Int(started))),
                ("method", .string(request.method)),
                ("route", .string(route ?? "(unmatched)")), ("status", .int(status)),
                ("durationMs", .int(Int(Timestamp.nowMilliseconds() - started))), ("client", .string(request.clientAddress))
            ]).serialized() + "\n"
        state.withLock { _ in
            fputs(line, logFile)
            fflush(logFile)
        }
    }
}
