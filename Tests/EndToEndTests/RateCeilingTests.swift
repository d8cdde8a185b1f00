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

/// S16: one process keeps a far server as busy as shards would. `--parallel auto` (the default) raises the
/// number in flight while the throughput rises with it; a fixed `--parallel N` keeps N.
@Suite struct AdaptiveConcurrencyTests {
    @Test func testS16OneProcessRaisesItsConcurrencyForAFarServer() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("alice")
        let ids = try h.server.createSessions(count: 1_500)
        // Every revocation answers 20 ms late, as a server across a network does: 8 in flight give 400/s at most.
        _ = try h.server.dev(
            "POST", "/__dev/faults", .object([("route", .string("DELETE /api/admin/users/*/sessions/*")), ("delayMs", .int(20))]))
        func plan(_ part: ArraySlice<String>) -> [UInt8] { Array(("user,id\n" + part.map { "carol,\($0)\n" }.joined()).utf8) }
        let split = ids.count / 2
        let auto = try h.run("sl-sessions", ["revoke", "-"], stdin: plan(ids[..<split]))
        #expect(auto.status == 0, "\(auto.stderrText)")
        let summary = try auto.jsonLines().last?["summary"]
        #expect(summary?["revoked"]?.intValue == Int64(split))
        #expect((summary?["peakParallel"]?.intValue ?? 0) > 8, "\(summary.map { "\($0)" } ?? "no summary")")
        #expect((summary?["peakParallel"]?.intValue ?? 99) <= 64)
        let fixed = try h.run(
            "sl-sessions", ["revoke", "--parallel", "8", "--rate", "3000/1s/2", "-"],
            stdin: plan(ids[split...]))
        #expect(fixed.status == 0, "\(fixed.stderrText)")
        let fixedSummary = try fixed.jsonLines().last?["summary"]
        #expect(fixedSummary?["revoked"]?.intValue == Int64(ids.count - split) && fixedSummary?["peakParallel"]?.intValue == 8)
    }

    @Test func testS16BadParallelAndRateValuesAreUsageErrors() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("alice")
        for arguments in [["--parallel", "0"], ["--parallel", "fast"], ["--rate", "150/0"], ["--rate", "3000/150/4"], ["--rate", "0"]] {
            let run = try h.run("sl-sessions", ["revoke"] + arguments + ["ses_x"])
            #expect(run.status == 2, "\(arguments): \(run.stderrText)")
            let error = try run.error()["error"]
            #expect(error?["code"]?.stringValue == "USAGE" && error?["details"]?["option"] != nil, "\(arguments): \(run.stderrText)")
        }
    }
}
