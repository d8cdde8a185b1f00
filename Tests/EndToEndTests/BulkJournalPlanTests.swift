import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// S16, every run auditable, also from a pipe: `revoke --journal` records each item of its input as it reads
/// it, before any request, and `journal verify J…` audits against that recorded plan without `--plan` —
/// across a resume fed a new listing, from which the sessions already revoked are gone.
@Suite struct BulkJournalPlanTests {
    func harness() throws -> SessionToolsHarness {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("alice")
        return h
    }

    /// `list | revoke` as a shell runs it, with the tools on PATH.
    func pipeline(_ h: SessionToolsHarness, _ revoke: String) throws -> RunningTool {
        var environment = h.environment
        environment["PATH"] = "\(Tools.binDirectory):/usr/bin:/bin"
        return try Tools.spawn(
            "/bin/sh", ["-c", "sl-sessions list --user carol --jsonl | sl-sessions revoke \(revoke) -"], home: h.home.path,
            environment: environment)
    }

    @Test func testS16APipedRunIsVerifiedAgainstThePlanItsJournalRecorded() throws {
        let h = try harness()
        let ids = try h.server.createSessions(count: 300)
        #expect(ids.count == 300)
        let journal = h.home.file("pipe.journal")
        // Slow enough to be stopped part-way: SIGKILL, nothing of the run's own clean-up.
        _ = try h.server.dev(
            "POST", "/__dev/faults", .object([("route", .string("DELETE /api/admin/users/*/sessions/*")), ("delayMs", .int(20))]))
        let first = try pipeline(h, "--journal '\(journal)' --parallel 2")
        let deadline = Date().addingTimeInterval(60)
        var revokedBefore = 0
        while Date() < deadline {
            let text = (try? String(contentsOfFile: journal, encoding: .utf8)) ?? ""
            revokedBefore = text.split(separator: "\n").filter { $0.contains(#""status":"revoked""#) }.count
            if revokedBefore >= 30 { break }
            usleep(20_000)
        }
        #expect(revokedBefore >= 30, "the first run got under way")
        for pid in ReadmeCronLinesTests.toolProcesses(under: first.pid) { kill(pid, SIGKILL) }
        _ = first.waitOrKill(seconds: 20)
        _ = try h.server.dev("DELETE", "/__dev/faults")

        // The plan is in the journal: every input item, recorded before it was requested.
        let planned = try String(contentsOfFile: journal, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix(#"{"planned":"#) }
        #expect(planned.count >= revokedBefore)

        // The resume reads a new listing: the sessions revoked already are not in it.
        let resumed = try pipeline(h, "--journal '\(journal)' --resume").waitOrKill(seconds: 120)
        #expect(resumed.status == 0, "\(resumed.stderrText)")
        let verify = try h.run("sl-sessions", ["journal", "verify", journal])
        #expect(verify.status == 0, "\(verify.stdoutText.suffix(800)) \(verify.stderrText)")
        let summary = try verify.jsonLines().last?["summary"]
        #expect(summary?["planned"]?.intValue == 300 && summary?["done"]?.intValue == 300 && summary?["unplanned"]?.intValue == 0)
        #expect(summary?["exact"] == .bool(true))

        // With the second listing as --plan, what the first run revoked reads as unplanned: the recorded plan is
        // what makes a piped run auditable.
        let second = h.home.file("second-listing.jsonl")
        try "".write(toFile: second, atomically: true, encoding: .utf8)
        let againstEmpty = try h.run("sl-sessions", ["journal", "verify", "--plan", second, journal])
        #expect(againstEmpty.status == 8)
    }

    @Test func testS16JournalsWithoutARecordedPlanNeedPlan() throws {
        let h = try harness()
        let old = h.home.file("old.journal")
        let header = #"{"run":{"caller":"alice","api":"\#(h.server.baseURL)","startedAt":"2026-01-01T00:00:00Z"}}"#
        try (header + "\n" + #"{"id":"s1","user":"carol","status":"revoked"}"# + "\n").write(toFile: old, atomically: true, encoding: .utf8)
        let run = try h.run("sl-sessions", ["journal", "verify", old])
        #expect(run.status == 2 && run.stderrText.contains("--plan"), "\(run.stderrText)")
    }
}
