import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// S16: a run against a server limited to R requests a second goes at the ceiling without meeting it: the dev
/// server says its policy on every answer (RateLimit-*), and the run paces itself 5 % under it instead of
/// learning the limit from 429s.
@Suite struct RateCeilingTests {
    @Test func testS16ARunUnderAServersLimitMeetsAlmostNo429() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("alice")
        let ids =
            try h.server.createSessions(count: 150)
        _ = try h.server.dev("POST", "/__dev/rate-limit", .object([("rps", .int(50))]))
        let answer = try h.server.request("GET", "/api/me", token: try h.server.login("alice").token)
        #expect(answer.headers["ratelimit-policy"] == "50;w=1" && answer.headers["ratelimit-limit"] == "50", "\(answer.headers)")
        let run = try h.run("sl-sessions", ["revoke", "-"], stdin: Array(("user,id\n" + ids.map { "carol,\($0)\n" }.joined()).utf8))
        #expect(run.status == 0, "\(run.stderrText)")
        let summary = try run.jsonLines().last?["summary"]
        #expect(summary?["revoked"]?.intValue == 150)
        // Requests beyond one per item were answered 429: at most 1 % of them.
        let extra = (summary?["requests"]?.intValue ?? 0) - 150
        #expect(extra <= 2, "429s: \(extra) of \(summary?["requests"]?.intValue ?? 0) requests")
    }
}
