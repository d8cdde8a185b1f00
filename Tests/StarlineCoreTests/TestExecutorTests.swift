import CTestExecutor
import Glibc
import StarlineCore
import StarlineTestSupport
import Testing

/// The test binary's global executor (Tests/CTestExecutor): tests that block — on a tool's process, a dev server,
/// a child's output — run side by side instead of two at a time on a two-core machine.
@Suite struct TestExecutorTests {
    /// Four tasks that each block until all four have started: on the runtime's own pool (one thread per core)
    /// the first two would hold both threads until their deadline, and the others would never start in time.
    @Test(.enabled(if: starline_test_executor_width() != 0, "STARLINE_TEST_WIDTH=0 keeps the runtime's executor"))
    func blockingTasksRunSideBySide() async {
        #expect(starline_test_executor_width() >= 4)
        let started = Locked(0)
        let met = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    started.withLock { $0 += 1 }
                    let deadline = MonotonicClock.nanoseconds() + 30_000_000_000
                    while started.withLock({ $0 }) < 4, MonotonicClock.nanoseconds() < deadline { usleep(1_000) }
                    return started.withLock { $0 } == 4
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(met, "\(started.withLock { $0 }) of 4 blocking tasks started while the others blocked")
    }

    /// Work that waits on a clock comes back through the executor's timer, never before its time: Task.sleep by
    /// a delay (nanoseconds) and by a deadline on either clock.
    @Test func sleepingTasksWakeNoSoonerThanAsked() async throws {
        let continuous = ContinuousClock(), suspending = SuspendingClock()
        let start = continuous.now
        try await Task.sleep(nanoseconds: 30_000_000)
        #expect(continuous.now - start >= .milliseconds(30))
        let deadline = continuous.now + .milliseconds(30)
        try await Task.sleep(until: deadline, clock: continuous)
        #expect(continuous.now >= deadline)
        let later = suspending.now + .milliseconds(30)
        try await Task.sleep(until: later, clock: suspending)
        #expect(suspending.now >= later)
    }
}
