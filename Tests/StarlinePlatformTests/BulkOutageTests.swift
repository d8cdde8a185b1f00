import Foundation
import StarlineCore
@testable import StarlinePlatform
import Testing

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
        answer: @escaping @Sendable (Int, Int) -> BulkAttempt<BulkItemStatus>
    ) -> Run {
        let requests = Locked(0)
        let results = Locked([BulkItemResult<Int, BulkItemStatus>]())
        let events = Locked([OutageWatch.Event.Kind]())
        let configuration = BulkConfiguration(parallel: parallel, maxAttempts: maxAttempts, outageTimeout: outageTimeout, clock: .virtual())
        let engine = BulkRun<Int, BulkItemStatus>(configuration, onOutage: { event in events.withLock { $0.append(event.kind) } })
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
        let r = run(300) { _, n in n <= 50 ? .transient(StarlineError(.server, "503 Service Unavailable")) : .done(.revoked) }
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
        let r = run(100, outageTimeout: 300) { _, n in
            n <= 20 ? .done(.revoked) : .transient(StarlineError(.network, "connection refused", retryable: true))
        }
        #expect(r.results.count == 100)
        #expect(r.results.filter { $0.status == .revoked }.count <= 20)
        #expect(!r.results.contains { $0.status == .failed }, "an outage fails no item")
        #expect(r.results.filter { $0.status == .skipped }.count >= 80)
        #expect(r.summary.stopError?.code == .network && r.summary.stopError?.exitStatus == .transient)
        #expect(r.summary.stopError?.details?["outage"] == .bool(true))
        #expect(r.summary.outageMilliseconds >= 300_000, "waited the whole budget (virtual time)")
    }

    /// One bad item among good ones is no outage: it is charged its own attempts and fails; the others pass.
    @Test func testOneBadItemSpendsItsOwnAttempts() {
        let r = run(40, parallel: 4, maxAttempts: 5) { item, _ in item == 7 ? .transient(StarlineError(.server, "500")) : .done(.revoked) }
        let seven = r.results.first { $0.item == 7 }
        #expect(seven?.status == .failed && seven?.attempts == 5)
        #expect(r.results.filter { $0.status == .revoked }.count == 39)
        #expect(!r.events.contains(.down))
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
                        usleep(3_000_000)  // an answer that takes longer than the grace
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
        _ = done.await(deadline: MonotonicClock.nanoseconds() + 10_000_000_000) { $0 ? true : nil }
        #expect(!reported.withLock { $0 }.contains(5), "nothing is reported after the drain")
        #expect(reported.withLock { $0 }.count < 1000)
    }
}
