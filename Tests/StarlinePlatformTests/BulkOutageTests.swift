import Foundation
import StarlineCore
import StarlineTestSupport
@testable import StarlinePlatform
import Testing
@testable import StarlineBulk

/// Bulk runs at fleet scale: outages are the run's problem, not the item's; a stopped run drains; items are
/// pulled as they come. The requests are stubbed and time is virtual (`BulkClock.virtual`): a 300 s outage
/// budget runs out in microseconds. The end-to-end tests run the real tool against sl-devserver faults.
@Suite struct BulkOutageTests {
    struct Run {
        var summary: BulkEngine.Summary
        var results: [BulkItemResult<Int, BulkItemStatus>]
        var events: [OutageWatch.Event.Kind]
    }

    /// `answer(item, request number of the whole run)` plays the server.
    func run(
        _ count: Int, parallel: Int = 8, maxAttempts: Int = 5, outageTimeout: Double? = 300,
        serverAnswers: (@Sendable () -> StarlineError?)? = nil, onOutage: @escaping @Sendable (OutageWatch.Event.Kind) -> Void = { _ in },
        answer: @escaping @Sendable (Int, Int) -> BulkAttempt<BulkItemStatus>
    ) -> Run {
        let requests = Locked(0)
        let results = Locked([BulkItemResult<Int, BulkItemStatus>]())
        let events = Locked([OutageWatch.Event.Kind]())
        let configuration = BulkConfiguration(parallel: parallel, maxAttempts: maxAttempts, outageTimeout: outageTimeout, clock: .virtual())
        let engine = BulkRun<Int, BulkItemStatus>(
            configuration,
            onOutage: { event in
                events.withLock { $0.append(event.kind) }
                onOutage(event.kind)
            }, serverAnswers: serverAnswers)
        let next = Locked(0)
        let summary = engine.run(
            source: {
                next.withLock { n in
                    guard n < count else { return nil }
                    defer { n += 1 }
                    return n
                }
            },
            attempt: { item in
                let n = requests.withLock {
                    $0 += 1; return $0
                }
                return answer(item, n)
            },
            finished: { result in
                results.withLock { $0.append(result) }
                return nil
            })
        return Run(summary: summary, results: results.withLock { $0 }, events: events.withLock { $0 })
    }

    /// The devserver's 50-fault burst, stubbed: the first 50 requests of the run fail for everyone. Every item
    /// is revoked, none is charged for the outage (one attempt each), the wait is reported.
    @Test func testAnOutageIsTheRunsProblemNotTheItems() {
        let served = Locked(0)
        // The server's other routes (the probe when no fresh item is left) are down as long as the burst lasts.
        let r = run(300, serverAnswers: { served.withLock { $0 } < 50 ? StarlineError(.server, "503") : nil }) { _, n in
            served.withLock { $0 = max($0, n) }
            return n <= 50 ? .transient(StarlineError(.server, "503 Service Unavailable")) : .done(.revoked)
        }
        #expect(r.results.count == 300 && r.results.allSatisfy { $0.status == .revoked })
        #expect(
            r.results.allSatisfy { $0.attempts == 1 },
            "attempts made while the server was down are not the items': \(r.results.map(\.attempts).filter { $0 != 1 })")
        #expect(r.summary.stopError == nil && r.summary.outageRequests > 0 && r.summary.outageMilliseconds > 0)
        #expect(r.events.contains(.down) && r.events.last == .up)
        #expect(r.summary.requests == 300 + 50)
    }

    /// Without the outage watch (the old behaviour), the same burst fails items after their attempts.
    @Test func testWithoutTheWatchTheSameBurstFailsItems() {
        let r = run(300, maxAttempts: 2, outageTimeout: nil) { _, n in n <= 50 ? .transient(StarlineError(.server, "503")) : .done(.revoked)
        }
        #expect(r.results.contains { $0.status == .failed })
    }

    /// A server that never comes back: after --outage-timeout of waiting the run stops; the items not finished
    /// are `skipped` (resumable, exit 7 by the transient code), none `failed`.
    @Test func testAServerDownPastTheTimeoutSkipsWhatIsLeft() {
        let r = run(100, outageTimeout: 300, serverAnswers: { StarlineError(.network, "connection refused", retryable: true) }) { _, n in
            guard n > 20 else { return .done(.revoked) }
            // Virtual time makes an item's backoff instant: on a starved machine one worker can spend all its
            // attempts before the other workers' requests fail; its item waits for their outcome (`exhausted`).
            return .transient(StarlineError(.network, "connection refused", retryable: true))
        }
        #expect(r.results.count == 100)
        #expect(r.results.filter { $0.status == .revoked }.count <= 20)
        #expect(!r.results.contains { $0.status == .failed }, "an outage fails no item")
        #expect(r.results.filter { $0.status == .skipped }.count >= 80)
        #expect(r.summary.stopError?.code == .network && r.summary.stopError?.exitStatus == .transient)
        #expect(r.summary.stopError?.details?["outage"] == .bool(true))
        #expect(r.summary.outageMilliseconds >= 300_000, "waited the whole budget (virtual time)")
    }

    /// S16: with several workers, the answer to a request sent before the server went down can come after other
    /// items failed. It proves nothing about them: it neither ends the outage nor makes them known-bad, so no
    /// item fails and every one not done is skipped. (The 8th request is held until the failures after it made
    /// the server suspect, which under load happened by chance and failed a few items.)
    @Test func testS16AnAnswerToARequestSentBeforeTheOutageBlamesNoItem() {
        let suspected = Locked(false)
        let r = run(100, outageTimeout: 300, onOutage: { kind in if kind == .suspect { suspected.withLock { $0 = true } } }) { _, n in
            if n == 8 {
                let deadline = MonotonicClock.nanoseconds() + 30_000_000_000
                while !suspected.withLock({ $0 }), MonotonicClock.nanoseconds() < deadline { usleep(1000) }
                return .done(.revoked)
            }
            return n < 8 ? .done(.revoked) : .transient(StarlineError(.network, "connection refused", retryable: true))
        }
        #expect(suspected.withLock { $0 }, "the failures after the held request made the server suspect")
        #expect(
            !r.results.contains { $0.status == .failed },
            "an outage fails no item: \(r.results.filter { $0.status == .failed }.map(\.item))")
        #expect(r.results.filter { $0.status == .revoked }.count == 8)
        #expect(r.results.filter { $0.status == .skipped }.count == 92)
        #expect(!r.events.contains(.up), "an answer older than the failures ends no outage: \(r.events)")
        #expect(r.summary.stopError?.details?["outage"] == .bool(true))
    }

    /// The watch itself: an answer makes known-bad only the items that failed before its request went out
    /// (`ticket`), and a confirmed outage ends only with a probe's answer.
    @Test func testS16AnAnswerSpeaksOnlyOfTheFailuresBeforeItsRequest() {
        let events = Locked([OutageWatch.Event.Kind]())
        let watch = OutageWatch(threshold: 3, timeout: 300, clock: .virtual(), onEvent: { e in events.withLock { $0.append(e.kind) } })
        let error = StarlineError(.server, "503")
        _ = watch.transientFailure(item: 1, probe: false, error: error)
        let early = watch.ticket  // a request sent after the first failure, before the other two
        for item in 2...3 { _ = watch.transientFailure(item: item, probe: false, error: error) }
        #expect(watch.phase == .suspect)
        watch.answered(ticket: early)
        #expect(watch.phase == .up, "an answer between failures ends a suspicion")
        #expect(watch.transientFailure(item: 1, probe: false, error: error) == .charged(streak: -1), "failed before it: known-bad")
        let second = watch.transientFailure(item: 2, probe: false, error: error)
        #expect(second != .charged(streak: -1) && second != .free, "failed after it went out: not known-bad")
        for item in 3...4 { _ = watch.transientFailure(item: item, probe: false, error: error) }
        #expect(watch.phase == .suspect)
        guard case .probe = watch.admit(item: 9) else {
            Issue.record("an item that never failed probes")
            return
        }
        #expect(watch.transientFailure(item: 9, probe: true, error: error) == .free)
        #expect(watch.phase == .down, "the probe failed: the suspicion is confirmed")
        watch.answered(ticket: early)
        #expect(watch.phase == .down, "a request in flight since before the suspicion does not end the outage")
        watch.answered(probe: true)
        #expect(watch.phase == .up)
        #expect(events.withLock { $0 } == [.suspect, .suspect, .down, .up])
    }

    /// One bad item among good ones is no outage: it is charged its own attempts and fails; the others pass.
    @Test func testOneBadItemSpendsItsOwnAttempts() {
        let r = run(40, parallel: 4, maxAttempts: 5) { item, _ in item == 7 ? .transient(StarlineError(.server, "500")) : .done(.revoked) }
        let seven = r.results.first { $0.item == 7 }
        #expect(seven?.status == .failed && seven?.attempts == 5)
        #expect(r.results.filter { $0.status == .revoked }.count == 39)
        #expect(!r.events.contains(.down))
    }

    /// S16: a few bad items among many good ones — five that always answer 500 (one user's sessions, side by
    /// side in the plan) and three whose requests hang until they time out — neither stall nor stop the run:
    /// each spends its own attempts and fails with its cause, every other item is revoked, and the run is not
    /// ended by the outage budget.
    @Test func testS16AFewBadItemsNeverStallOrStopTheRun() {
        let persistent = Set(100...104), hanging = Set(300...302)
        // The server answers other routes (GET /api/me): what the run's tail asks when no fresh item is left.
        let r = run(1000, parallel: 8, outageTimeout: 300, serverAnswers: { nil }) { item, _ in
            if persistent.contains(item) { return .transient(StarlineError(.server, "500 Internal Server Error")) }
            if hanging.contains(item) {
                usleep(20_000)  // a request held by the server until the client's timeout
                return .transient(StarlineError(.timeout, "no answer within the timeout", retryable: true))
            }
            return .done(.revoked)
        }
        #expect(r.summary.stopError == nil, "the run ended early: \(r.summary.stopError?.message ?? "")")
        #expect(r.results.count == 1000)
        #expect(r.results.filter { $0.status == .revoked }.count == 992)
        let bad = r.results.filter { persistent.contains($0.item) || hanging.contains($0.item) }
        #expect(bad.count == 8 && bad.allSatisfy { $0.status == .failed && $0.attempts == 5 && $0.error != nil })
        #expect(
            r.summary.outageRequests <= 8,
            "requests charged to no item while the run believed the server down: \(r.summary.outageRequests)")
    }

    /// S16: an item that failed while the server answered others is known to fail on its own: its failures
    /// never make the server suspect, however many of them come in a row.
    @Test func testS16AKnownBadItemsFailuresRaiseNoSuspicion() {
        let events = Locked([OutageWatch.Event.Kind]())
        let watch = OutageWatch(threshold: 3, timeout: 300, clock: .virtual(), onEvent: { e in events.withLock { $0.append(e.kind) } })
        for item in 1...3 { _ = watch.transientFailure(item: item, probe: false, error: StarlineError(.server, "500")) }
        #expect(watch.phase == .suspect, "three distinct items failing with no answer between: suspect")
        watch.answered()
        #expect(watch.phase == .up)
        for _ in 0..<20 {
            for item in 1...3 {
                let charge = watch.transientFailure(item: item, probe: false, error: StarlineError(.server, "500"))
                #expect(charge == .charged(streak: -1), "a known-bad item's failure is its own, never refunded")
            }
        }
        #expect(watch.phase == .up && events.withLock { $0 } == [.suspect])
        // Three other items failing together are still evidence.
        for item in 4...6 { _ = watch.transientFailure(item: item, probe: false, error: StarlineError(.server, "503")) }
        #expect(watch.phase == .suspect)
        // Forgotten once ended: the index is not remembered past its item.
        watch.ended(item: 1)
    }

    /// S16: when the next probe goes out, it goes to an item that has never failed, not to one of the items
    /// whose failures raised the suspicion (a hanging item would hold every worker for its timeout).
    @Test func testS16TheProbeGoesToAnItemThatNeverFailed() {
        let watch = OutageWatch(threshold: 3, timeout: 300, clock: .virtual())
        for item in 1...3 { _ = watch.transientFailure(item: item, probe: false, error: StarlineError(.timeout, "timeout")) }
        #expect(watch.phase == .suspect)
        guard case .probe = watch.admit(item: 5) else { Issue.record("the first waiter probes"); return }
        // While the first probe is out, the one that failed in the streak (2) and the one that never failed (9) wait.
        let admissions = Locked([Int: String]())
        let threads = [2, 9].map { item in
            startThread {
                let admission: String
                switch watch.admit(item: item) {
                case .go: admission = "go"
                case .probe, .probeWithFreshItem: admission = "probe"
                case .stop: admission = "stop"
                }
                admissions.withLock { $0[item] = admission }
                if admission == "probe" { watch.answered(probe: true) }
            }
        }
        let deadline = MonotonicClock.nanoseconds() + 10_000_000_000
        while watch.waitingItems.count < 2, MonotonicClock.nanoseconds() < deadline { usleep(100) }
        _ = watch.transientFailure(item: 5, probe: true, error: StarlineError(.timeout, "timeout"))
        #expect(watch.phase == .down || watch.phase == .up)
        threads.forEach { $0.wait() }
        #expect(admissions.withLock { $0 } == [9: "probe", 2: "go"])
    }

    /// A short burst that a probe finds over at once is no outage either: nothing is refunded, nothing waits.
    @Test func testAProbeAnsweredAtOnceIsNoOutage() {
        let r = run(50, parallel: 8) { _, n in n <= 3 ? .transient(StarlineError(.server, "502")) : .done(.revoked) }
        #expect(r.results.allSatisfy { $0.status == .revoked })
        #expect(!r.events.contains(.down))
    }

    /// Items are pulled as workers free up: the first request goes out before the source has yielded its
    /// second item (a pipe whose producer has not written it yet).
    @Test func testItemsArePulledAsTheyArrive() {
        let firstRequested = Locked(false)
        let yielded = Locked(0)
        let engine = BulkRun<Int, BulkItemStatus>(BulkConfiguration(parallel: 1, clock: .virtual()))
        _ = engine.run(
            source: {
                let n = yielded.withLock { $0 }
                if n == 1 {
                    // The producer "writes" the second line only once the first was requested.
                    let deadline = MonotonicClock.nanoseconds() + 5_000_000_000
                    while !firstRequested.withLock({ $0 }) && MonotonicClock.nanoseconds() < deadline { usleep(1000) }
                }
                guard n < 3 else { return nil }
                yielded.withLock { $0 += 1 }
                return n
            },
            attempt: { item in
                if item == 0 { firstRequested.withLock { $0 = true } }
                return .done(.revoked)
            }, finished: { _ in nil })
        #expect(firstRequested.withLock { $0 } && yielded.withLock { $0 } == 3)
    }

    /// A stop (a signal) with requests in flight: `drain` waits for them, then closes the reports — what is
    /// still out is handed back, and no result is reported after it.
    @Test func testDrainHandsBackWhatIsStillInFlight() {
        let engine = BulkRun<Int, BulkItemStatus>(BulkConfiguration(parallel: 4))
        let reported = Locked([Int]())
        let stuck = Locked(false)
        let released = Locked(false)
        let done = Locked(false)
        WorkerThreads.detach {
            let items = Locked(0)
            _ = engine.run(
                source: {
                    items.withLock { n -> Int? in
                        guard n < 1000 else { return nil }
                        n += 1
                        return n - 1
                    }
                },
                attempt: { item in
                    if item == 5 {
                        stuck.withLock { $0 = true }
                        // An answer that takes longer than the grace: it comes once the test has drained.
                        _ = released.await(deadline: MonotonicClock.nanoseconds() + 30_000_000_000) { $0 ? true : nil }
                    }
                    return .done(.revoked)
                },
                finished: { result in
                    reported.withLock { $0.append(result.item) }
                    return nil
                })
            done.withLockNotifying { $0 = true }
        }
        while !stuck.withLock({ $0 }) { usleep(1000) }
        engine.stop(StarlineError(.interrupted, "SIGTERM"), abandon: true)
        let inFlight = engine.drain(seconds: 0.3)
        #expect(inFlight.map(\.item) == [5])
        released.withLockNotifying { $0 = true }
        _ = done.await(deadline: MonotonicClock.nanoseconds() + 10_000_000_000) { $0 ? true : nil }
        #expect(!reported.withLock { $0 }.contains(5), "nothing is reported after the drain")
        #expect(reported.withLock { $0 }.count < 1000)
    }
}
