import StarlineCore

/// At most `limit` attempts per key within a sliding `window` of seconds (sign-in failures per user,
/// SMS codes sent per phone). Guessing a password or a 6-digit code at thousands of requests per
/// second is then out of reach, as on real platforms.
struct AttemptThrottle {
    let limit: Int
    let window: Int64
    /// Keys can come from request bodies (phone numbers): past this many, the stalest are dropped, so
    /// the table cannot grow without bound (an attacker who floods it buys a few more attempts at best).
    let maxKeys: Int
    /// The last `limit` attempt times per key, oldest first.
    private var attempts: [String: [Int64]] = [:]

    init(limit: Int, window: Int64, maxKeys: Int = 10_000) {
        self.limit = limit
        self.window = window
        self.maxKeys = maxKeys
    }

    /// Seconds until `key` may try again (at least 1), or nil when it may try now.
    func retryAfter(_ key: String, now: Int64 = Timestamp.now().seconds) -> Int64? {
        guard let times = attempts[key], times.count >= limit, let oldest = times.first, oldest + window > now else { return nil }
        return max(1, oldest + window - now)
    }

    mutating func record(_ key: String, now: Int64 = Timestamp.now().seconds) {
        if attempts[key] == nil, attempts.count >= maxKeys {
            attempts = attempts.filter { $0.value.last.map { $0 + window > now } ?? false }
            if attempts.count >= maxKeys, let stalest = attempts.min(by: { ($0.value.last ?? 0) < ($1.value.last ?? 0) }) {
                attempts[stalest.key] = nil
            }
        }
        var times = attempts[key, default: []]
        times.append(now)
        if times.count > limit { times.removeFirst(times.count - limit) }
        attempts[key] = times
    }

    mutating func clear(_ key: String) { attempts[key] = nil }
    mutating func clearAll() { attempts.removeAll() }
}

/// The numbers documented in docs/openapi.yaml and the README.
enum Limits {
    /// Wrong sign-in passwords per user (HTML forms, `POST /api/password`) before 429.
    static let signInFailures = 5
    static let signInWindow: Int64 = 300
    /// Wrong codes before an SMS code is burned.
    static let smsCodeAttempts = 5
    /// SMS codes sent per phone number within the window.
    static let smsCodesPerPhone = 5
    static let smsWindow: Int64 = 3600
    /// Injected faults at once; more is a test bug, not a test.
    static let maxFaults = 1000
    /// The longest a fault keeps a request waiting: a `delayMs` delay, or a `hold` never released.
    static let maxFaultWaitMilliseconds = 600_000
    /// Pending sign-in requests and device codes kept (the routes are unauthenticated: every GET of
    /// the sign-in page adds a row); the oldest go first, expired ones whenever a row is added.
    static let maxPendingRows = 10_000
    /// Headers on one fault, and their sizes: enough for `Retry-After` and friends, never a flood.
    static let maxFaultHeaders = 16
    static let maxFaultHeaderName = 64
    static let maxFaultHeaderValue = 1024
    /// `POST /__dev/users`: users per call, sessions per user, and sessions per call (the answer
    /// carries every token, so this bounds it at about 10 MB).
    static let maxBulkUsers = 10_000
    static let maxSessionsPerUser = 100
    static let maxBulkSessions = 100_000
    /// `POST /__dev/conversations/{id}/messages`: messages per call (a benchmark's million fits; the
    /// answer is three numbers, the cost is the in-memory database and the time under the lock).
    static let maxBulkMessages = 1_000_000
    /// `GET /api/admin/users` page size.
    static let defaultUserPage = 100
    static let maxUserPage = 1000
}
