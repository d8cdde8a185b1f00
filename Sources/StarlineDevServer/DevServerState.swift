import StarlineCore

public struct DevServerConfiguration: Sendable {
    public var port: UInt16 = 0
    public var databasePath = ":memory:"
    /// The database is the server's own scratch file (`ScratchStore`): never synced to disk.
    public var databaseIsScratch = false
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
    /// Seconds a connection may stay idle (e.g. a half-sent request) before MHD closes it.
    public var connectionTimeout = 30
    /// Connections at once, overall and from one client address: every connection holds a thread.
    public var maxConnections = 512
    public var maxConnectionsPerIP = 128
    /// Sync events kept (newest first); every message adds one per member, so without a bound the
    /// table grows with the traffic. A cursor older than what is kept gets 410 `CURSOR_EXPIRED`.
    public var eventRetention = 100_000
    /// The longest a sync long poll is held, in seconds: a client's `timeout` above it is cut to it. The contract's
    /// 30 by default; shorter for a test or a pipeline that fuzzes or scripts `sync` and should not sit out 30 s.
    public var maxPollWait = 30
    public init() {}
}

/// An injected fault (`POST /__dev/faults`).
struct Fault {
    var id: Int
    var method: String
    var pattern: [Substring]
    var route: String
    var status: Int?
    var reset: Bool
    var delayMs: Int
    /// Holds the request, before its handler runs, until the faults are cleared (`DELETE /__dev/faults`,
    /// `POST /__dev/reset`) or the server stops: a test then decides when the request goes on, where a
    /// delay would make it guess how long the rest of the test takes.
    var hold = false
    var remaining: Int?
    /// Added to a `status` fault's answer (e.g. `Retry-After` on a 429), as validated by `FaultHeaders`.
    var headers: [(String, String)] = []

    func matches(method: String, path: [Substring]) -> Bool {
        guard method == self.method, path.count == pattern.count else { return false }
        return zip(pattern, path).allSatisfy { $0 == "*" ? !$1.isEmpty : $0 == $1 }
    }
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
    /// How many times the faults were cleared: a held request (`Fault.hold`) goes on once it changes.
    var faultClears = 0
    /// Set by `DevServer.stop`: long polls answer at once (with what they have) so the server can stop.
    var stopping = false
    /// Wrong passwords per user id (sign-in forms and the password change share it).
    var signInFailures = AttemptThrottle(limit: Limits.signInFailures, window: Limits.signInWindow)
    /// SMS codes sent per phone, known or not (a 429 only for known phones would reveal accounts).
    var smsSends = AttemptThrottle(limit: Limits.smsCodesPerPhone, window: Limits.smsWindow)
    /// Wrong attempts at the current SMS code per phone; only phones with a code are keys.
    var smsWrongAttempts: [String: Int] = [:]
}

/// Methods that get their own counter bucket; anything else a client sends is counted as `OTHER`.
let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"]

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

    mutating func addFault(
        route: String, status: Int?, reset: Bool, delayMs: Int, hold: Bool = false, count: Int?, headers: [(String, String)] = []
    ) throws -> Fault {
        guard faults.count < Limits.maxFaults else {
            throw APIError(409, "TOO_MANY_FAULTS", "at most \(Limits.maxFaults) faults at once; DELETE /__dev/faults clears them")
        }
        let parts = route.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[1].hasPrefix("/") else {
            throw APIError.invalidRequest("'route' must be 'METHOD /path' with * for one path segment")
        }
        let fault = Fault(
            id: nextFaultId, method: parts[0].uppercased(), pattern: pathSegments(String(parts[1])),
            route: route, status: status, reset: reset, delayMs: delayMs, hold: hold, remaining: count, headers: headers)
        nextFaultId += 1
        faults.append(fault)
        return fault
    }

    mutating func clearFaults() -> Int {
        faultClears &+= 1
        defer { faults.removeAll() }
        return faults.count
    }

    /// The counter of a request: its route template, or one bucket per method for everything that
    /// matched no route (keyed by the raw path, random paths would grow the table without bound).
    mutating func count(method: String, route: Route?, unmatched: String = "unmatched") {
        let key = route?.key ?? "\(knownMethods.contains(method) ? method : "OTHER") (\(unmatched))"
        counters[key, default: 0] += 1
    }

    /// `POST /__dev/reset`: faults, rate limit, counters and throttles go back to the start state.
    mutating func reset() {
        _ = clearFaults()
        setRateLimit(0)
        counters.removeAll()
        signInFailures.clearAll()
        smsSends.clearAll()
        smsWrongAttempts.removeAll()
    }

    mutating func setRateLimit(_ rps: Int) {
        rateLimit = rps
        rateWindowCount = 0
    }

    /// The rate limit's verdict on one more request (`POST /__dev/rate-limit`): nil without a limit. Every
    /// answer under a limit says where the caller stands, as real APIs do (GitHub's X-RateLimit-*, the IETF
    /// RateLimit fields): `RateLimit-Limit`, `RateLimit-Remaining` in this one-second window, `RateLimit-Reset`
    /// (seconds until it ends) and `RateLimit-Policy` (`R;w=1`), so a client can run at the ceiling without
    /// meeting it.
    mutating func rateQuota() -> (headers: [(String, String)], refusal: HTTPResponse?)? {
        guard rateLimit > 0 else { return nil }
        let second = Timestamp.now().seconds
        if second != rateWindowSecond {
            rateWindowSecond = second
            rateWindowCount = 0
        }
        rateWindowCount += 1
        let headers = [
            ("RateLimit-Limit", String(rateLimit)), ("RateLimit-Remaining", String(max(0, rateLimit - rateWindowCount))),
            ("RateLimit-Reset", "1"), ("RateLimit-Policy", "\(rateLimit);w=1")
        ]
        guard rateWindowCount > rateLimit else { return (headers, nil) }
        let refusal = APIError(429, "RATE_LIMITED", "more than \(rateLimit) requests per second", headers: [("Retry-After", "1")]).response
        return (headers, refusal)
    }
}
