import StarlineCore

/// `/__dev/*`: fault injection, account and app switches, bulk users, sessions and messages (DevBulkRoutes),
/// SMS codes, rate limit, counters, revocation counts, reset.
/// Every route needs the `X-Dev-Token` printed at start.
enum DevControlRoutes {
    static var routes: [Route] {
        [
            Route("POST", "/__dev/faults", .dev, addFault),
            Route("DELETE", "/__dev/faults", .dev, clearFaults),
            Route("POST", "/__dev/users/{uid}/restrict", .dev) { try restrict($0, true) },
            Route("POST", "/__dev/users/{uid}/unrestrict", .dev) { try restrict($0, false) },
            Route("POST", "/__dev/apps/{appId}/disable", .dev) { try disable($0, true) },
            Route("POST", "/__dev/apps/{appId}/enable", .dev) { try disable($0, false) },
            Route("POST", "/__dev/sessions/{id}/expire", .dev, expire),
            Route("POST", "/__dev/users", .dev, createUsers),
            Route("POST", "/__dev/users/{uid}/sessions", .dev, createSessions),
            Route("POST", "/__dev/conversations/{id}/messages", .dev, createMessages),
            Route("GET", "/__dev/revocations", .dev, revocations),
            Route("GET", "/__dev/sms/{phone}", .dev, sms),
            Route("POST", "/__dev/rate-limit", .dev, rateLimit),
            Route("GET", "/__dev/counters", .dev, counters),
            Route("POST", "/__dev/reset", .dev, reset),
            Route("GET", "/__dev/clock", .dev, clock),
            Route("POST", "/__dev/clock", .dev, moveClock)
        ]
    }

    static func addFault(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let body = try c.jsonBody()
        let route = try c.string(body, "route", maxLength: 512)
        let status = try member(body, "status", "an integer, a final HTTP status 200-599") { $0.intValue }.map { Int($0) }
        let reset = try member(body, "reset", "true or false") { $0.boolValue } ?? false
        let delay = try member(body, "delayMs", "an integer 0...\(Limits.maxFaultWaitMilliseconds)") { $0.intValue }.map { Int($0) } ?? 0
        let hold = try member(body, "hold", "true or false") { $0.boolValue } ?? false
        let count = try member(body, "count", "an integer of at least 1") { $0.intValue }.map { Int($0) }
        // A final status only: after a 1xx the client waits for the final answer, which would never come.
        if let status, !(200...599).contains(status) {
            throw APIError.invalidRequest("'status' must be a final HTTP status, 200-599 (a 1xx would leave the client waiting)")
        }
        guard [status != nil, reset, delay > 0, hold].filter({ $0 }).count == 1 else {
            throw APIError.invalidRequest("give exactly one of 'status', 'reset':true, 'delayMs' or 'hold':true")
        }
        guard (0...Limits.maxFaultWaitMilliseconds).contains(delay) else {
            throw APIError.invalidRequest("'delayMs' must be 0...\(Limits.maxFaultWaitMilliseconds)")
        }
        if let count, count < 1 {
            throw APIError.invalidRequest("'count' must be at least 1 (leave it out for a fault that lasts until cleared)")
        }
        let headers = try faultHeaders(body["headers"])
        if !headers.isEmpty, status == nil {
            throw APIError.invalidRequest("'headers' apply only to a 'status' fault (a reset, delay or hold has no answer of its own)")
        }
        let fault = try state.addFault(
            route: route, status: status, reset: reset, delayMs: delay, hold: hold, count: count, headers: headers)
        return .json(
            201,
            .object([
                (
                    "fault",
                    .object([
                        ("id", .int(fault.id)), ("route", .string(fault.route)), ("status", fault.status.map { .int($0) } ?? .null),
                        ("reset", .bool(fault.reset)), ("delayMs", .int(fault.delayMs)), ("hold", .bool(fault.hold)),
                        ("count", fault.remaining.map { .int($0) } ?? .null),
                        ("headers", .object(fault.headers.map { ($0.0, .string($0.1)) }))
                    ])
                )
            ]))
    }

    /// Headers the server writes itself: a fault's copy would frame the answer wrongly or twice.
    static let reservedFaultHeaders: Set<String> = [
        "content-length", "content-type", "transfer-encoding", "connection", "keep-alive",
        "upgrade", "trailer", "te"
    ]

    /// A fault's `headers` object, checked as RFC 9110 §5 fields before they reach the wire: a CR or LF
    /// in a value would let a test inject a header or a whole response the contract never describes.
    static func faultHeaders(_ value: JSON?) throws -> [(String, String)] {
        guard let value else { return [] }
        guard let members = value.objectValue else {
            throw APIError.invalidRequest("'headers' must be an object of header names to string values")
        }
        guard members.count <= Limits.maxFaultHeaders else {
            throw APIError.invalidRequest("'headers' may name at most \(Limits.maxFaultHeaders) headers")
        }
        let tokenSymbols = Set("!#$%&'*+-.^_`|~".utf8)
        var seen = Set<String>()
        return try members.map { name, value in
            let bytes = Array(name.utf8)
            guard (1...Limits.maxFaultHeaderName).contains(bytes.count),
                bytes.allSatisfy({
                    (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || tokenSymbols.contains($0)
                })
            else {
                throw APIError.invalidRequest(
                    "header name '\(name.prefix(80))' must be 1-\(Limits.maxFaultHeaderName) token characters (RFC 9110 §5.6.2)")
            }
            guard !reservedFaultHeaders.contains(name.lowercased()) else {
                throw APIError.invalidRequest("header '\(name)' is set by the server itself")
            }
            guard seen.insert(name.lowercased()).inserted else { throw APIError.invalidRequest("header '\(name)' is given twice") }
            guard let text = value.stringValue else { throw APIError.invalidRequest("the value of header '\(name)' must be a string") }
            let valueBytes = Array(text.utf8)
            guard !valueBytes.contains(0x0D), !valueBytes.contains(0x0A) else {
                throw APIError.invalidRequest("the value of header '\(name)' contains CR or LF")
            }
            guard valueBytes.count <= Limits.maxFaultHeaderValue else {
                throw APIError.invalidRequest("the value of header '\(name)' is longer than \(Limits.maxFaultHeaderValue) bytes")
            }
            guard valueBytes.allSatisfy({ $0 == 0x09 || (0x20...0x7E).contains($0) }) else {
                throw APIError.invalidRequest("the value of header '\(name)' must be printable ASCII (tabs and spaces allowed)")
            }
            return (name, text)
        }
    }

    static func clearFaults(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        .json(200, .object([("cleared", .int(state.clearFaults()))]))
    }

    static func restrict(_ c: RouteContext, _ on: Bool) throws -> HTTPResponse {
        let uid = c.parameter("uid")
        try c.db.run("UPDATE users SET restricted = ? WHERE id = ?", [.integer(on ? 1 : 0), .text(uid)])
        guard c.db.changes == 1 else { throw APIError.notFound("user \(uid)") }
        return .json(200, .object([("user", .string(uid)), ("restricted", .bool(on))]))
    }

    static func disable(_ c: RouteContext, _ on: Bool) throws -> HTTPResponse {
        let app = c.parameter("appId")
        try c.db.run("UPDATE apps SET disabled = ? WHERE id = ?", [.integer(on ? 1 : 0), .text(app)])
        guard c.db.changes == 1 else { throw APIError.notFound("app \(app)") }
        return .json(200, .object([("appId", .string(app)), ("disabled", .bool(on))]))
    }

    static func expire(_ c: RouteContext) throws -> HTTPResponse {
        let id = c.parameter("id")
        try c.db.run("UPDATE sessions SET expires_at = ? WHERE id = ?", [.integer(c.server.clock.now().seconds - 1), .text(id)])
        guard c.db.changes == 1 else { throw APIError.notFound("session \(id)") }
        return .json(200, .object([("session", .string(id)), ("expired", .bool(true))]))
    }

    static func createSessions(_ c: RouteContext) throws -> HTTPResponse {
        let uid = c.parameter("uid")
        guard try c.db.queryFirst("SELECT id FROM users WHERE id = ?", [.text(uid)]) != nil else { throw APIError.notFound("user \(uid)") }
        let body = try c.jsonBody()
        guard let count = body["count"]?.intValue, (1...100_000).contains(count) else {
            throw APIError.invalidRequest("'count' must be 1...100000")
        }
        let app = body["appId"]?.stringValue ?? "workbench"
        guard try PlatformRoutes.appExists(c, app) else { throw APIError.notFound("app \(app)") }
        let ids = try c.db.transaction {
            try (0..<count).map { i in
                try c.store.createSession(
                    user: uid, app: app, deviceName: "bulk device \(i + 1)", platform: "linux", ip: "127.0.0.1",
                    ttl: c.server.configuration.sessionTTL, authCode: nil
                ).id
            }
        }
        return .json(201, .object([("ids", .array(ids.map(JSON.string)))]))
    }

    static func sms(_ c: RouteContext) throws -> HTTPResponse {
        let phone = c.parameter("phone")
        guard let row = try c.db.queryFirst("SELECT code FROM sms_codes WHERE phone = ?", [.text(phone)]) else {
            throw APIError.notFound("SMS code for \(phone)")
        }
        return .json(200, .object([("code", .optional(row.string("code")))]))
    }

    /// A member of a request that, when present, must be of its type (`read` gives it): null or another type
    /// is refused, never read as absent — a client that sends `"count":null` meant something, and the contract
    /// does not say what.
    static func member<T>(_ body: JSON, _ key: String, _ expected: String, _ read: (JSON) -> T?) throws -> T? {
        guard let value = body[key] else { return nil }
        guard let typed = read(value) else { throw APIError.invalidRequest("'\(key)' must be \(expected)") }
        return typed
    }

    static func rateLimit(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        guard let rps = try c.jsonBody()["rps"]?.intValue, rps >= 0 else {
            throw APIError.invalidRequest("'rps' must be an integer ≥ 0 (0 turns the limit off)")
        }
        state.setRateLimit(Int(rps))
        return .json(200, .object([("rps", .int(Int(rps)))]))
    }

    static func counters(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        .json(200, .object([("counters", .object(state.counters.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) }))]))
    }

    static func reset(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        try c.store.reset()
        state.reset()
        c.server.timeOffset.withLock { $0 = 0 }
        return .json(200, .object([("reset", .bool(true))]))
    }

    /// The most the clock moves away from the system's, either way: ten years.
    static let maxClockOffset: Int64 = 315_360_000

    /// `GET /__dev/clock`: the server's time and how far it is moved.
    static func clock(_ c: RouteContext) throws -> HTTPResponse {
        .json(200, clockState(c))
    }

    /// `POST /__dev/clock` `{"advanceSeconds":N}`: moves the server's wall time by N seconds (negative: back), so
    /// what has a lifetime — auth codes, device codes, SMS codes, friend links, sessions — expires without a test
    /// sleeping it out. The moves add up, within ten years of the system's time; `POST /__dev/reset` undoes them.
    static func moveClock(_ c: RouteContext) throws -> HTTPResponse {
        let limit = maxClockOffset
        guard let step = try member(c.jsonBody(), "advanceSeconds", "an integer of seconds", { $0.intValue }) else {
            throw APIError.invalidRequest("give 'advanceSeconds', an integer of seconds (negative moves the clock back)")
        }
        try c.server.timeOffset.withLock { offset in
            guard (-limit...limit).contains(step), (-limit...limit).contains(offset + step) else {
                throw APIError.invalidRequest("the clock moves at most \(limit) seconds (ten years) from the system's, either way")
            }
            offset += step
        }
        return .json(200, clockState(c))
    }

    static func clockState(_ c: RouteContext) -> JSON {
        .object([
            ("now", .string(Timestamp.rfc3339String(c.server.clock.now().seconds))),
            ("offsetSeconds", .int(c.server.timeOffset.withLock { $0 }))
        ])
    }
}
