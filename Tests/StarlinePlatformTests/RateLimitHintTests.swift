import StarlineCore
import Testing
@testable import StarlinePlatform
@testable import StarlineHTTP
@testable import StarlineBulk

/// S16: what a server says of its rate limit is read strictly, and paces the run's gate.
@Suite struct RateLimitHintTests {
    func reply(_ headers: [String: String]) -> HTTPReply { HTTPReply(status: 200, headers: headers, body: []) }

    @Test func testS16ThePoliciesAndCountersServersSendAreRead() {
        let ietf = RateLimitHint.parse(
            reply(["ratelimit-policy": "150;w=1", "ratelimit-remaining": "7", "ratelimit-reset": "1"]), now: 1_700_000_000)
        #expect(ietf == RateLimitHint(limit: 150, window: 1, remaining: 7, reset: 1))
        #expect(abs((ietf?.spacing ?? 0) - 1.0 / (150 * 0.95)) < 1e-12)
        let later = RateLimitHint.parse(reply(["ratelimit-policy": #""default";q=600;w=60"#]), now: 0)
        #expect(later?.limit == 600 && later?.window == 60)
        // GitHub: X-RateLimit-Reset is a Unix time; the window is not named, so there is no spacing.
        let github = RateLimitHint.parse(
            reply(["x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1700000030"]), now: 1_700_000_000)
        #expect(github?.remaining == 0 && github?.reset == 30 && github?.spacing == nil)
        // Nonsense is ignored, never trusted.
        #expect(RateLimitHint.parse(reply(["ratelimit-policy": "0;w=1"]), now: 0) == nil)
        #expect(
            RateLimitHint.parse(reply(["ratelimit-policy": "10;w=-1", "ratelimit-remaining": "-3", "ratelimit-reset": "nan"]), now: 0)
                == nil)
        #expect(RateLimitHint.parse(reply([:]), now: 0) == nil)
    }

    @Test func testS16TheGateKeepsUnderTheServersPolicy() {
        let gate = RateGate(maxConcurrency: 8)
        #expect(gate.serverSpacing == 0)
        gate.observe(RateLimitHint(limit: 100, window: 1))
        #expect(gate.serverSpacing == UInt64(1.0 / 95 * 1e9))
    }
}
