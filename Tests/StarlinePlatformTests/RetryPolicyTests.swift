import StarlineCore
@testable import StarlinePlatform
import Testing
@testable import StarlineHTTP

/// The retry loop (`HTTPExchange.send`) and PlatformAPI's use of it, over a stub exchange: no server, and
/// the waits are recorded by an injected clock instead of slept.
@Suite struct RetryPolicyTests {
    typealias Outcome = Result<HTTPReply, StarlineError>

    /// Plays a script, one outcome per attempt (the last one repeats), and records the requests.
    final class StubExchange: HTTPExchange {
        private let state: Locked<(script: [Outcome], requests: [HTTPRequestSpec])>
        /// Called with the attempt number (1-based) before it is answered.
        let onAttempt: @Sendable (Int) -> Void

        init(_ script: [Outcome], onAttempt: @escaping @Sendable (Int) -> Void = { _ in }) {
            state = Locked((script, []))
            self.onAttempt = onAttempt
        }

        func performBlocking(_ request: HTTPRequestSpec) throws -> HTTPReply {
            let (attempt, outcome) = state.withLock { s in
                s.requests.append(request)
                return (s.requests.count, s.script.count > 1 ? s.script.removeFirst() : s.script[0])
            }
            onAttempt(attempt)
            return try outcome.get()
        }

        var attempts: Int { state.withLock { $0.requests.count } }
        var requests: [HTTPRequestSpec] { state.withLock { $0.requests } }
    }

    /// Records every wait asked of it and returns at once; `now` is fixed.
    final class RecordingClock: Sendable {
        let waits = Locked<[Double]>([])
        let now: Int64

        init(now: Int64 = 1_700_000_000) { self.now = now }

        var clock: RetryClock {
            RetryClock(now: { [now] in now }, pause: { [waits] seconds in waits.withLock { $0.append(seconds) } })
        }
        var recorded: [Double] { waits.withLock { $0 } }
    }

    static func reply(_ status: Int, _ headers: [String: String] = [:], body: String = "{}") -> Outcome {
        .success(HTTPReply(status: status, headers: headers, body: Array(body.utf8)))
    }

    static let networkError = StarlineError(.network, "request to api.test failed: Couldn't connect to server", retryable: true)
    static let request = HTTPRequestSpec(url: "https://api.test/api/me")

    func api(_ exchange: StubExchange, retries: Int = 2, clock: RecordingClock) throws -> PlatformAPI {
        PlatformAPI(
            base: try BaseURL(validating: "https://api.test"), appId: "workbench", transport: exchange, retries: retries, clock: clock.clock
        )
    }

    /// `waits[n]` is the equal-jitter backoff of retry n: between half and all of `base × 2^n`, capped at `max`.
    func expectBackoff(_ waits: [Double], base: Double = 0.2, max cap: Double = 5, sourceLocation: SourceLocation = #_sourceLocation) {
        for (n, wait) in waits.enumerated() {
            let full = min(cap, base * Double(1 << n))
            #expect(
                wait >= full / 2 && wait <= full, "retry \(n) waited \(wait), outside [\(full / 2), \(full)]",
                sourceLocation: sourceLocation)
        }
    }

    // MARK: 5xx

    @Test func serverErrorsAreRetriedUntilAnAnswer() async throws {
        let stub = StubExchange([Self.reply(503), Self.reply(502), Self.reply(200)])
        let clock = RecordingClock()
        let reply = try await stub.send(Self.request, retry: RetryPolicy(retries: 3), clock: clock.clock)
        #expect(reply.status == 200)
        #expect(stub.attempts == 3)
        #expect(clock.recorded.count == 2)
        expectBackoff(clock.recorded)
    }

    @Test func serverErrorsAreRetriedUpToTheLimitThenMapped() async throws {
        let stub = StubExchange([Self.reply(503, body: #"{"error":{"code":"UNAVAILABLE","message":"down for maintenance"}}"#)])
        let clock = RecordingClock()
        let api = try api(stub, retries: 2, clock: clock)
        let error = await #expect(throws: StarlineError.self) { try await api.me(token: "tok") }
        #expect(stub.attempts == 3)  // the first attempt and 2 retries
        #expect(clock.recorded.count == 2)
        expectBackoff(clock.recorded)
        #expect(error?.code == .server && error?.retryable == true && error?.exitStatus == .transient)
        #expect(error?.details?["status"]?.intValue == 503 && error?.details?["route"]?.stringValue == "GET /api/me")
        #expect(error?.message.contains("down for maintenance") == true)
        // Without retries the first answer is final; the loop returns it as it is.
        let once = StubExchange([Self.reply(503)])
        #expect(try await once.send(Self.request, retry: .none, clock: clock.clock).status == 503)
        #expect(once.attempts == 1)
    }

    @Test func onlyRepeatableRequestsAreRetried() async throws {
        let clock = RecordingClock()
        // POST /api/password/sms-reset/request is not idempotent: never repeated.
        let post = StubExchange([Self.reply(503)])
        await #expect(throws: StarlineError.self) { try await api(post, clock: clock).requestSMSReset(phone: "+8613800000002") }
        #expect(post.attempts == 1)
        // Revocation is a POST the contract makes safe to repeat.
        let revoke = StubExchange([Self.reply(503)])
        await #expect(throws: StarlineError.self) { try await api(revoke, clock: clock).revoke(token: "tok") }
        #expect(revoke.attempts == 3)
        #expect(revoke.requests.allSatisfy { $0.method == "POST" && $0.url == "https://api.test/oauth/revoke" })
        // DELETE is.
        let delete = StubExchange([Self.reply(502), Self.reply(200, body: #"{"revoked":true,"current":false}"#)])
        let result = try await api(delete, clock: clock).revokeSession(token: "tok", id: "s1")
        #expect(result.revoked && !result.current)
        #expect(delete.attempts == 2)
    }

    // MARK: 429 and Retry-After

    @Test func rateLimitsHonourRetryAfterSeconds() async throws {
        let stub = StubExchange([Self.reply(429, ["retry-after": "3"]), Self.reply(200)])
        let clock = RecordingClock()
        #expect(try await stub.send(Self.request, retry: RetryPolicy(retries: 2), clock: clock.clock).status == 200)
        #expect(clock.recorded == [3])
        #expect(stub.attempts == 2)
    }

    @Test func rateLimitsHonourRetryAfterDates() async throws {
        // Sun, 06 Nov 1994 08:49:37 GMT is 784111777: the date is read against the injected clock.
        let clock = RecordingClock(now: 784_111_777)
        let later = StubExchange([Self.reply(429, ["retry-after": "Sun, 06 Nov 1994 08:49:41 GMT"]), Self.reply(200)])
        #expect(try await later.send(Self.request, retry: RetryPolicy(retries: 1), clock: clock.clock).status == 200)
        #expect(clock.recorded == [4])
        // A date already past means "now".
        let past = RecordingClock(now: 784_111_777)
        let earlier = StubExchange([Self.reply(429, ["retry-after": "Sun, 06 Nov 1994 08:00:00 GMT"]), Self.reply(200)])
        #expect(try await earlier.send(Self.request, retry: RetryPolicy(retries: 1), clock: past.clock).status == 200)
        #expect(past.recorded == [0])
    }

    @Test func retryAfterIsCapped() async throws {
        let clock = RecordingClock(now: 784_111_777)
        let seconds = StubExchange([Self.reply(429, ["retry-after": "3600"]), Self.reply(200)])
        _ = try await seconds.send(Self.request, retry: RetryPolicy(retries: 1), clock: clock.clock)
        let date = StubExchange([Self.reply(503, ["retry-after": "Sun, 06 Nov 1994 09:49:37 GMT"]), Self.reply(200)])
        _ = try await date.send(Self.request, retry: RetryPolicy(retries: 1, maxRetryAfter: 2), clock: clock.clock)
        #expect(clock.recorded == [10, 2])  // the default cap, then a policy's own
        // A Retry-After that is neither seconds nor a date: the policy's own backoff.
        let unreadable = RecordingClock()
        let soon = StubExchange([Self.reply(429, ["retry-after": "soon"]), Self.reply(200)])
        _ = try await soon.send(Self.request, retry: RetryPolicy(retries: 1), clock: unreadable.clock)
        #expect(unreadable.recorded.count == 1)
        expectBackoff(unreadable.recorded)
    }

    @Test func rateLimitsRunOutAsRateLimited() async throws {
        let stub = StubExchange([
            Self.reply(429, ["retry-after": "3600"], body: #"{"error":{"code":"RATE_LIMITED","message":"slow down"}}"#)
        ])
        let clock = RecordingClock()
        let error = await #expect(throws: StarlineError.self) { try await api(stub, retries: 1, clock: clock).sessions(token: "tok") }
        #expect(stub.attempts == 2)
        #expect(clock.recorded == [10])
        #expect(error?.code == .rateLimited && error?.retryable == true && error?.exitStatus == .transient)
        #expect(error?.details?["retryAfter"]?.intValue == 3600)
    }

    // MARK: Transport errors

    @Test func networkErrorsBackOffExponentiallyWithJitter() async throws {
        let stub = StubExchange(Array(repeating: .failure(Self.networkError), count: 4) + [Self.reply(200)])
        let clock = RecordingClock()
        #expect(try await stub.send(Self.request, retry: RetryPolicy(retries: 4), clock: clock.clock).status == 200)
        #expect(stub.attempts == 5)
        #expect(clock.recorded.count == 4)
        expectBackoff(clock.recorded)  // 0.1–0.2, 0.2–0.4, 0.4–0.8, 0.8–1.6 s
        // Timeouts too; the growth stops at maxDelay, and the last error is thrown when retries run out.
        let timeout = StarlineError(.timeout, "request to api.test timed out after 30 s", retryable: true)
        let failing = StubExchange([.failure(timeout)])
        let capped = RecordingClock()
        let error = await #expect(throws: StarlineError.self) {
            try await failing.send(Self.request, retry: RetryPolicy(retries: 5, baseDelay: 1, maxDelay: 3), clock: capped.clock)
        }
        #expect(error?.code == .timeout)
        #expect(failing.attempts == 6)
        #expect(capped.recorded.count == 5)
        expectBackoff(capped.recorded, base: 1, max: 3)  // 0.5–1, 1–2, then 1.5–3 s
        // The jitter spreads the waits (20 equal draws from a continuous range do not happen).
        #expect(Set((0..<20).map { _ in RetryPolicy(retries: 1).backoff(3) }).count > 1)
    }

    @Test func permanentErrorsAreNotRetried() async throws {
        for error in [
            StarlineError(.usage, "invalid HTTP method 'GET /x'"), StarlineError(.data, "the answer is too large"),
            StarlineError(.interrupted, "the request was cancelled"), StarlineError(.network, "not retryable", retryable: false)
        ] {
            let stub = StubExchange([.failure(error)])
            let clock = RecordingClock()
            let thrown = await #expect(throws: StarlineError.self) {
                try await stub.send(Self.request, retry: RetryPolicy(retries: 3), clock: clock.clock)
            }
            #expect(thrown?.code == error.code)
            #expect(stub.attempts == 1 && clock.recorded.isEmpty, "\(error.code) was retried")
        }
    }

    // MARK: 4xx

    @Test func clientErrorsAreNotRetried() async throws {
        for status in [400, 401, 403, 404, 409, 413, 422, 501, 505] {
            let stub = StubExchange([Self.reply(status), Self.reply(200)])
            let clock = RecordingClock()
            #expect(try await stub.send(Self.request, retry: RetryPolicy(retries: 3), clock: clock.clock).status == status)
            #expect(stub.attempts == 1 && clock.recorded.isEmpty, "HTTP \(status) was retried")
        }
        let stub = StubExchange([Self.reply(404, body: #"{"error":{"code":"NOT_FOUND","message":"no such session"}}"#)])
        let clock = RecordingClock()
        let error = await #expect(throws: StarlineError.self) { try await api(stub, clock: clock).revokeSession(token: "tok", id: "gone") }
        #expect(error?.code == .notFound && stub.attempts == 1 && clock.recorded.isEmpty)
    }

    // MARK: Cancellation

    @Test func cancellationDuringAnAttemptStopsRetries() async throws {
        // The loop runs on a thread of its own: the second attempt holds until the task has been cancelled from
        // outside; the injected wait returns regardless, and no third attempt follows.
        let second = Locked(false), cancelled = Locked(false)
        let stub = StubExchange([Self.reply(503)]) { attempt in
            guard attempt == 2 else { return }
            second.withLock { $0 = true }
            while !cancelled.withLock({ $0 }) { StarlineClock.threadSleep(seconds: 0.001) }
        }
        let clock = RecordingClock()
        let task = Task { try await stub.send(Self.request, retry: RetryPolicy(retries: 5), clock: clock.clock) }
        while !second.withLock({ $0 }) { try await Task.sleep(nanoseconds: 1_000_000) }
        task.cancel()
        cancelled.withLock { $0 = true }
        let result = await task.result
        guard case .failure(let error as StarlineError) = result else { Issue.record("expected an error, got \(result)"); return }
        #expect(error.code == .interrupted && error.exitStatus == .interrupted)
        #expect(error.message == "the request to api.test was cancelled")
        #expect(stub.attempts == 2)
    }

    @Test func cancellationDuringAWaitStopsRetries() async throws {
        // The system clock's wait must be cut short: a wait that ran its course leaves `interrupted` false. Not
        // timed, and the wait is long (600 s): under the full suite this test may come back from an await minutes
        // later (the test executor runs it after the tests queued before it), and with 60 s waits the three had
        // run their course before it cancelled.
        let interrupted = Locked(false)
        var clock = RetryClock.system
        clock.cancellablePause = { seconds, cancel in
            cancel.sleep(seconds)
            if cancel.isCancelled { interrupted.withLock { $0 = true } }
        }
        let stub = StubExchange([Self.reply(503)])
        let task = Task { try await stub.send(Self.request, retry: RetryPolicy(retries: 1, baseDelay: 600, maxDelay: 600), clock: clock) }
        while stub.attempts == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        task.cancel()
        let result = await task.result
        guard case .failure(let error as StarlineError) = result else { Issue.record("expected an error, got \(result)"); return }
        #expect(error.code == .interrupted)
        #expect(stub.attempts == 1)
        #expect(interrupted.withLock { $0 })
    }

    // MARK: The clients take any exchange

    @MainActor
    @Test func clientRunsOverAnyExchange() async throws {
        let me = #"{"user":{"id":"bob"},"roles":["member"],"session":{"id":"s-1","appId":"workbench","expiresAt":"2099-01-01T00:00:00Z"}}"#
        let stub = StubExchange([Self.reply(200, ["content-type": "application/json"], body: me)])
        let client = StarlightClient(
            configuration: .init(api: try BaseURL(validating: "https://api.test/base"), appId: "workbench"),
            store: nil, transport: stub)
        client.adoptMemoryToken("tok")
        let outcome = await client.restoreSession()
        #expect(outcome.state == .valid)
        #expect(client.session?.sessionId == "s-1" && client.session?.user["id"]?.stringValue == "bob")
        let request = try #require(stub.requests.first)
        #expect(request.method == "GET" && request.url == "https://api.test/base/api/me")
        #expect(request.headers.contains { $0.0 == "Authorization" && $0.1 == "Bearer tok" })
    }
}
