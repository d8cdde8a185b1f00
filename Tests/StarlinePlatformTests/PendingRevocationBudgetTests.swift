import Foundation
import StarlineCore
import Testing
@testable import StarlinePlatform
@testable import StarlineHTTP

/// S12: tokens an offline logout left behind are retried best-effort within a small total budget,
/// so they never delay a restore's answer by more (before: every token with full timeouts and retries).
@Suite struct PendingRevocationBudgetTests {
    /// Answers every revocation after 0.7 s of the client's (virtual) clock.
    final class SlowRevocations: HTTPExchange {
        let calls = Locked(0)
        let clock: StarlineClock
        init(clock: StarlineClock) { self.clock = clock }
        func performBlocking(_ request: HTTPRequestSpec) throws -> HTTPReply {
            calls.withLock { $0 += 1 }
            clock.sleep(0.7)
            return HTTPReply(status: 200, headers: [:], body: [])
        }
    }

    @MainActor @Test func bestEffortRevocationsStopAtTheirBudget() async throws {
        let fixture = try StoreFixture()
        let store = try fixture.store()
        try store.withState { state in
            for i in 0..<6 { try state.addPendingRevocation(sessionId: "old-\(i)", accessToken: "token-\(i)") }
        }
        let clock = StarlineClock.virtual()
        let slow = SlowRevocations(clock: clock)
        let client = StarlightClient(
            configuration: .init(api: try BaseURL(validating: "https://account.thestarline.cn"), appId: "workbench"),
            store: store, transport: slow, clock: RetryClock(clock))
        await client.retryPendingRevocations(budget: 1)
        let calls = slow.calls.withLock { $0 }
        // 0.7 s each within 1 s: the second starts at 0.7 s, a third would start after the budget.
        #expect(calls == 2, "\(calls) revocations were tried within a 1 s budget")
        #expect(client.pendingRevocationCount() == 6 - calls, "the untried ones wait for a later run")
    }
}
