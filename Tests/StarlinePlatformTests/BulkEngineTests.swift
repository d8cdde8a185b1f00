import Foundation
import StarlineCore
@testable import StarlinePlatform
import Testing
@testable import StarlineHTTP
@testable import StarlineBulk

/// The bulk engine's logic, with the requests stubbed (the end-to-end tests run the real tool
/// against sl-devserver with faults).
@Suite struct BulkEngineTests {
    /// Runs `items` through the engine with `answer` as the server; the results in the order they ended.
    func run(_ items: [Int], _ configuration: BulkConfiguration, answer: @escaping @Sendable (Int, Int) -> BulkAttempt<BulkItemStatus>)
        -> (summary: BulkEngine.Summary, results: [BulkItemResult<Int, BulkItemStatus>])
    {
        let calls = Locked([Int: Int]())
        let results = Locked([BulkItemResult<Int, BulkItemStatus>]())
        let summary = BulkEngine.run(
            items, configuration,
            attempt: { item in
                let n = calls.withLock { c -> Int in
                    c[item, default: 0] += 1; return c[item]!
                }
                return answer(item, n)
            },
            finished: { result in
                results.withLock { $0.append(result) }
                return nil
            })
        return (summary, results.withLock { $0 })
    }

    @Test func everyItemEndsExactlyOnce() {
        let (summary, results) = run(Array(0..<1000), BulkConfiguration(parallel: 8)) { item, _ in
            .done(item % 10 == 0 ? .alreadyRevoked : .revoked)
        }
        #expect(results.count == 1000)
        #expect(Set(results.map(\.item)) == Set(0..<1000))
        #expect(results.filter { $0.status == .revoked }.count == 900 && results.filter { $0.status == .alreadyRevoked }.count == 100)
        #expect(summary.requests == 1000 && summary.stopError == nil)
    }

    @Test func transientFailuresAreRetriedUpToTheLimitWithBackoff() {
        let config = BulkConfiguration(parallel: 4, maxAttempts: 3, baseBackoff: 0.001, maxBackoff: 0.002)
        let (summary, results) = run(Array(0..<20), config) { item, call in
            if item == 7 { return .transient(StarlineError(.server, "503")) }
            return call < 2 ? .transient(StarlineError(.network, "reset")) : .done(.revoked)
        }
        let seven = results.first { $0.item == 7 }
        #expect(seven?.status == .failed && seven?.attempts == 3 && seven?.error?.code == .server)
        #expect(results.filter { $0.item != 7 }.allSatisfy { $0.status == .revoked && $0.attempts == 2 })
        #expect(results.filter { $0.status == .failed }.count == 1 && results.filter { $0.status == .revoked }.count == 19)
        #expect(summary.requests == 3 + 19 * 2)
    }

    /// A 429 pauses every worker: from the moment it is answered until its Retry-After is over, no worker sends
    /// anything (a lower bound on a pause, not a speed: the answers take 20 ms each so the run spans it).
    @Test func aThrottleFromOneWorkerPausesAll() {
        let starts = Locked([(time: UInt64, item: Int)]())
        let throttledAt = Locked(UInt64(0))
        let (summary, results) = run(Array(0..<64), BulkConfiguration(parallel: 8)) { item, call in
            let now = MonotonicClock.nanoseconds()
            starts.withLock { $0.append((now, item)) }
            if item == 10 && call == 1 {
                throttledAt.withLock { $0 = now }
                return .throttled(retryAfter: 0.3)
            }
            usleep(20_000)
            return .done(.revoked)
        }
        #expect(results.count == 64 && results.allSatisfy { $0.status == .revoked })
        #expect(summary.throttledMilliseconds >= 290, "the pause is counted: \(summary.throttledMilliseconds) ms")
        let t0 = throttledAt.withLock { $0 }
        // Workers that had passed the gate before the 429 was handed back may still start (≤ a few ms later);
        // after that, nothing until the pause is over.
        let inside = starts.withLock { $0 }.filter { $0.time > t0 + 20_000_000 && $0.time < t0 + 300_000_000 }
        #expect(inside.isEmpty, "requests inside the pause: \(inside.map(\.item))")
        #expect(results.first { $0.item == 10 }?.attempts == 2, "the throttled item was tried again")
    }

    @Test func theGateHalvesConcurrencyOnThrottleAndGrowsItBack() {
        let gate = RateGate(maxConcurrency: 8)
        #expect(gate.acquire())
        gate.release(.throttled(retryAfter: 0, fallback: 0))
        #expect(gate.allowedConcurrency == 4)
        for _ in 0..<(RateGate.successesPerStep * 4) {
            #expect(gate.acquire())
            gate.release(.answered)
        }
        #expect(gate.allowedConcurrency == 8)
    }

    @Test func theRateCapSpacesRequests() {
        let gate = RateGate(maxConcurrency: 4, requestsPerSecond: 50)
        let start = MonotonicClock.nanoseconds()
        for _ in 0..<11 {
            #expect(gate.acquire())
            gate.release(.answered)
        }
        // Ten gaps of 20 ms at least: the cap holds for a single worker too.
        #expect(MonotonicClock.nanoseconds() - start >= 190_000_000)
    }

    /// Runs `items` where item `stopper` answers `answer`; every later item is held until the stopper's
    /// result was reported, which the engine does after it stopped the run. Without the hold, the other
    /// workers' instant answers raced through every item while the stopping worker was off the CPU (a flaky
    /// test under load); with it, the items in flight at the stop are the only ones after it.
    func runStoppedAt(_ stopper: Int, of items: Int, parallel: Int, failFast: Bool = false, answer: BulkAttempt<BulkItemStatus>)
        -> (summary: BulkEngine.Summary, results: [BulkItemResult<Int, BulkItemStatus>])
    {
        let reported = Locked(false)
        let results = Locked([BulkItemResult<Int, BulkItemStatus>]())
        let summary = BulkEngine.run(
            Array(0..<items), BulkConfiguration(parallel: parallel, failFast: failFast),
            attempt: { item in
                if item == stopper { return answer }
                if item > stopper {
                    // At most 10 s: a run that never reports the stopper fails the expectations, not hangs.
                    let deadline = MonotonicClock.nanoseconds() + 10_000_000_000
                    while !reported.withLock({ $0 }) && MonotonicClock.nanoseconds() < deadline { usleep(1000) }
                }
                return .done(.revoked)
            },
            finished: { result in
                results.withLock { $0.append(result) }
                if result.item == stopper { reported.withLock { $0 = true } }
                return nil
            })
        return (summary, results.withLock { $0 })
    }

    /// Not an admin (or the caller's session ended): the run stops at once; what was not attempted is skipped.
    @Test func aStopRunAnswerStopsEveryWorker() {
        let (summary, results) = runStoppedAt(3, of: 500, parallel: 4, answer: .stopRun(StarlineError(.forbidden, "not an admin")))
        #expect(summary.stopError?.code == .forbidden)
        #expect(results.count < 500 || results.filter { $0.status == .skipped }.count > 0)
        #expect(results.allSatisfy { $0.status != .skipped || $0.attempts == 0 && $0.error?.message.hasPrefix("not attempted") == true })
        // The stopping item, the three before it, and at most the three the other workers held: none after the stop.
        #expect(summary.requests <= 4 + 3, "no request after the stop: \(summary.requests)")
    }

    @Test func failFastStopsAtTheFirstFailure() {
        let (summary, _) = runStoppedAt(5, of: 200, parallel: 2, failFast: true, answer: .failed(StarlineError(.notFound, "gone")))
        #expect(summary.stopError?.code == .partial)
        #expect(
            summary.requests <= 6 + 1, "the failing item, the five before it, and the one held on the other worker: \(summary.requests)")
    }

    /// The finished callback failing (the journal cannot be written) stops the run.
    @Test func aJournalFailureStopsTheRun() {
        let seen = Locked(0)
        // Each answer takes 2 ms, as a request would: instant answers let the other worker race through all 300
        // while the one whose journal write failed was off the CPU before it could stop the run.
        let summary = BulkEngine.run(
            Array(0..<300), BulkConfiguration(parallel: 2),
            attempt: { _ in
                usleep(2000)
                return BulkAttempt<BulkItemStatus>.done(.revoked)
            },
            finished: { _ in
                seen.withLock {
                    $0 += 1; return $0 == 10 ? StarlineError(.storage, "disk full") : nil
                }
            })
        #expect(summary.stopError?.code == .storage)
        #expect(summary.requests < 300)
    }

    // MARK: Classification of answers

    @Test func answersAreClassifiedAsTheRunNeeds() throws {
        let transport = HTTPTransport()
        let revoker = SessionRevoker(
            api: PlatformAPI(base: try BaseURL(validating: "https://api.test"), appId: "workbench", transport: transport, retries: 0),
            transport: transport, token: "t", ownUser: nil)
        func classify(_ status: Int, _ body: String = "{}", headers: [String: String] = [:]) -> BulkAttempt<BulkItemStatus> {
            revoker.classify(.success(HTTPReply(status: status, headers: headers, body: Array(body.utf8))), route: "DELETE /x").attempt
        }
        guard case .done(.revoked) = classify(200, #"{"revoked":true}"#) else { Issue.record("200 revoked"); return }
        guard case .done(.alreadyRevoked) = classify(200, #"{"revoked":false}"#) else { Issue.record("200 already"); return }
        guard case .done(.notFound) = classify(404, #"{"error":{"code":"NOT_FOUND","message":"x"}}"#) else { Issue.record("404"); return }
        guard case .throttled(let after) = classify(429, "{}", headers: ["retry-after": "3"]), after == 3 else {
            Issue.record("429"); return
        }
        guard case .transient = classify(503) else { Issue.record("503"); return }
        guard case .stopRun(let ended) = classify(401, #"{"error":{"code":"SESSION_REVOKED","message":"x"}}"#),
            ended.exitStatus == .sessionEnded
        else {
            Issue.record("401"); return
        }
        guard case .failed = classify(400, #"{"error":{"code":"INVALID_REQUEST","message":"x"}}"#) else { Issue.record("400"); return }
        guard case .failed = classify(200, "not json") else { Issue.record("malformed 200"); return }
        let current = revoker.classify(.success(HTTPReply(status: 200, body: Array(#"{"revoked":true,"current":true}"#.utf8))), route: "x")
        #expect(current.wasCurrent)
        guard case .transient = revoker.classify(.failure(StarlineError(.network, "reset", retryable: true)), route: "x").attempt else {
            Issue.record("network"); return
        }
    }

    /// Answers `GET /api/me` as `me` says (nil: no answer at all); counts the questions.
    final class MeExchange: HTTPExchange {
        let me: HTTPReply?
        let asked = Locked(0)
        init(_ me: HTTPReply?) { self.me = me }
        func performBlocking(_ request: HTTPRequestSpec) throws -> HTTPReply {
            asked.withLock { $0 += 1 }
            guard request.url.hasSuffix("/api/me"), let me else { throw StarlineError(.network, "connection refused", retryable: true) }
            return me
        }
    }

    static func me(roles: String, status: Int = 200) -> HTTPReply {
        let body =
            status == 200
            ? #"{"user":{"id":"root"},"roles":\#(roles),"session":{"id":"s","appId":"a","expiresAt":"2030-01-01T00:00:00Z"}}"#
            : #"{"error":{"code":"SESSION_REVOKED","message":"revoked"}}"#
        return HTTPReply(status: status, headers: ["content-type": "application/json"], body: Array(body.utf8))
    }

    /// S16: a 403 on one target is that item's failure while the caller is still signed in as an admin (the
    /// server says so on `GET /api/me`); the run stops only when the caller is refused — the admin role gone,
    /// the session ended. No answer to the question leaves the item to be tried again.
    @Test func testS16AForbiddenItemFailsAloneWhileTheCallerIsStillAnAdmin() throws {
        let forbidden = HTTPReply(status: 403, body: Array(#"{"error":{"code":"FORBIDDEN","message":"protected user"}}"#.utf8))
        func classify(me: HTTPReply?, route: String = "DELETE /api/admin/users/{uid}/sessions/{id}") throws -> (
            BulkAttempt<BulkItemStatus>, Int
        ) {
            let exchange = MeExchange(me)
            let revoker = SessionRevoker(
                api: PlatformAPI(base: try BaseURL(validating: "https://api.test"), appId: "workbench", transport: exchange, retries: 0),
                transport: exchange, token: "t", ownUser: nil)
            let first = revoker.classify(.success(forbidden), route: route).attempt
            _ = revoker.classify(.success(forbidden), route: route).attempt
            return (first, exchange.asked.withLock { $0 })
        }
        let (admin, asked) = try classify(me: Self.me(roles: #"["admin"]"#))
        guard case .failed(let own) = admin, own.exitStatus == .forbidden, own.message.contains("this item only") else {
            Issue.record("a 403 while still an admin: \(admin)"); return
        }
        #expect(asked == 1, "two 403s within a second share one question")
        guard case .stopRun(let gone) = try classify(me: Self.me(roles: "[]")).0, gone.exitStatus == .forbidden,
            gone.message.contains("no longer has the admin role")
        else {
            Issue.record("a 403 after the admin role was taken away stops the run"); return
        }
        guard case .failed = try classify(me: Self.me(roles: "[]"), route: "DELETE /api/sessions/{id}").0 else {
            Issue.record("the caller's own route needs no role: the 403 is the item's"); return
        }
        guard case .stopRun(let ended) = try classify(me: Self.me(roles: "[]", status: 401)).0, ended.exitStatus == .sessionEnded else {
            Issue.record("a 403 while the caller's session has ended stops the run"); return
        }
        guard case .transient = try classify(me: nil).0 else { Issue.record("no answer to the question: tried again"); return }
    }
}
