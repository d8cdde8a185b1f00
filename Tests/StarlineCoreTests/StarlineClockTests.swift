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
}
