import Foundation
import StarlineCore
import StarlineTestSupport
@testable import StarlinePlatform
import Testing
@testable import StarlineBulk

/// S16: when an item has spent its attempts, the evidence decides whether the failures were its own — never the
/// order in which the workers happened to report.
extension BulkOutageTests {
    /// S16: one worker's requests fail at once while the other workers' requests, sent before, are still out
    /// (a starved machine; a refused connection against requests still hanging). It spends its five attempts
    /// before anyone else reports; the others then fail too, and so do the probes after them — an outage for
    /// everyone, of the run's first 20 requests. Its item waits for the others' outcome instead of failing
    /// alone, and once the server answers again every item is revoked.
    @Test func testS16AnItemThatSpentItsAttemptsBeforeTheOthersReportedWaitsForTheirOutcome() {
        let othersOut = Locked(0), firstFailures = Locked(0)
        let r = run(40, parallel: 4, maxAttempts: 5) { item, n in
            func wait(until done: @escaping (Int) -> Bool, _ lock: Locked<Int>) {
                let deadline = MonotonicClock.nanoseconds() + 30_000_000_000
                while !done(lock.withLock { $0 }), MonotonicClock.nanoseconds() < deadline { usleep(500) }
            }
            let refused = BulkAttempt<BulkItemStatus>.transient(StarlineError(.network, "connection refused", retryable: true))
            if item == 0, firstFailures.withLock({ $0 }) < 5 {
                // Its first request goes out once the three other workers' requests are out.
                wait(until: { $0 >= 3 }, othersOut)
                firstFailures.withLock { $0 += 1 }
                return refused
            }
            if firstFailures.withLock({ $0 }) < 5 {
                // Out before the first item's failures; it fails once the first item has spent its attempts.
                othersOut.withLock { $0 += 1 }
                wait(until: { $0 >= 5 }, firstFailures)
                return refused
            }
            return n <= 20 ? refused : .done(.revoked)
        }
        #expect(firstFailures.withLock { $0 } == 5 && othersOut.withLock { $0 } == 3, "the scene was played as written")
        #expect(
            r.results.count == 40 && r.results.allSatisfy { $0.status == .revoked },
            "an outage fails no item: \(r.results.filter { $0.status != .revoked }.map { ($0.item, $0.attempts) })")
        #expect(r.summary.stopError == nil && r.events.contains(.down))
    }

    /// S16: the same fast failures with nothing else out — one item, the server answering its other routes —
    /// still fail it after its own attempts: the wait is for evidence, not a reprieve. A run that cannot ask the
    /// server anything else fails it too (nothing else can tell).
    @Test func testS16AnItemThatSpentItsAttemptsWithNothingElseOutFails() {
        for serverAnswers: (@Sendable () -> StarlineError?)? in [{ nil }, nil] {
            let r = run(1, parallel: 4, maxAttempts: 5, serverAnswers: serverAnswers) { _, _ in .transient(StarlineError(.server, "500")) }
            #expect(r.results.count == 1 && r.results[0].status == .failed && r.results[0].attempts == 5)
            #expect(r.summary.stopError == nil)
        }
    }

    /// S16: one worker (fewer than the outage threshold of two distinct items) and an outage from the start: the
    /// first item spends its attempts before any other item was tried. Its streak makes the server suspect, the
    /// probe (a fresh item) fails, the outage is confirmed and refunded: every item is revoked once it ends.
    @Test func testS16AnOutageMetByTheFirstItemOfAOneWorkerRunFailsNoItem() {
        let served = Locked(0)
        let down = StarlineError(.network, "connection refused", retryable: true)
        let r = run(5, parallel: 1, maxAttempts: 5, serverAnswers: { served.withLock { $0 } <= 12 ? down : nil }) { _, n in
            served.withLock { $0 = max($0, n) }
            return n <= 12 ? .transient(down) : .done(.revoked)
        }
        #expect(
            r.results.count == 5 && r.results.allSatisfy { $0.status == .revoked },
            "\(r.results.map { ($0.item, $0.status, $0.attempts) })")
        #expect(r.events.contains(.down) && r.events.last == .up && r.summary.stopError == nil)
    }

    /// S16: the answer to a request sent before every failure of a streak says nothing about them: it ends
    /// neither the streak nor the suspicion it raised; an answer to a request sent after one of them does.
    @Test func testS16AnAnswerOlderThanTheWholeStreakEndsNoSuspicion() {
        let watch = OutageWatch(threshold: 3, timeout: 300, clock: .virtual())
        let error = StarlineError(.server, "503")
        let stale = watch.sending(item: 10)
        _ = watch.transientFailure(item: 1, probe: false, error: error)
        let later = watch.sending(item: 11)
        for item in 2...3 { _ = watch.transientFailure(item: item, probe: false, error: error) }
        #expect(watch.phase == .suspect)
        watch.answered(ticket: stale, item: 10)
        #expect(watch.phase == .suspect, "sent before every failure of the streak: no evidence")
        watch.answered(ticket: later, item: 11)
        #expect(watch.phase == .up, "sent after the streak's first failure: the server answered since")
    }

    /// `exhausted` waits while a request sent before the item's last failure is out, and decides on its outcome.
    @Test func testS16ExhaustedWaitsForTheRequestsSentBeforeItsLastFailure() {
        let watch = OutageWatch(threshold: 3, timeout: 300, clock: .virtual())
        let error = StarlineError(.server, "503")
        let early = watch.sending(item: 2)
        _ = watch.sending(item: 1)
        _ = watch.transientFailure(item: 1, probe: false, error: error)
        let verdict = Locked<OutageWatch.Exhaustion?>(nil)
        let thread = startThread {
            let exhausted = watch.exhausted(item: 1)
            verdict.withLock { $0 = exhausted }
        }
        usleep(20_000)
        #expect(verdict.withLock { $0 } == nil, "the other item's request, out before the failure, has not reported")
        watch.answered(ticket: early, item: 2)
        thread.wait()
        #expect(verdict.withLock { $0 } == .fails, "its answer went out before the failure: nothing else can tell")
        // Known-bad: the server answered a request sent after the failure — it fails at once, whatever is out.
        _ = watch.sending(item: 3)
        _ = watch.transientFailure(item: 4, probe: false, error: error)
        watch.answered()
        #expect(watch.exhausted(item: 4) == .fails)
        // While the server is suspect the next request waits in admit.
        for item in 5...7 { _ = watch.transientFailure(item: item, probe: false, error: error) }
        #expect(watch.exhausted(item: 5) == .waits)
        watch.stop(nil)
        #expect(watch.exhausted(item: 6) == .stopped)
    }
}
