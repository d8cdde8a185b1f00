import StarlineBulk
import StarlineCore
import StarlineHTTP
import StarlineMemory
import Testing

/// One clock (StarlineCore's StarlineClock, carried by a run's IOStreams): the retries', the bulk engine's and
/// the unlock agent's clocks are views of it — the same wall time, the same monotonic time, and a wait on any
/// of them is a wait on it.
@Suite struct ClockViewTests {
    @Test("RetryClock, BulkClock and MemoryAgentClock read and wait on the one clock they are made from")
    func viewsShareTheClock() throws {
        let clock = StarlineClock.virtual(start: 1_000_000_000, epoch: 1_800_000_000)
        let retry = RetryClock(clock), bulk = BulkClock(clock), agent = MemoryAgentClock(clock)
        #expect(retry.now() == 1_800_000_000 && agent.now().seconds == 1_800_000_000)
        #expect(bulk.now() == 1_000_000_000 && agent.elapsed() == 1_000_000_000)
        // A blocking retry wait, then a bulk backoff: both move the one clock, and every view sees it.
        retry.pause(60)
        bulk.sleep(seconds: 30)
        #expect(clock.monotonicNanoseconds() == 91_000_000_000)
        #expect(retry.now() == 1_800_000_090 && agent.now().seconds == 1_800_000_090 && bulk.now() == 91_000_000_000)
        #expect(agent.elapsed() == 91_000_000_000)
        // A wait that may be cancelled is a real one, woken by the cancellation: it leaves a virtual clock where it is.
        let cancel = CancelFlag()
        cancel.cancel()
        retry.cancellablePause(60, cancel)
        #expect(clock.monotonicNanoseconds() == 91_000_000_000)
    }
}
