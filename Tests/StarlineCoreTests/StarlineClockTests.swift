import StarlineCore
import Testing

@Suite struct StarlineClockTests {
    static let fixed = StarlineClock(now: { Timestamp(seconds: 1_800_000_000) }, monotonicNanoseconds: { 42 }, sleep: { _ in })

    @Test("a shifted clock moves wall time by the offset read at each call, and leaves monotonic time alone")
    func shiftedMovesWallTimeOnly() {
        let offset = Locked<Int64>(0)
        let moved = Self.fixed.shifted { offset.withLock { $0 } }
        #expect(moved.now().seconds == 1_800_000_000)
        offset.withLock { $0 = -3_600 }
        #expect(moved.now().seconds == 1_799_996_400 && moved.monotonicNanoseconds() == 42)
        // An offset that would overflow is ignored rather than trapping.
        offset.withLock { $0 = .max }
        #expect(moved.now().seconds == 1_800_000_000)
    }

    @Test("the system clock's wall time is Timestamp.now and its monotonic time never goes back")
    func systemClock() {
        let a = StarlineClock.system.monotonicNanoseconds()
        StarlineClock.system.sleep(0.001)
        #expect(StarlineClock.system.monotonicNanoseconds() >= a + 1_000_000)
        #expect(abs(StarlineClock.system.now().seconds - Timestamp.now().seconds) <= 1)
    }

    @Test("a virtual clock moves only when a thread sleeps on it, by the wait's length, and its wall time with it")
    func virtualClockMovesOnSleep() {
        let clock = StarlineClock.virtual(start: 5_000_000_000, epoch: 1_700_000_000)
        #expect(clock.monotonicNanoseconds() == 5_000_000_000 && clock.now().seconds == 1_700_000_000)
        clock.sleep(300)
        #expect(clock.monotonicNanoseconds() == 305_000_000_000 && clock.now().seconds == 1_700_000_300)
        // Nothing for a negative, zero or NaN wait.
        for wait in [-1.0, 0, .nan] { clock.sleep(wait) }
        #expect(clock.monotonicNanoseconds() == 305_000_000_000)
    }

    @Test("withWallTime replaces the wall time only; the system clock's monotonic time counts suspended time")
    func wallTimeAndBootTime() {
        let fixed = StarlineClock.virtual().withWallTime { Timestamp(seconds: 42) }
        fixed.sleep(10)
        #expect(fixed.now().seconds == 42 && fixed.monotonicNanoseconds() == 11_000_000_000)
        // CLOCK_BOOTTIME is CLOCK_MONOTONIC plus the time suspended: never behind it.
        let monotonic = MonotonicClock.nanoseconds()
        #expect(StarlineClock.system.monotonicNanoseconds() >= monotonic)
    }
}
