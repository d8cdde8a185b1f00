import StarlineCore
import StarlineHTTP

/// The chat routes of the HTTP contract (docs/openapi.yaml), typed, as blocking calls on the
/// calling thread: the outbox and `tail --follow` run on worker threads over reused keep-alive handles
/// (the bulk engine's model), and a CLI run has nothing else to do while it waits.
///
/// Reads (GET) are repeated on transient failures as `RetryPolicy` says; writes are single attempts whose
/// answer the caller classifies (`attemptPut`), because only the outbox knows what a lost answer means.
/// Errors are `StarlineError`s mapped by `PlatformHTTP.error` (the one mapping of the suite), with `route`.
public struct ChatAPI: Sendable {
    public let base: BaseURL
    public let token: String
    /// The run's transport (any `HTTPExchange`: a tool's comes from its factory, a test's is a stub).
    let transport: any HTTPExchange
    /// The transport's timeout in seconds: a long poll is given this much beyond its own wait.
    public let timeout: Double
    /// The wall clock of the chat client (what it stores and compares; a tool's `IOStreams` clock) and the
    /// waits of its retries and `tail`'s pauses.
    public let clock: RetryClock
    /// Retries for reads.
    public var retries = 2

    public init(base: BaseURL, token: String, transport: any HTTPExchange, timeout: Double, clock: RetryClock) {
        self.base = base
        self.token = token
        self.transport = transport
        self.timeout = timeout
        self.clock = clock
    }

    // MARK: Reads

    public func conversations() throws -> [JSON] {
        let route = "GET /v1/conversations"
        return try Self.array(try get(route, "/v1/conversations"), "conversations", route)
    }

    /// One page of a conversation's messages in seq order: the newest `limit` before `before`, or the oldest
    /// `limit` after `after`.
    public func messages(
        conversation: String, before: Int64? = nil, after: Int64? = nil, limit: Int? = nil,
        clientId: String? = nil
    ) throws -> [ChatMessage] {
        let route = "GET /v1/conversations/{id}/messages"
        var query: [(String, String)] = []
        if let before { query.append(("before", String(before))) }
        if let after { query.append(("after", String(after))) }
        if let limit { query.append(("limit", String(limit))) }
        if let clientId { query.append(("clientId", clientId)) }
        let json = try get(route, "/v1/conversations/\(Self.segment(conversation))/messages", query: query)
        return try Self.array(json, "messages", route).map { try ChatMessage(json: $0, route: route) }
    }

    /// The events after `since` (all the server keeps when nil), up to `limit`, waiting up to `timeout`
    /// seconds for the first one. An expired (or unknown) cursor is `.expired`.
    public func sync(since: String?, limit: Int, timeout: Int) throws -> SyncAnswer {
        let route = "GET /v1/sync"
        var query: [(String, String)] = [("limit", String(limit)), ("timeout", String(timeout))]
        if let since { query.append(("since", since)) }
        let request = HTTPRequestSpec(
            method: "GET", url: url("/v1/sync", query: query), headers: headers(),
            timeout: Double(timeout) + max(10, self.timeout))
        let reply = try send(request, route: route, retries: retries)
        if reply.status == 410 || reply.status == 400, let code = (try? reply.json())?["error"]?["code"]?.stringValue,
            code == "CURSOR_EXPIRED" || code == "INVALID_CURSOR"
        {
            return .expired(serverCode: code)
        }
        let json = try success(reply, route)
        guard let cursor = json["cursor"]?.stringValue else { throw Self.malformed(route, "'cursor' is missing or not a string") }
        return .events(try Self.array(json, "events", route), cursor: cursor)
    }

    public func friends() throws -> [JSON] {
        let route = "GET /v1/friends"
        return try Self.array(try get(route, "/v1/friends"), "friends", route)
    }

    public func moments(before: String?, limit: Int?) throws -> [JSON] {
        let route = "GET /v1/moments"
        var query: [(String, String)] = []
        if let before { query.append(("before", before)) }
        if let limit { query.append(("limit", String(limit))) }
        return try Self.array(try get(route, "/v1/moments", query: query), "moments", route)
    }

    // MARK: Writes

    public func createFriendLink(ttlSeconds: Int64?) throws -> JSON {
        let route = "POST /v1/friend-links"
        var body: [(String, JSON)] = []
        if let ttlSeconds { body.append(("ttlSeconds", .int(ttlSeconds))) }
        return try success(try send(request("POST", "/v1/friend-links", json: .object(body)), route: route, retries: 0), route)
    }

    /// Redeems a friend link: `{"friend","conversationId","alreadyFriends"}` — a link of someone who is a friend
    /// already is a success that changes nothing. The link's own failures get codes of their own (a script tells
    /// "ask for a new link" from "that was mine" from "mistyped"), each with what to do.
    public func redeemFriendLink(code: String) throws -> JSON {
        let route = "POST /v1/friend-links/{code}/redeem"
        let reply = try send(request("POST", "/v1/friend-links/\(Self.segment(code))/redeem", json: .object([])), route: route, retries: 0)
        do {
            return try success(reply, route)
        } catch let error as StarlineError {
            let details = error.details
            switch (reply.status, details?["serverCode"]?.stringValue) {
            case (404, _):
                throw StarlineError(
                    .friendLinkNotFound, "no friend link has this code: check it, or that it is of this chat service", details: details)
            case (400, "OWN_LINK"?):
                throw StarlineError(.ownFriendLink, "this is your own friend link: it is for the friend you send it to", details: details)
            case (410, "LINK_USED"?):
                throw StarlineError(.friendLinkUsed, "someone else already redeemed this friend link: ask for a new one", details: details)
            case (410, "LINK_EXPIRED"?):
                throw StarlineError(.friendLinkExpired, "the friend link expired: ask for a new one", details: details)
            default:
                throw error
            }
        }
    }

    /// Moves the read mark of `conversation` up to the message `upTo` (never back).
    public func markRead(conversation: String, upTo: String) throws -> JSON {
        let route = "POST /v1/conversations/{id}/read"
        return try success(
            try send(
                request(
                    "POST", "/v1/conversations/\(Self.segment(conversation))/read",
                    json: .object([("upTo", .string(upTo))])), route: route, retries: 0), route)
    }

    /// One attempt at an idempotent PUT of an outbox entry (a message or a moment): the reply whatever its
    /// status, or the transport error. The outbox decides what each means (`OutboxAttempt`).
    public func attemptPut(_ entry: OutboxEntry) -> (route: String, outcome: Result<HTTPReply, StarlineError>) {
        let (route, path): (String, String)
        switch entry.kind {
        case .message:
            route = "PUT /v1/conversations/{id}/messages/{clientId}"
            path = "/v1/conversations/\(Self.segment(entry.conversationId))/messages/\(Self.segment(entry.clientId))"
        case .moment:
            route = "PUT /v1/moments/{clientId}"
            path = "/v1/moments/\(Self.segment(entry.clientId))"
        }
        let spec = request("PUT", path, json: .object([("text", .string(entry.text))]))
        do {
            return (route, .success(try transport.performBlocking(spec)))
        } catch {
            var e = (error as? StarlineError) ?? StarlineError(.internalError, "\(error)")
            e.details = PlatformHTTP.adding([("route", .string(route))], to: e.details)
            return (route, .failure(e))
        }
    }

    // MARK: Plumbing

    public func url(_ path: String, query: [(String, String)] = []) -> String {
        base.origin + base.path + path
            + (query.isEmpty
                ? "" : "?" + query.map { PercentEncoding.encode($0.0) + "=" + PercentEncoding.encode($0.1) }.joined(separator: "&"))
    }

    func headers(json: Bool = false) -> [(String, String)] {
        var h = [("Accept", "application/json"), ("Authorization", "Bearer " + token)]
        if json { h.append(("Content-Type", "application/json")) }
        return h
    }

    func request(_ method: String, _ path: String, json: JSON) -> HTTPRequestSpec {
        HTTPRequestSpec(method: method, url: url(path), headers: headers(json: true), body: Array(json.serialized().utf8))
    }

    func get(_ route: String, _ path: String, query: [(String, String)] = []) throws -> JSON {
        try success(
            try send(HTTPRequestSpec(method: "GET", url: url(path, query: query), headers: headers()), route: route, retries: retries),
            route)
    }

    func send(_ request: HTTPRequestSpec, route: String, retries: Int) throws -> HTTPReply {
        do {
            return try transport.sendBlocking(request, retries: retries, clock: clock)
        } catch var error as StarlineError {
            error.details = PlatformHTTP.adding([("route", .string(route))], to: error.details)
            throw error
        }
    }

    /// The JSON object of a 2xx answer, or the mapped error.
    public func success(_ reply: HTTPReply, _ route: String) throws -> JSON {
        guard (200...299).contains(reply.status) else {
            throw PlatformHTTP.error(status: reply.status, body: reply.body, headers: reply.headers, route: route, now: clock.now())
        }
        guard let json = try? JSON.parse(reply.body), case .object = json else {
            throw Self.malformed(route, "not a JSON object (HTTP \(reply.status))")
        }
        return json
    }

    static func array(_ json: JSON, _ key: String, _ route: String) throws -> [JSON] {
        guard let items = json[key]?.arrayValue else { throw malformed(route, "'\(key)' is missing or not an array") }
        return items
    }

    static func malformed(_ route: String, _ what: String) -> StarlineError {
        StarlineError(.data, "unexpected answer from \(route): \(what)", details: .object([("route", .string(route))]))
    }

    /// One path segment, percent-encoded ("." and ".." too, so an id cannot climb the path).
    static func segment(_ value: String) -> String { PlatformHTTP.segment(value) }
}

/// One answer of `GET /v1/sync`.
public enum SyncAnswer: Sendable {
    case events([JSON], cursor: String)
    /// The server no longer has the events after the cursor (410 CURSOR_EXPIRED), or does not know it.
    case expired(serverCode: String)
}
