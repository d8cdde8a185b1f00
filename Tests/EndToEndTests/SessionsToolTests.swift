import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// S16: the built sl-sessions against a real sl-devserver, signed in with the real flows.
@Suite struct SessionsToolTests {
    func harness(as user: String = "alice") throws -> SessionToolsHarness {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin(user)
        return h
    }

    /// Creates `count` device sessions for `user` on the server; their ids.
    func createSessions(_ h: SessionToolsHarness, user: String, count: Int) throws -> [String] {
        try h.server.createSessions(user: user, count: count)
    }

    /// Waits until a spawned run has printed `results` result lines: the run is under way (a real condition,
    /// where a sleep would guess how long start-up and sign-in take).
    func underway(_ run: RunningTool, results: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            run.waitForStdout(seconds: 60) { $0.split(separator: "\n").count >= results }, "the run is under way",
            sourceLocation: sourceLocation)
    }

    func adminSessionCount(_ h: SessionToolsHarness, user: String) throws -> Int {
        let admin = try h.server.login("alice")
        return try h.server.request("GET", "/api/admin/users/\(user)/sessions", token: admin.token).json()["sessions"]?.arrayValue?.count
            ?? -1
    }

    func summary(_ run: ToolRun) throws -> JSON? { try run.jsonLines().last?["summary"] }

    func results(_ run: ToolRun) throws -> [JSON] { try run.jsonLines().filter { $0["summary"] == nil && $0["verify"] == nil } }

    @Test func s16ListShowsOwnSessionsWithTheCurrentOneMarked() throws {
        let h = try harness(as: "bob")
        let before = try h.run("sl-sessions", ["list"]).jsonLines().count  // the seed may hold sessions of its own
        _ = try createSessions(h, user: "bob", count: 3)
        let run = try h.run("sl-sessions", ["list"])
        #expect(run.status == 0, "\(run.stderrText)")
        let sessions = try run.jsonLines()
        #expect(before >= 1 && sessions.count == before + 3)
        #expect(sessions.filter { $0["current"] == .bool(true) }.count == 1)
        #expect(sessions.allSatisfy { $0["user"]?.stringValue == "bob" && $0["id"]?.stringValue != nil })
        let others = try h.run("sl-sessions", ["list", "--not-current"]).jsonLines()
        #expect(others.count == sessions.count - 1 && others.allSatisfy { $0["current"] == .bool(false) })
    }

    @Test func s16RevokeOthersKeepsTheCurrentSession() throws {
        let h = try harness(as: "bob")
        _ = try createSessions(h, user: "bob", count: 5)
        let others = try h.run("sl-sessions", ["list", "--not-current"]).jsonLines().count
        let run = try h.run("sl-sessions", ["revoke", "--others"])
        #expect(run.status == 0, "\(run.stderrText)")
        let lines = try results(run)
        #expect(
            others >= 5 && lines.count == others
                && lines.allSatisfy { $0["status"]?.stringValue == "revoked" && $0["attempts"]?.intValue == 1 })
        #expect(try summary(run)?["revoked"]?.intValue == Int64(others))
        let left = try h.run("sl-sessions", ["list"]).jsonLines()
        #expect(left.count == 1 && left.first?["current"] == .bool(true))
        #expect(try h.restore().state == "valid", "the current session is kept")
    }

    /// `list --jsonl | revoke -`: the list's records are revoke's input.
    @Test func listPipedIntoRevoke() throws {
        let h = try harness(as: "bob")
        _ = try createSessions(h, user: "bob", count: 4)
        let listed = try h.run("sl-sessions", ["list", "--not-current", "--jsonl"])
        let count = try listed.jsonLines().count
        // The records name bob as their user: bob, no admin, revokes them as his own sessions.
        let run = try h.run("sl-sessions", ["revoke", "-"], stdin: listed.stdout)
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(try summary(run)?["revoked"]?.intValue == Int64(count))
        #expect(try results(run).map { Int($0["line"]?.intValue ?? 0) }.sorted() == Array(1...count))
        #expect(try h.run("sl-sessions", ["list"]).jsonLines().count == 1)
    }

    /// S16: revoking the current session (it is done last) clears the local one.
    @Test func s16RevokingTheCurrentSessionClearsTheLocalOne() throws {
        let h = try harness(as: "bob")
        let ids = try createSessions(h, user: "bob", count: 2)
        let current = try h.status()["session"]?["id"]?.stringValue ?? ""
        let run = try h.run("sl-sessions", ["revoke", current, ids[0], ids[1]])
        #expect(run.status == 0, "\(run.stderrText)")
        let lines = try results(run)
        #expect(lines.last?["id"]?.stringValue == current, "the caller's own session goes last")
        #expect(lines.allSatisfy { $0["status"]?.stringValue == "revoked" })
        #expect(try h.status()["session"] == .null, "the local session was cleared")
    }

    /// An admin revokes all of a user's sessions: every one exactly once (the server counts the requests).
    @Test func adminRevokesEveryoneOfAUserExactlyOnce() throws {
        let h = try harness()
        _ = try createSessions(h, user: "carol", count: 600)
        let run = try h.run("sl-sessions", ["revoke", "--user", "carol", "--all", "--parallel", "8"])
        #expect(run.status == 0, "\(run.stderrText)")
        let lines = try results(run)
        #expect(lines.count == 600 && Set(lines.compactMap { $0["id"]?.stringValue }).count == 600)
        #expect(try summary(run)?["revoked"]?.intValue == 600)
        #expect(try adminSessionCount(h, user: "carol") == 0)
        #expect(try h.counter("DELETE /api/admin/users/{uid}/sessions/{id}") == 600)
    }

    /// Not an admin: exit 5 at once, and the login is kept.
    @Test func aNonAdminIsRefusedAndKeepsTheLogin() throws {
        let h = try harness(as: "bob")
        let ids = try createSessions(h, user: "carol", count: 50)
        let run = try h.run("sl-sessions", ["revoke", "--user", "carol", "-"], stdin: Array(ids.joined(separator: "\n").utf8))
        #expect(run.status == 5, "\(run.stderrText)")
        #expect(run.stderrText.contains("FORBIDDEN"))
        #expect(try h.counter("DELETE /api/admin/users/{uid}/sessions/{id}") < 50, "the run stopped")
        #expect(try summary(run)?["stoppedBy"]?.stringValue == "FORBIDDEN")
        #expect(try h.restore().state == "valid", "the identity is kept")
        let all = try h.run("sl-sessions", ["revoke", "--user", "carol", "--all"])
        #expect(all.status == 5)
    }

    /// A malformed input line gets its own result line with its number; the run goes on and exits 8.
    @Test func malformedLinesAreReportedPerLine() throws {
        let h = try harness(as: "bob")
        let ids = try createSessions(h, user: "bob", count: 2)
        let input = "\(ids[0])\nnot an id\n\(ids[1])\n"
        let run = try h.run("sl-sessions", ["revoke", "-"], stdin: Array(input.utf8))
        #expect(run.status == 8, "\(run.stderrText)")
        let lines = try results(run)
        #expect(lines.first { $0["line"]?.intValue == 2 }?["status"]?.stringValue == "failed")
        #expect(lines.filter { $0["status"]?.stringValue == "revoked" }.count == 2)
    }

    @Test func csvAndJSONArrayInputs() throws {
        let h = try harness()
        let ids = try createSessions(h, user: "carol", count: 4)
        let csv = "id,user\n\(ids[0]),carol\n\"\(ids[1])\",carol\n"
        let fromCSV = try h.run("sl-sessions", ["revoke", "-"], stdin: Array(csv.utf8))
        #expect(fromCSV.status == 0, "\(fromCSV.stderrText)")
        #expect(try summary(fromCSV)?["revoked"]?.intValue == 2)
        let array = JSON.array([
            .object([("id", .string(ids[2])), ("user", .string("carol"))]), .object([("id", .string(ids[3])), ("user", .string("carol"))])
        ])
        let fromArray = try h.run("sl-sessions", ["revoke", "-"], stdin: Array(array.serialized().utf8))
        #expect(fromArray.status == 0, "\(fromArray.stderrText)")
        #expect(try summary(fromArray)?["revoked"]?.intValue == 2)
        #expect(try adminSessionCount(h, user: "carol") == 0)
    }

    /// `--dry-run` prints a plan that `revoke -` reads; nothing is revoked by it.
    @Test func dryRunPlanPipesIntoRevoke() throws {
        let h = try harness()
        let ids = try createSessions(h, user: "carol", count: 3)
        let plan = try h.run("sl-sessions", ["revoke", "--user", "carol", "--dry-run", "-"], stdin: Array(ids.joined(separator: "\n").utf8))
        #expect(plan.status == 0, "\(plan.stderrText)")
        let planned = try plan.jsonLines()
        #expect(planned.count == 3 && planned.allSatisfy { $0["user"]?.stringValue == "carol" })
        #expect(try adminSessionCount(h, user: "carol") == 3, "a dry run revokes nothing")
        let run = try h.run("sl-sessions", ["revoke", "-"], stdin: plan.stdout)
        let applied = try summary(run)
        #expect(run.status == 0 && applied?["revoked"]?.intValue == 3, "\(run.stderrText)")
    }

    /// 5xx bursts and connection resets mid-run: retried with backoff, every session revoked.
    @Test func fiveHundredsAndResetsAreRetried() throws {
        let h = try harness()
        _ = try createSessions(h, user: "carol", count: 200)
        // Injected while the run goes on (--rate 100: ~2 s): a burst of 503s, then connection resets.
        let revoke = try h.spawn("sl-sessions", ["revoke", "--user", "carol", "--all", "--rate", "100"])
        underway(revoke, results: 20)
        // The server takes faults in the order they were added: the 503s first, then the resets.
        _ = try h.server.dev(
            "POST", "/__dev/faults",
            .object([("route", .string("DELETE /api/admin/users/*/sessions/*")), ("status", .int(503)), ("count", .int(12))]))
        _ = try h.server.dev(
            "POST", "/__dev/faults",
            .object([("route", .string("DELETE /api/admin/users/*/sessions/*")), ("reset", .bool(true)), ("count", .int(8))]))
        let run = revoke.waitOrKill(seconds: 60)
        #expect(run.status == 0, "\(run.stderrText)")
        let total = try summary(run)
        #expect(total?["revoked"]?.intValue == 200 && total?["failed"]?.intValue == 0)
        // The server saw the 20 failed requests and their repeats (libcurl itself may resend on a reset keep-alive connection).
        #expect(try h.counter("DELETE /api/admin/users/{uid}/sessions/{id}") >= 220)
        #expect(try adminSessionCount(h, user: "carol") == 0)
    }

    /// 429s with Retry-After from a server that does not announce its limit (the dev server's own limiter
    /// announces it, and the run then paces itself under it: RateCeilingTests): waited out, every session
    /// revoked, the pause reported.
    @Test func throttlingIsWaitedOut() throws {
        let h = try harness()
        _ = try createSessions(h, user: "carol", count: 150)
        _ = try h.server.dev(
            "POST", "/__dev/faults",
            .object([
                ("route", .string("DELETE /api/admin/users/*/sessions/*")), ("status", .int(429)),
                ("headers", .object([("Retry-After", .string("1"))])), ("count", .int(10))
            ]))
        let run = try h.run("sl-sessions", ["revoke", "--user", "carol", "--all"])
        #expect(run.status == 0, "\(run.stderrText)")
        let total = try summary(run)
        #expect(total?["revoked"]?.intValue == 150)
        #expect((total?["throttledMs"]?.intValue ?? 0) > 0)
    }

    /// A server that answers 429 forever: the run's one wait budget (--outage-timeout, outage and throttling
    /// together) ends it — the rest skipped, exit 7, resumable — instead of items × attempts × Retry-After.
    @Test func s16ThrottlingWithoutEndStopsAtTheRunsWaitBudget() throws {
        let h = try harness()
        _ = try createSessions(h, user: "carol", count: 40)
        _ = try h.server.dev(
            "POST", "/__dev/faults",
            .object([
                ("route", .string("DELETE /api/admin/users/*/sessions/*")), ("status", .int(429)),
                ("headers", .object([("Retry-After", .string("1"))]))
            ]))
        let journal = h.home.file("throttled.journal")
        let run = try h.spawn("sl-sessions", ["revoke", "--user", "carol", "--all", "--outage-timeout", "3", "--journal", journal])
            .waitOrKill(seconds: 120)
        #expect(run.status == 7, "\(run.stderrText)")
        let total = try summary(run)
        #expect(total?["stoppedBy"]?.stringValue == "RATE_LIMITED" && total?["revoked"]?.intValue == 0, "\(run.stdoutText)")
        #expect(total?["skipped"]?.intValue == 40, "every item is left for --resume: \(run.stdoutText)")
        #expect(run.stderrText.contains("--outage-timeout"), "\(run.stderrText)")
        _ = try h.server.dev("DELETE", "/__dev/faults")
        let resumed = try h.run("sl-sessions", ["revoke", "--user", "carol", "--all", "--journal", journal, "--resume"])
        #expect(resumed.status == 0, "\(resumed.stderrText)")
        #expect(try summary(resumed)?["revoked"]?.intValue == 40)
    }

    /// S15: the caller's own session ends mid-run: exit 4, the local session cleared, the run stopped.
    @Test func s15TheCallersSessionEndingMidRunStopsIt() throws {
        let h = try harness()
        _ = try createSessions(h, user: "carol", count: 300)
        let current = try h.status()["session"]?["id"]?.stringValue ?? ""
        let revoke = try h.spawn("sl-sessions", ["revoke", "--user", "carol", "--all", "--rate", "50"])
        underway(revoke, results: 20)
        _ = try h.server.dev("POST", "/__dev/sessions/\(current)/expire")
        let run = revoke.waitOrKill(seconds: 30)
        #expect(run.status == 4, "\(run.stderrText)")
        #expect(try summary(run)?["stoppedBy"]?.stringValue?.hasPrefix("SESSION_") == true)
        #expect(try h.status()["session"] == .null, "cleared (S15)")
        #expect(try adminSessionCount(h, user: "carol") > 0, "stopped before the end")
    }

    /// `kill -9` in the middle of a journaled run, then `--resume`: the union is exact, and nothing the journal
    /// records as finished is requested again.
    @Test func aKilledRunResumesFromItsJournal() throws {
        let h = try harness()
        let ids = try createSessions(h, user: "carol", count: 400)
        let journal = h.home.file("revoke.journal")
        let input = Array(ids.map { "\($0),carol" }.joined(separator: "\n").utf8)
        let csv = Array("id,user\n".utf8) + input
        let first = try h.spawn(
            "sl-sessions", ["revoke", "--journal", journal, "--reason", "offboarding carol", "--rate", "100", "-"], stdin: csv)
        underway(first, results: 50)
        first.signal(SIGKILL)
        _ = first.wait()
        let recorded = try String(contentsOfFile: journal, encoding: .utf8).split(separator: "\n").compactMap {
            try? JSON.parse(String($0))
        }
        #expect(recorded.first?["run"]?["reason"]?.stringValue == "offboarding carol")
        #expect(recorded.first?["run"]?["caller"]?["user"]?.stringValue == "alice")
        let done = recorded.filter { $0["status"]?.stringValue == "revoked" }.count
        #expect(done > 0 && done < 400, "killed part-way: \(done)")
        // Read once it stops moving: a request sent just before the kill may still be on its way to the server.
        var requestsBefore = try h.counter("DELETE /api/admin/users/{uid}/sessions/{id}")
        for _ in 0..<100 {
            usleep(50_000)
            let now = try h.counter("DELETE /api/admin/users/{uid}/sessions/{id}")
            if now == requestsBefore { break }
            requestsBefore = now
        }

        let again = try h.run("sl-sessions", ["revoke", "--journal", journal, "-"], stdin: csv)
        #expect(again.status == 2, "a journal with records needs --resume: \(again.stderrText)")
        let resumed = try h.run("sl-sessions", ["revoke", "--journal", journal, "--resume", "-"], stdin: csv)
        #expect(resumed.status == 0, "\(resumed.stderrText)")
        let total = try summary(resumed)
        #expect(total?["fromJournal"]?.intValue == Int64(done))
        let requestsAfter = try h.counter("DELETE /api/admin/users/{uid}/sessions/{id}")
        #expect(requestsAfter - requestsBefore == 400 - done, "only the items the journal does not record are requested")
        #expect(try adminSessionCount(h, user: "carol") == 0)
        let lines = try results(resumed)
        #expect(lines.count == 400 && lines.allSatisfy { ["revoked", "alreadyRevoked"].contains($0["status"]?.stringValue ?? "") })
    }

    /// Admin listing of several users in parallel (arguments or stdin), each record with its user; filters.
    @Test func adminListsManyUsersWithFilters() throws {
        let h = try harness()
        _ = try createSessions(h, user: "bob", count: 3)
        _ = try createSessions(h, user: "carol", count: 2)
        let both = try h.run("sl-sessions", ["list", "--user", "bob", "--user", "carol"])
        #expect(both.status == 0, "\(both.stderrText)")
        let records = try both.jsonLines()
        #expect(
            records.filter { $0["user"]?.stringValue == "bob" }.count >= 3
                && records.filter { $0["user"]?.stringValue == "carol" }.count >= 2)
        let fromStdin = try h.run("sl-sessions", ["list", "--user", "-"], stdin: Array("bob\r\n# comment\ncarol\n".utf8))
        #expect(try fromStdin.jsonLines().count == records.count, "\(fromStdin.stderrText)")
        let otherApp = try h.run("sl-sessions", ["list", "--user", "bob", "--app", "com.example.game"])
        #expect(otherApp.status == 0 && otherApp.stdout.isEmpty, "no bob session of that app")
        // Just created: none is idle for a day; all are idle for 0 seconds.
        #expect(try h.run("sl-sessions", ["list", "--user", "bob", "--idle-for", "1d"]).stdout.isEmpty)
        #expect(try h.run("sl-sessions", ["list", "--user", "bob", "--idle-for", "0"]).jsonLines().count >= 3)
        let unknown = try h.run("sl-sessions", ["list", "--user", "bob", "--user", "nobody"])
        #expect(unknown.status == 8 && unknown.stderrText.contains("nobody"), "\(unknown.stderrText)")
        let badDuration = try h.run("sl-sessions", ["list", "--idle-for", "3x"])
        #expect(badDuration.status == 2)
        let huge = try h.run("sl-sessions", ["list", "--idle-for", "99999999999d"])
        #expect(huge.status == 2, "an out-of-range duration is a usage error, never a trap")
        let notAdmin = try harness(as: "bob")
        #expect(try notAdmin.run("sl-sessions", ["list", "--user", "carol"]).status == 5)
    }

    /// S16: a password change keeps this session and revokes the others; secrets come from stdin, never argv.
    @Test func s16PasswordChangeKeepsThisSessionAndRevokesTheOthers() throws {
        let h = try harness(as: "bob")
        _ = try createSessions(h, user: "bob", count: 3)
        let wrong = try h.run("sl-sessions", ["password"], stdin: Array("not-it\nnew-secret-42\n".utf8))
        #expect(wrong.status == 5, "\(wrong.stderrText)")
        let run = try h.run("sl-sessions", ["password"], stdin: Array("bob-pass\nnew-secret-42\n".utf8))
        #expect(run.status == 0, "\(run.stderrText)")
        let result = try run.json()
        #expect(result["changed"] == .bool(true) && (result["revokedOthers"]?.intValue ?? 0) >= 3)
        #expect(try h.restore().state == "valid", "this session is kept")
        #expect(try h.run("sl-sessions", ["list"]).jsonLines().count == 1)
        let missing = try h.run("sl-sessions", ["password"], stdin: Array("only-one\n".utf8))
        #expect(missing.status == 2)
    }

    /// S16: a successful SMS reset clears the local identity; the server revoked the account's sessions.
    @Test func s16SMSResetClearsTheLocalIdentity() throws {
        let h = try harness(as: "bob")
        let request = try h.run("sl-sessions", ["reset", "request", "+8613800000002"])
        #expect(request.status == 0, "\(request.stderrText)")
        let code = try h.server.dev("GET", "/__dev/sms/+8613800000002").json()["code"]?.stringValue ?? ""
        let wrong = try h.run("sl-sessions", ["reset", "confirm", "+8613800000002"], stdin: Array("000000\nreset-secret-42\n".utf8))
        let afterWrong = try h.status()
        #expect(wrong.status != 0 && afterWrong["session"] != .null, "a wrong code changes nothing locally")
        let confirm = try h.run("sl-sessions", ["reset", "confirm", "+8613800000002"], stdin: Array("\(code)\nreset-secret-42\n".utf8))
        #expect(confirm.status == 0, "\(confirm.stderrText)")
        #expect(try confirm.json()["reset"] == .bool(true))
        #expect(try h.status()["session"] == .null, "the local identity is cleared")
        #expect(try h.server.login("bob", password: "reset-secret-42").token.isEmpty == false)
    }

    /// `--all-users` pages through the admin user list; every user's sessions come with their user.
    @Test func listAllUsersPagesThroughEveryUser() throws {
        let h = try harness()
        let made = try h.server.dev(
            "POST", "/__dev/users", .object([("count", .int(1_200)), ("prefix", .string("p")), ("sessionsPerUser", .int(2))]))
        #expect(made.status == 201)
        let run = try h.run("sl-sessions", ["list", "--all-users"])
        #expect(run.status == 0, "\(run.stderrText)")
        let records = try run.jsonLines().filter { $0["user"]?.stringValue?.hasPrefix("p") == true }
        #expect(records.count == 2_400)
        #expect(Set(records.compactMap { $0["user"]?.stringValue }).count == 1_200, "more than one page of users (1,000 a page)")
        #expect(try h.run("sl-sessions", ["list", "--all-users", "--user", "bob"]).status == 2)
    }

    /// The devserver's own few users fit on one page, whose answer has no cursor: that is the end of the list,
    /// not a repeated cursor (a first page without `next` once failed with DATA_ERROR, exit 12).
    @Test func listAllUsersOnASinglePage() throws {
        let h = try harness()
        let run = try h.run("sl-sessions", ["list", "--all-users", "--jsonl"])
        #expect(run.status == 0, "\(run.stderrText)")
        let users = Set(try run.jsonLines().compactMap { $0["user"]?.stringValue })
        #expect(users.isSuperset(of: ["alice", "bob"]), "\(users)")
    }

    /// 10,000 sessions of many users, listed and revoked in one pipeline with 503s and resets injected
    /// mid-run: every session revoked, and each one requested exactly once (the server counts per session).
    @Test func tenThousandSessionsAreRevokedExactlyOnce() throws {
        let h = try harness()
        let made = try h.server.dev(
            "POST", "/__dev/users", .object([("count", .int(1_000)), ("prefix", .string("x")), ("sessionsPerUser", .int(10))]))
        #expect(made.status == 201)
        let listed = try h.run("sl-sessions", ["list", "--all-users", "--jsonl"])
        let plan = try listed.jsonLines().filter { $0["user"]?.stringValue?.hasPrefix("x") == true }
        #expect(plan.count == 10_000)
        let input = Array(plan.map { $0.serialized() }.joined(separator: "\n").utf8)
        let revoke = try h.spawn("sl-sessions", ["revoke", "--journal", h.home.file("big.journal"), "-"], stdin: input)
        underway(revoke, results: 100)
        _ = try h.server.dev(
            "POST", "/__dev/faults",
            .object([("route", .string("DELETE /api/admin/users/*/sessions/*")), ("status", .int(502)), ("count", .int(15))]))
        _ = try h.server.dev(
            "POST", "/__dev/faults",
            .object([("route", .string("DELETE /api/admin/users/*/sessions/*")), ("reset", .bool(true)), ("count", .int(5))]))
        let run = revoke.waitOrKill(seconds: 300)
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(try summary(run)?["revoked"]?.intValue == 10_000)
        let counts = try h.server.dev("GET", "/__dev/revocations").json()["sessions"]
        let ours = plan.compactMap { $0["id"]?.stringValue }
        let requested = ours.map { counts?[$0]?.intValue ?? -1 }
        #expect(
            requested.allSatisfy { $0 == 1 },
            "requests per session other than 1: \(Dictionary(grouping: requested, by: { $0 }).mapValues(\.count))")
    }

    /// A 429 with Retry-After from one answer pauses every worker: the server sees no revocation from anyone
    /// until the time is up (its log has each request's start in milliseconds).
    @Test func a429PausesEveryWorkerAtTheServer() throws {
        let logDirectory = TemporaryDirectory("devserver-log")  // kept alive: its deinit removes the directory
        let log = logDirectory.file("requests.jsonl")
        let h = try SessionToolsHarness(server: try DevServerProcess(["--log", log]))
        try h.storeLogin("alice")
        _ = try createSessions(h, user: "carol", count: 600)
        let revoke = try h.spawn("sl-sessions", ["revoke", "--user", "carol", "--all", "--rate", "200"])
        underway(revoke, results: 50)
        _ = try h.server.dev(
            "POST", "/__dev/faults",
            .object([
                ("route", .string("DELETE /api/admin/users/*/sessions/*")), ("status", .int(429)),
                ("headers", .object([("Retry-After", .string("1"))])), ("count", .int(1))
            ]))
        let run = revoke.waitOrKill(seconds: 60)
        #expect(run.status == 0, "\(run.stderrText)")
        let total = try summary(run)
        #expect(total?["revoked"]?.intValue == 600 && (total?["throttledMs"]?.intValue ?? 0) >= 900)
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
            .filter { $0["method"]?.stringValue == "DELETE" && $0["route"]?.stringValue == "/api/admin/users/{uid}/sessions/{id}" }
        let throttled = try #require(lines.first { $0["status"]?.intValue == 429 }?["startedMs"]?.intValue)
        // Requests already past the gate when the 429 was sent (at most the other 7 of the 8 in flight) may still
        // arrive during the pause, later still on a loaded machine; nothing else may. Unpaused, a rate of 200/s
        // would put ~160 requests in that window.
        let inside = lines.filter {
            ($0["startedMs"]?.intValue ?? 0) > throttled && ($0["startedMs"]?.intValue ?? 0) < throttled + 900
        }
        #expect(inside.count <= 7, "\(inside.count) revocations reached the server during the pause")
    }

    /// S14/S15: another sign-in replaces the stored account mid-run (and, as signing in over a stored session
    /// does, revokes the run's session): the run stops with SESSION_CHANGED, nothing more is done for the new account, and the
    /// late rejection of the old session never clears the new one.
    @Test func s14TheAccountChangingMidRunStopsItAndKeepsTheNewSession() throws {
        let h = try harness()
        _ = try createSessions(h, user: "carol", count: 300)
        let revoke = try h.spawn("sl-sessions", ["revoke", "--user", "carol", "--all", "--rate", "50"])
        underway(revoke, results: 20)
        try h.storeLogin("bob")
        let run = revoke.waitOrKill(seconds: 30)
        #expect(run.status == 11, "\(run.stderrText)")
        #expect(run.stderrText.contains("SESSION_CHANGED"))
        #expect(try h.status()["session"]?["user"]?.stringValue == "bob", "the newer session is kept (S15)")
        #expect(try adminSessionCount(h, user: "carol") > 0, "the run stopped")
    }
}
