import StarlineCore
import StarlineSQLite

/// What a route needs before its handler runs.
enum Access: Sendable {
    case open  // no credentials (metadata, /oauth/*, SMS reset, friend-link pages)
    case bearer  // a valid platform session
    case chat  // a valid session of the chat app `workbench`
    case dev  // the X-Dev-Token header
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
        // Characters as JSON Schema's maxLength counts them (code points), so the contract's limit is the server's.
        guard v.unicodeScalars.count <= maxLength else { throw APIError.invalidRequest("'\(key)' is longer than \(maxLength) characters") }
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

    /// Segments that are not parameters: the more, the more specific the route.
    var literalSegments: Int { segments.count { !($0.hasPrefix("{") && $0.hasSuffix("}")) } }

    /// The route's parameters when the raw path (escapes kept: a %2F is not a "/") has its segments; each
    /// parameter decoded once matched (an invalid escape kept as it is, as MHD's own decoding keeps it). A
    /// decoded "/" or NUL stays inside the value — it neither splits the path nor ends it — and the handler
    /// judges the value as it judges any other (an unknown id, an invalid client id).
    func match(_ pathSegments: [Substring]) -> [String: String]? {
        guard pathSegments.count == segments.count else { return nil }
        var parameters: [String: String] = [:]
        for (t, p) in zip(segments, pathSegments) {
            if t.hasPrefix("{") && t.hasSuffix("}") {
                guard !p.isEmpty else { return nil }
                parameters[String(t.dropFirst().dropLast())] = PercentEncoding.decode(p)
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
