import Foundation
import StarlineCore
import StarlineSQLite
import Testing
@testable import StarlinePlatform
@testable import StarlineHTTP

/// Numbers from server replies and stored rows at the ends of Int64, beyond
/// it (1e30) and negative. Each one is a clear error or a clamped, documented value (`ReplyLimits`), never a
/// trap. Server replies come from a stub exchange; stored rows are written into a real store's database.
@Suite struct AbsurdNumberTests {
    static let extremes = ["9223372036854775807", "-9223372036854775808", "1e30", "-1e30", "99999999999999999999", "-5", "0", "3.5"]

    /// Answers by path suffix; anything else is a 404.
    final class RoutedExchange: HTTPExchange {
        let routes: [(String, HTTPReply)]
        init(_ routes: [(String, HTTPReply)]) { self.routes = routes }
        func performBlocking(_ request: HTTPRequestSpec) throws -> HTTPReply {
            let path = WebURL(request.url)?.path ?? request.url
            return routes.first { path.hasSuffix($0.0) }?.1 ?? HTTPReply(status: 404, body: Array("{}".utf8))
        }
    }

    static func json(_ text: String, status: Int = 200) -> HTTPReply {
        HTTPReply(status: status, headers: ["content-type": "application/json"], body: Array(text.utf8))
    }

    static func grant(expiresIn: String) -> HTTPReply {
        json(#"{"access_token":"AT","token_type":"Bearer","session_id":"s-1","expires_in":\#(expiresIn),"user":{"id":"bob"},"roles":[]}"#)
    }

    func api(_ routes: [(String, HTTPReply)]) throws -> PlatformAPI {
        PlatformAPI(
            base: try BaseURL(validating: "https://api.test"), appId: "workbench", transport: RoutedExchange(routes), retries: 0,
            clock: RetryClock(now: { 1_700_000_000 }, pause: { _ in }))
    }

    // MARK: Server replies

    /// A token's `expires_in` beyond 10 years is 10 years; ≤ 0 or a fraction is DATA_ERROR.
    @Test("token expires_in: huge values clamp to 10 years, negative/zero/fractional are DATA_ERROR", arguments: extremes)
    func tokenLifetime(_ value: String) async throws {
        let api = try api([("/oauth/token", Self.grant(expiresIn: value))])
        let result = await attempt { try await api.exchangeCode(code: "c", redirectURI: "r", verifier: "v", deviceName: "d") }
        switch value {
        case "9223372036854775807", "1e30", "99999999999999999999":
            #expect(try result.get().expiresIn == ReplyLimits.maxTokenLifetime)
        default:
            let error = try #require(result.failure)
            #expect(error.code == .data && error.exitStatus == .data, "\(value): \(error)")
            #expect(error.message.contains("'expires_in'"), "\(error.message)")
        }
    }

    /// The device code's lifetime is at most a day, its interval 0…300 s (5 when unusable).
    @Test("device authorization: expires_in clamps to a day, interval to 0…300 s or the default 5", arguments: extremes)
    func deviceAuthorization(_ value: String) async throws {
        let body = #"{"device_code":"DC","user_code":"ABCD-EFGH","verification_uri":"https://api.test/oauth/device","#
        let api = try api([("/oauth/device_authorization", Self.json(body + #""expires_in":600,"interval":\#(value)}"#))])
        let interval = try await api.deviceAuthorization().interval
        let expected: Int64 =
            switch value {
            case "9223372036854775807", "1e30", "99999999999999999999": 300
            case "0": 0
            default: 5
            }
        #expect(interval == expected, "interval \(value)")

        let lifetime = try self.api([("/oauth/device_authorization", Self.json(body + #""expires_in":\#(value),"interval":5}"#))])
        let result = await attempt { try await lifetime.deviceAuthorization() }
        if ["9223372036854775807", "1e30", "99999999999999999999"].contains(value) {
            #expect(try result.get().expiresIn == ReplyLimits.maxDeviceCodeLifetime)
        } else {
            #expect(result.failure?.code == .data, "expires_in \(value)")
        }
    }

    @Test(
        "a device reply whose verification URI or user code would act on the terminal, or is not https, is DATA_ERROR",
        arguments: [
            (#""user_code":"ABCD-EFGH","verification_uri":"https://api.test/oauth/device\u001b]52;c;ZXZpbA==\u0007""#, "verification_uri"),
            (#""user_code":"ABCD-EFGH","verification_uri":"https://api.test/\u202eexe.txt""#, "verification_uri"),
            (#""user_code":"ABCD-EFGH","verification_uri":"http://evil.example/device""#, "verification_uri"),
            (#""user_code":"ABCD-EFGH","verification_uri":"javascript:alert(1)""#, "verification_uri"),
            (
                #""user_code":"ABCD-EFGH","verification_uri":"https://api.test/d","verification_uri_complete":"https://api.test/d\u009b2J""#,
                "verification_uri_complete"
            ),
            (#""user_code":"\u001b[2JABCD","verification_uri":"https://api.test/oauth/device""#, "user_code"),
            (#""user_code":"ABCD\u200bEFGH","verification_uri":"https://api.test/oauth/device""#, "user_code")
        ])
    func hostileDeviceReplyIsRefused(_ members: String, _ field: String) async throws {
        let body = #"{"device_code":"DC",\#(members),"expires_in":600,"interval":5}"#
        let result = await attempt { try await self.api([("/oauth/device_authorization", Self.json(body))]).deviceAuthorization() }
        let error = try #require(result.failure, "\(members)")
        #expect(error.code == .data && error.details?["field"]?.stringValue == field, "\(error)")
    }

    @Test("a device reply with http on loopback and an ordinary code is shown as sent")
    func loopbackDeviceReplyIsAccepted() async throws {
        let body = #"{"device_code":"DC","user_code":"ABCD-EFGH","verification_uri":"http://127.0.0.1:8080/oauth/device","expires_in":600}"#
        let device = try await api([("/oauth/device_authorization", Self.json(body))]).deviceAuthorization()
        #expect(device.verificationURI == "http://127.0.0.1:8080/oauth/device" && device.userCode == "ABCD-EFGH")
    }

    @Test("slow_down adds 5 s and never passes 300 s; instants stay within years 0001–9999")
    func arithmeticHelpers() {
        #expect(ReplyLimits.slowedDown(0) == 5 && ReplyLimits.slowedDown(298) == 300 && ReplyLimits.slowedDown(.max) == 300)
        #expect(ReplyLimits.slowedDown(.min) == 5)
        #expect(ReplyLimits.instant(1_700_000_000, plus: .max) == Timestamp.supportedRange.upperBound)
        #expect(ReplyLimits.instant(.max, plus: .max) == Timestamp.supportedRange.upperBound)
        #expect(ReplyLimits.instant(.min, plus: -1) == Timestamp.supportedRange.lowerBound)
        #expect(ReplyLimits.nanoseconds(.infinity) == 0 && ReplyLimits.nanoseconds(-1) == 0 && ReplyLimits.nanoseconds(.nan) == 0)
        #expect(ReplyLimits.nanoseconds(1e300) == 86_400 * 1_000_000_000)
    }

    /// A `Retry-After` near 2^63 (or past it) is capped by `maxRetryAfter` before any
    /// conversion; a signed one is not delta-seconds and leaves the policy's backoff. The final 429's details
    /// carry the server's value, saturated (this mapping trapped on 9223372036854775807).
    @Test(
        "Retry-After at the ends of Int64 and beyond: capped, or the own backoff; a final 429 maps without a trap",
        arguments: ["9223372036854775807", "99999999999999999999999", "-9223372036854775808", "-5", "1e30"])
    func retryAfter(_ value: String) async throws {
        let waits = Locked<[Double]>([])
        let clock = RetryClock(now: { 1_700_000_000 }, pause: { s in waits.withLock { $0.append(s) } })
        let stub = RoutedExchange([("/api/me", HTTPReply(status: 429, headers: ["retry-after": value], body: Array("{}".utf8)))])
        let reply = try await stub.send(HTTPRequestSpec(url: "https://api.test/api/me"), retry: RetryPolicy(retries: 1), clock: clock)
        #expect(reply.status == 429)
        let wait = try #require(waits.withLock { $0 }.first)
        if value.hasPrefix("-") || value == "1e30" {
            #expect(wait <= 0.2, "\(value) is not delta-seconds: the first backoff (≤ 0.2 s), not \(wait)")
        } else {
            #expect(wait == 10, "\(value) waits maxRetryAfter")
        }

        let api = PlatformAPI(
            base: try BaseURL(validating: "https://api.test"), appId: "workbench", transport: stub, retries: 0, clock: clock)
        let error = try #require(await attempt { try await api.me(token: "t") }.failure)
        #expect(error.code == .rateLimited)
        let expected: Int64? = value.hasPrefix("-") || value == "1e30" ? nil : .max
        #expect(error.details?["retryAfter"]?.intValue == expected)
    }

    /// A whole device sign-in whose server answers with absurd numbers: the pending login
    /// expires within a day, the session within 10 years — both times the store can hold and print.
    @MainActor @Test("a device sign-in with expires_in = 2^63 − 1 everywhere stores clamped times")
    func deviceLoginWithAbsurdLifetimes() async throws {
        let fixture = try StoreFixture()
        let store = try fixture.store()
        let body =
            #"{"device_code":"DC","user_code":"ABCD-EFGH","verification_uri":"https://api.test/oauth/device","#
            + #""expires_in":9223372036854775807,"interval":0}"#
        let exchange = RoutedExchange([
            ("/oauth/device_authorization", Self.json(body)),
            ("/oauth/token", Self.grant(expiresIn: "9223372036854775807"))
        ])
        let client = StarlightClient(
            configuration: .init(api: try BaseURL(validating: "https://api.test"), appId: "workbench"),
            store: store, transport: exchange)
        let before = Timestamp.now().seconds
        var pendingExpiry: Int64?
        let session = try await client.login(
            .device(present: { _ in
                pendingExpiry = try? store.withState { try $0.pendingLogin()?.expiresAt }
            }))
        #expect(try #require(pendingExpiry) <= Timestamp.now().seconds + ReplyLimits.maxDeviceCodeLifetime)
        #expect(
            session.expiresAt >= before + ReplyLimits.maxTokenLifetime
                && session.expiresAt <= Timestamp.now().seconds + ReplyLimits.maxTokenLifetime)
        #expect(try store.withState { try $0.candidate()?.expiresAt } == session.expiresAt)
        #expect(session.json()["expiresAt"]?.stringValue?.count == 20)
    }

    // MARK: Stored rows

    /// Writes `sql` straight into the store's database (as a damaged or tampered file would hold it).
    func tamper(_ fixture: StoreFixture, _ sql: String) throws {
        let db = try SQLiteDatabase(path: fixture.state + "/sessions.db")
        try db.execute(sql)
    }

    /// A stored time outside years 0001–9999 is CORRUPT_FILE (exit 12) naming the column;
    /// restore reports keptUnverified/corruptRecord with exit 12; `clear` removes it.
    @MainActor
    @Test(
        """
        stored candidate times at INT64_MIN / INT64_MAX are CORRUPT_FILE; restore says so (exit 12); clear removes \
        them
        """,
        arguments: ["expires_at", "created_at", "verified_at"], ["-9223372036854775808", "9223372036854775807"])
    func corruptCandidate(_ column: String, _ value: String) async throws {
        let fixture = try StoreFixture()
        let store = try fixture.store()
        try store.withState { try $0.saveCandidate(sampleCandidate(token: "tok", sessionId: "s-1")) }
        try tamper(fixture, "UPDATE candidates SET \(column) = \(value)")
        let error = #expect(throws: StarlineError.self) { _ = try store.withState { try $0.candidate() } }
        #expect(error?.code == .corruptFile && error?.exitStatus == .data)
        #expect(
            error?.message
                == "stored session in \(store.databasePath) is corrupt: \(column) is \(value), outside the years 0001–9999; it was left untouched (sl-login clear removes it)"
        )

        let client = StarlightClient(
            configuration: .init(api: try BaseURL(validating: "https://api.test"), appId: "workbench"),
            store: store, transport: RoutedExchange([]))
        let outcome = await client.restoreSession(maxAge: 300)
        #expect(outcome.state == .keptUnverified && outcome.reason == "corruptRecord" && outcome.exitStatus == .data)
        #expect(outcome.json["state"]?.stringValue == "keptUnverified")
        try client.clearSession()
        #expect(await client.restoreSession().state == .absent)
    }

    /// A pending login with an impossible expiry is CORRUPT_FILE, and `cancel` removes it;
    /// a pending revocation's created_at likewise; counters at Int64.max wrap or saturate instead of trapping.
    @MainActor @Test("corrupt pending login / revocation rows and counters at Int64.max never trap")
    func corruptPendingRowsAndCounters() async throws {
        let fixture = try StoreFixture()
        let store = try fixture.store()
        try store.withState { try $0.savePendingLogin(samplePending(state: "st")) }
        try tamper(fixture, "UPDATE pending_logins SET expires_at = 9223372036854775807")
        let pending = #expect(throws: StarlineError.self) { _ = try store.withState { try $0.pendingLogin() } }
        #expect(pending?.code == .corruptFile && pending?.message.contains("(sl-login cancel removes it)") == true)
        let client = StarlightClient(
            configuration: .init(api: try BaseURL(validating: "https://api.test"), appId: "workbench"),
            store: store, transport: RoutedExchange([]))
        #expect(await client.restoreSession().exitStatus == .data)
        #expect(try client.cancelLogin() == true)
        #expect(try store.withState { try $0.pendingLogin() } == nil)

        _ = try store.withState { try $0.addPendingRevocation(sessionId: "old", accessToken: "tok") }
        try tamper(fixture, "UPDATE pending_revocations SET attempts = 9223372036854775807")
        await client.retryPendingRevocations()  // the stub answers 404: one more failed attempt, saturated
        #expect(try store.withState { try $0.pendingRevocations().first?.attempts } == Int.max)
        try tamper(fixture, "UPDATE pending_revocations SET created_at = -9223372036854775808")
        let revocation = #expect(throws: StarlineError.self) { _ = try store.withState { try $0.pendingRevocations() } }
        #expect(revocation?.code == .corruptFile && revocation?.details?["column"]?.stringValue == "created_at")

        try tamper(fixture, "INSERT OR REPLACE INTO generations (store_key, generation) VALUES ('\(store.key.id)', 9223372036854775807)")
        let next = try store.withState { try $0.bumpGeneration() }
        #expect(next == .min, "wraps: still a change, never a trap")
    }
}

/// `Result(catching:)` for an async body.
func attempt<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
    do { return .success(try await body()) } catch { return .failure(error) }
}

extension Result {
    var failure: StarlineError? {
        if case .failure(let error) = self { return error as? StarlineError }
        return nil
    }
}
