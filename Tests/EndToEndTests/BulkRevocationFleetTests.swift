import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// Bulk revocation at fleet scale, the built sl-sessions against a real sl-devserver: outages (fault bursts, a
/// server killed and restarted), signals, journals that are not ours, streaming input, shards.
@Suite struct BulkRevocationFleetTests {
    static let deleteRoute = "DELETE /api/admin/users/*/sessions/*"
    static let deleteCounter = "DELETE /api/admin/users/{uid}/sessions/{id}"

    func harness(_ server: DevServerProcess? = nil) throws -> SessionToolsHarness {
        let h = try SessionToolsHarness(server: try server ?? DevServerProcess())
        try h.storeLogin("alice")
        return h
    }

    func createSessions(_ server: DevServerProcess, user: String = "carol", count: Int) throws -> [String] {
        try server.createSessions(user: user, count: count)
    }

    func remaining(_ server: DevServerProcess, user: String = "carol") throws -> Set<String> {
        let admin = try server.login("alice")
        let sessions =
            try server.request("GET", "/api/admin/users/\(user)/sessions", token: admin.token).json()["sessions"]?.arrayValue ?? []
        return Set(sessions.compactMap { $0["id"]?.stringValue })
    }

    func summary(_ run: ToolRun) throws -> JSON? { try run.jsonLines().last?["summary"] }
    func results(_ run: ToolRun) throws -> [JSON] { try run.jsonLines().filter { $0["summary"] == nil && $0["verify"] == nil } }

    func journalRecords(_ path: String) throws -> [JSON] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
    }

    /// 50 consecutive 503s and resets at the start of the run (a few seconds of trouble): with default options
    /// no item fails, every session is revoked once, and no item is charged an attempt for the outage.
    @Test func aBurstOfFiftyFaultsFailsNoItem() throws {
        let h = try harness()
        _ = try createSessions(h.server, count: 300)
        _ = try h.server.dev(
            "POST", "/__dev/faults", .object([("route", .string(Self.deleteRoute)), ("status", .int(503)), ("count", .int(30))]))
        _ = try h.server.dev(
            "POST", "/__dev/faults", .object([("route", .string(Self.deleteRoute)), ("reset", .bool(true)), ("count", .int(20))]))
        let run = try h.spawn("sl-sessions", ["revoke", "--user", "carol", "--all"]).waitOrKill(seconds: 120)
        #expect(run.status == 0, "\(run.stderrText)")
        let total = try summary(run)
        #expect(total?["revoked"]?.intValue == 300 && total?["failed"]?.intValue == 0)
        #expect((total?["outageRequests"]?.intValue ?? 0) > 0, "the probes and the requests in flight were not the items'")
        let lines = try results(run)
        #expect(
            lines.count == 300 && lines.allSatisfy { $0["attempts"]?.intValue == 1 },
            "attempts: \(lines.compactMap { $0["attempts"]?.intValue }.filter { $0 != 1 })")
        #expect(run.stderrText.contains("not answering") && run.stderrText.contains("answers again"))
        #expect(try remaining(h.server).isEmpty)
    }

    /// The server is killed mid-run and comes back, on the same port and database, once the run has said it is
    /// not answering: with default options the run waits for it and finishes, exit 0, every session revoked
    /// once, no item charged for it.
    @Test func aServerDownMidRunIsWaitedFor() throws {
        let dir = TemporaryDirectory("outage-db")
        let first = try DevServerProcess(["--db", dir.file("dev.db")])
        let h = try harness(first)
        for _ in 0..<3 { _ = try createSessions(first, count: 10_000) }
        let revoke = try h.spawn("sl-sessions", ["revoke", "--user", "carol", "--all"])
        #expect(revoke.waitForStdout(seconds: 60) { $0.split(separator: "\n").count >= 500 }, "the run is under way")
        first.kill()
        #expect(revoke.waitForStderr(seconds: 60) { $0.contains("not answering") }, "the run noticed the outage")
        let second = try DevServerProcess(["--db", dir.file("dev.db")], port: first.port)
        let run = revoke.waitOrKill(seconds: 300)
        #expect(run.status == 0, "\(run.stderrText)")
        let lines = try results(run)
        #expect(lines.count == 30_000 && lines.allSatisfy { ["revoked", "alreadyRevoked"].contains($0["status"]?.stringValue ?? "") })
        // A request in flight when the server died may be answered "already revoked" by its repeat; none is
        // charged more than that one repeat.
        #expect(lines.allSatisfy { ($0["attempts"]?.intValue ?? 9) <= 2 }, "the outage is charged to no item")
        #expect((try summary(run)?["outageMs"]?.intValue ?? 0) > 0)
        #expect(run.stderrText.contains("not answering") && run.stderrText.contains("answers again"))
        #expect(try remaining(second).isEmpty)
    }

    /// SIGTERM mid-run: exit 143, a summary saying so, and every session the server revoked is on stdout and
    /// in the journal (none revoked unreported); --resume then finishes the rest.
    @Test func sigtermReportsEverythingTheServerRevoked() throws {
        let h = try harness()
        let ids = try createSessions(h.server, count: 400)
        let journal = h.home.file("term.journal")
        let revoke = try h.spawn("sl-sessions", ["revoke", "--user", "carol", "--all", "--rate", "50", "--journal", journal])
        #expect(revoke.waitForStdout(seconds: 20) { $0.split(separator: "\n").count >= 20 }, "results stream out as items finish")
        revoke.signal(SIGTERM)
        let run = revoke.waitOrKill(seconds: 20)
        #expect(run.status == 143, "\(run.stderrText)")
        let total = try summary(run)
        #expect(total?["interrupted"] == .bool(true) && total?["signal"]?.intValue == 15)
        let revokedOnServer = Set(ids).subtracting(try remaining(h.server))
        #expect(!revokedOnServer.isEmpty && revokedOnServer.count < 400)
        let printed = Set(try results(run).compactMap { $0["id"]?.stringValue })
        let journaled = Set(try journalRecords(journal).compactMap { $0["id"]?.stringValue })
        #expect(revokedOnServer.isSubset(of: printed), "missing on stdout: \(revokedOnServer.subtracting(printed).count)")
        #expect(revokedOnServer.isSubset(of: journaled), "missing in the journal: \(revokedOnServer.subtracting(journaled).count)")
        // The summary counts the requests the interrupted run made (each revoked session took at least one).
        #expect((total?["requests"]?.intValue ?? 0) >= Int64(revokedOnServer.count), "\(total?.serialized() ?? "")")

        let resumed = try h.run("sl-sessions", ["revoke", "--user", "carol", "--all", "--journal", journal, "--resume"])
        #expect(resumed.status == 0, "\(resumed.stderrText)")
        #expect(try remaining(h.server).isEmpty)
    }

    /// A journal decides what is skipped: one that another user could have written, a FIFO, a link, a device —
    /// refused with INSECURE_PERMISSIONS (exit 10) naming it, before anything is requested.
    @Test func journalsThatAreNotPrivateRegularFilesOfOursAreRefused() throws {
        let h = try harness()
        let ids = try createSessions(h.server, count: 2)
        let shared = h.home.file("shared.journal")
        // Planted records: both sessions "revoked".
        let planted = ids.map { #"{"id":"\#($0)","user":"carol","status":"revoked"}"# }.joined(separator: "\n") + "\n"
        try planted.write(toFile: shared, atomically: false, encoding: .utf8)
        chmod(shared, 0o666)
        var cases: [(String, String)] = [("group/world-writable", shared)]
        let fifo = h.home.file("fifo.journal")
        mkfifo(fifo, 0o600)
        cases.append(("FIFO", fifo))
        let link = h.home.file("link.journal")
        let target = h.home.file("target.journal")
        try planted.write(toFile: target, atomically: false, encoding: .utf8)
        chmod(target, 0o600)
        symlink(target, link)
        cases.append(("symbolic link", link))
        cases.append(("device", "/dev/null"))
        if getuid() == 0 {
            let foreign = h.home.file("foreign.journal")
            try planted.write(toFile: foreign, atomically: false, encoding: .utf8)
            // Open to everyone, so that the tool (an ordinary user) opens it and then refuses it for its owner.
            chmod(foreign, 0o666)
            chown(foreign, 65534, 65534)
            cases.append(("another user's", foreign))
        }
        for (what, path) in cases {
            let run = try h.spawn("sl-sessions", ["revoke", "--user", "carol", "--all", "--journal", path, "--resume"]).waitOrKill(
                seconds: 20)
            #expect(run.status == 10, "\(what): \(run.stderrText)")
            #expect(try run.error()["error"]?["code"]?.stringValue == "INSECURE_PERMISSIONS", "\(what)")
            #expect(run.stderrText.contains(path), "\(what): the message names the journal")
        }
        #expect(try remaining(h.server).count == 2, "nothing was revoked, and nothing reported revoked")
        #expect(try h.counter(Self.deleteCounter) == 0)
    }

    /// S16, a Kubernetes volume with fsGroup: the kubelet makes a retried pod's journal group-writable
    /// (rw-rw----) in a setgid directory of the pod's group. That journal is resumed; the same mode in a directory
    /// that is not setgid, or that others can write, is still refused.
    @Test func testS16AGroupWritableJournalInASetgidDirectoryOfOurGroupIsResumed() throws {
        let h = try harness()
        let ids = try createSessions(h.server, count: 40)
        let audit = h.home.file("audit")
        mkdir(audit, 0o770)
        let journal = audit + "/shard-0.journal"
        let plan = "user,id\n" + ids.prefix(20).map { "carol,\($0)\n" }.joined()
        let first = try h.run("sl-sessions", ["revoke", "--journal", journal, "--reason", "fsGroup", "-"], stdin: Array(plan.utf8))
        #expect(first.status == 0, "\(first.stderrText)")
        // What fsGroup does on the next mount: the directory setgid, the files OR'd with rw-rw----.
        chmod(audit, 0o2770)
        chmod(journal, 0o660)
        let more = plan + ids.suffix(20).map { "carol,\($0)\n" }.joined()
        let resumed = try h.run(
            "sl-sessions", ["revoke", "--journal", journal, "--resume", "--reason", "fsGroup", "-"], stdin: Array(more.utf8))
        #expect(resumed.status == 0, "\(resumed.stderrText)")
        let summary = try summary(resumed)
        #expect(
            summary?["fromJournal"]?.intValue == 20 && summary?["requests"]?.intValue == 20 && summary?["revoked"]?.intValue == 40,
            "the first 20 come from the journal, the other 20 are requested: \(String(describing: summary))")
        for (mode, what) in [(mode_t(0o770), "not setgid"), (mode_t(0o2777), "writable by others")] {
            chmod(audit, mode)
            let refused = try h.run(
                "sl-sessions", ["revoke", "--journal", journal, "--resume", "--reason", "fsGroup", "-"], stdin: Array(more.utf8))
            #expect(refused.status == 10 && refused.stderrText.contains("INSECURE_PERMISSIONS"), "\(what): \(refused.stderrText)")
        }
    }

    /// --resume continues the run its header describes: another caller's or another API's journal is refused,
    /// a different --reason too; the header's reason is kept. A journal locked by another run is exit 10.
    @Test func aResumeMustMatchTheJournalsHeader() throws {
        let h = try harness()
        _ = try createSessions(h.server, count: 3)
        let journal = h.home.file("run.journal")
        let first = try h.run("sl-sessions", ["revoke", "--user", "carol", "--all", "--journal", journal, "--reason", "offboarding"])
        #expect(first.status == 0, "\(first.stderrText)")

        let resumedSame = try h.run("sl-sessions", ["revoke", "--user", "carol", "--all", "--journal", journal, "--resume"])
        #expect(resumedSame.status == 0, "\(resumedSame.stderrText)")
        #expect(try journalRecords(journal).filter { $0["run"] != nil }.last?["run"]?["reason"]?.stringValue == "offboarding")

        let otherReason = try h.run(
            "sl-sessions", ["revoke", "--user", "carol", "--all", "--journal", journal, "--resume", "--reason", "cleanup"])
        #expect(try otherReason.status == 2 && otherReason.error()["error"]?["code"]?.stringValue == "JOURNAL_MISMATCH")

        let text = try String(contentsOfFile: journal, encoding: .utf8)
        let forged = h.home.file("forged.journal")
        try text.replacingOccurrences(of: #""user":"alice""#, with: #""user":"mallory""#).write(
            toFile: forged, atomically: false, encoding: .utf8)
        chmod(forged, 0o600)
        let otherCaller = try h.run("sl-sessions", ["revoke", "--user", "carol", "--all", "--journal", forged, "--resume"])
        #expect(otherCaller.status == 2 && otherCaller.stderrText.contains("mallory"), "\(otherCaller.stderrText)")

        let otherAPI = h.home.file("other-api.journal")
        try text.replacingOccurrences(of: h.server.baseURL, with: "https://account.example.org").write(
            toFile: otherAPI, atomically: false, encoding: .utf8)
        chmod(otherAPI, 0o600)
        let wrongAPI = try h.run("sl-sessions", ["revoke", "--user", "carol", "--all", "--journal", otherAPI, "--resume"])
        #expect(try wrongAPI.status == 2 && wrongAPI.error()["error"]?["code"]?.stringValue == "JOURNAL_MISMATCH", "\(wrongAPI.stderrText)")

        // Held once flock says so on stdout (its child runs only with the lock taken), not after a guessed pause.
        let holder = try Tools.spawn("/usr/bin/flock", [journal, "sh", "-c", "echo locked; exec sleep 10"], home: h.home.path)
        #expect(holder.waitForStdout(seconds: 30) { $0.contains("locked") }, "flock holds the journal")
        let locked = try h.run("sl-sessions", ["revoke", "--user", "carol", "--all", "--journal", journal, "--resume"])
        holder.signal(SIGKILL)
        _ = holder.wait()
        #expect(try locked.status == 10 && locked.error()["error"]?["code"]?.stringValue == "JOURNAL_IN_USE", "\(locked.stderrText)")
    }

    /// `… | sl-sessions revoke -` starts revoking before the producer ends, and its result lines come out as
    /// items finish (not when the run ends).
    @Test func stdinIsRevokedAsItArrives() throws {
        let h = try harness()
        let ids = try createSessions(h.server, count: 3)
        // The producer holds back the rest of its lines until the test has seen the first result.
        let more = h.home.file("more")
        let script =
            "{ echo \(ids[0]); echo \(ids[0]); while [ ! -e '\(more)' ]; do sleep 0.05; done; echo \(ids[1]); echo \(ids[2]); } | \(h.shellEnvironment) '\(Tools.path("sl-sessions"))' revoke --user carol -"
        let revoke = try Tools.spawn("/bin/sh", ["-c", script], home: h.home.path)
        #expect(revoke.waitForStdout(seconds: 60) { $0.contains(#""status":"revoked""#) }, "a result line before stdin ended")
        #expect(try h.counter(Self.deleteCounter) == 1, "the first DELETE arrived while the producer was still writing")
        #expect(FileManager.default.createFile(atPath: more, contents: nil))
        let run = revoke.waitOrKill(seconds: 30)
        #expect(run.status == 0, "\(run.stderrText)")
        let total = try summary(run)
        #expect(total?["revoked"]?.intValue == 3 && total?["duplicates"]?.intValue == 1)
        #expect(try results(run).filter { $0["status"]?.stringValue == "skipped" }.map { $0["line"]?.intValue } == [2])
    }

    /// Four shards of one input: each keeps its own part (a stable hash of user and id), the parts are disjoint
    /// and together revoke every session once; --shard-from-env reads a Kubernetes index.
    @Test func shardsSplitOneRunExactly() throws {
        let h = try harness()
        let ids = try createSessions(h.server, count: 200)
        let input = Array(("id,user\n" + ids.map { "\($0),carol" }.joined(separator: "\n") + "\n").utf8)
        var seen: [Set<String>] = []
        for k in 0..<4 {
            let arguments = k == 3 ? ["revoke", "--shard-from-env", "--shards", "4", "-"] : ["revoke", "--shard", "\(k)/4", "-"]
            let run = try h.run(
                "sl-sessions", arguments + ["--journal", h.home.file("shard\(k).journal")], stdin: input,
                environment: k == 3 ? ["JOB_COMPLETION_INDEX": "3"] : [:])
            #expect(run.status == 0, "\(run.stderrText)")
            let mine = Set(try results(run).compactMap { $0["id"]?.stringValue })
            #expect(try summary(run)?["otherShards"]?.intValue == Int64(200 - mine.count))
            #expect(mine.count > 20, "a fair share: \(mine.count)")
            seen.append(mine)
        }
        for a in 0..<4 { for b in (a + 1)..<4 { #expect(seen[a].isDisjoint(with: seen[b])) } }
        #expect(seen.reduce(Set<String>()) { $0.union($1) } == Set(ids))
        #expect(try remaining(h.server).isEmpty)
        #expect(try h.counter(Self.deleteCounter) == 200, "each session requested once")
        // The same item lands in the same shard whatever the input's order.
        let reversed = Array(("id,user\n" + ids.reversed().map { "\($0),carol" }.joined(separator: "\n") + "\n").utf8)
        let plan = try h.run("sl-sessions", ["revoke", "--shard", "0/4", "--dry-run", "-"], stdin: reversed)
        #expect(Set(try plan.jsonLines().compactMap { $0["id"]?.stringValue }) == seen[0])
        let badShard = try h.run("sl-sessions", ["revoke", "--shard", "4/4", "-"], stdin: input)
        #expect(badShard.status == 2)
        // One audit proves the union: every planned item done exactly once, every shard's journal there.
        let verify = try h.run(
            "sl-sessions", ["journal", "verify", "--plan", "-"] + (0..<4).map { h.home.file("shard\($0).journal") }, stdin: input)
        #expect(verify.status == 0, "\(verify.stderrText)")
        let audit = try verify.jsonLines().last?["summary"]
        #expect(audit?["planned"]?.intValue == 200 && audit?["done"]?.intValue == 200 && audit?["exact"] == .bool(true))
        #expect(audit?["shards"]?.arrayValue?.count == 4)
    }

    /// `journal verify` catches what a sharded run can get wrong — a missing shard, an item that failed, items
    /// done twice — and `journal merge` writes one audit trail with caller and reason on every item.
    @Test func journalVerifyCatchesMissingFailedAndDoubledItems() throws {
        let h = try harness()
        let ids = try createSessions(h.server, count: 40)
        let input = Array(("id,user\n" + ids.map { "\($0),carol" }.joined(separator: "\n") + "\n").utf8)
        let planRun = try h.run("sl-sessions", ["revoke", "--dry-run", "-"], stdin: input)
        let plan = h.home.file("plan.jsonl")
        try Data(planRun.stdout).write(to: URL(fileURLWithPath: plan))
        // One session's route always answers 500: that item fails (its own failure, not an outage).
        _ = try h.server.dev(
            "POST", "/__dev/faults",
            .object([("route", .string("DELETE /api/admin/users/carol/sessions/\(ids[7])")), ("status", .int(500))]))
        let journals = (0..<2).map { h.home.file("j\($0).journal") }
        for k in 0..<2 {
            _ = try h.run(
                "sl-sessions",
                ["revoke", "--shard", "\(k)/2", "--max-attempts", "2", "--journal", journals[k], "--reason", "offboarding", "-"],
                stdin: input)
        }
        let failed = try h.run("sl-sessions", ["journal", "verify", "--plan", plan] + journals)
        #expect(failed.status == 8, "\(failed.stderrText)")
        let findings = try failed.jsonLines().filter { $0["problem"] != nil }
        #expect(findings.count == 1 && findings.first?["problem"]?.stringValue == "failed" && findings.first?["id"]?.stringValue == ids[7])

        let oneShard = try h.run("sl-sessions", ["journal", "verify", "--plan", plan, journals[0]])
        #expect(oneShard.status == 8)
        let partial = try oneShard.jsonLines().last?["summary"]
        #expect((partial?["missing"]?.intValue ?? 0) >= 10 && partial?["missingShards"]?.arrayValue == [.string("1/2")])

        // A second, separate run over shard 0's items (not a resume of its journal): each is done twice.
        let again = h.home.file("again.journal")
        _ = try h.run("sl-sessions", ["revoke", "--shard", "0/2", "--journal", again, "-"], stdin: input)
        let doubled = try h.run("sl-sessions", ["journal", "verify", "--plan", plan, journals[0], journals[1], again])
        #expect(doubled.status == 8)
        #expect((try doubled.jsonLines().last?["summary"]?["doubled"]?.intValue ?? 0) >= 10)

        let audit = h.home.file("audit.jsonl")
        let merge = try h.run("sl-sessions", ["journal", "merge", "-o", audit] + journals)
        #expect(merge.status == 0, "\(merge.stderrText)")
        let trail = try String(contentsOfFile: audit, encoding: .utf8).split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
        let items = trail.filter { $0["id"] != nil }
        #expect(trail.filter { $0["run"] != nil }.count == 2 && items.count == 40)
        #expect(items.allSatisfy { $0["caller"]?.stringValue == "alice" && $0["reason"]?.stringValue == "offboarding" && $0["at"] != nil })
        #expect(trail.last?["summary"]?["items"]?.intValue == 40)
    }

    /// The run and its audit share one definition of success (`BulkItemStatus.isSuccess`, `BulkJournalHeader`):
    /// `journal verify` is exact only when every planned session is provably revoked exactly once by one run.
    @Test(
        """
        S16 journal verify is not exact (exit 8) for plan lines it cannot read, notFound items, or journals of another run, \
        and lists each
        """)
    func s16VerifyIsExactOnlyWhenEveryPlannedSessionIsProvablyRevoked() throws {
        let h = try harness()
        let ids = try createSessions(h.server, count: 6)
        let csv = "id,user\n" + ids.map { "\($0),carol" }.joined(separator: "\n") + "\n"
        let journal = h.home.file("run.journal")
        let revoke = try h.run("sl-sessions", ["revoke", "--journal", journal, "--reason", "offboarding", "-"], stdin: Array(csv.utf8))
        #expect(revoke.status == 0, "\(revoke.stderrText)")
        let plan = h.home.file("plan.csv")
        try csv.write(toFile: plan, atomically: true, encoding: .utf8)
        let clean = try h.run("sl-sessions", ["journal", "verify", "--plan", plan, journal])
        let cleanSummary = try clean.jsonLines().last?["summary"]
        #expect(clean.status == 0 && cleanSummary?["exact"] == .bool(true), "\(clean.stdoutText)")

        // (a) The plan has lines no item was read from: a line over 64 KiB (a device name can be that long), invalid
        // UTF-8, a row with too many fields. Each may name a session that is still active.
        var tainted = Array(csv.utf8)
        tainted += Array((String(repeating: "x", count: 70_000) + ",carol\n").utf8)
        tainted += [0x73, 0xFF, 0xFE, 0x2C] + Array("carol\n".utf8)
        tainted += Array("a,b,c,d\n".utf8)
        try Data(tainted).write(to: URL(fileURLWithPath: plan))
        let unread = try h.run("sl-sessions", ["journal", "verify", "--plan", plan, journal])
        #expect(unread.status == 8, "\(unread.stdoutText)")
        let unreadSummary = try unread.jsonLines().last?["summary"]
        let listed = try unread.jsonLines().filter { $0["problem"]?.stringValue == "unreadablePlanLine" }
        #expect(unreadSummary?["exact"] == .bool(false) && (unreadSummary?["unreadablePlanLines"]?.intValue ?? 0) >= 2)
        #expect(Int64(listed.count) == unreadSummary?["unreadablePlanLines"]?.intValue, "each unreadable line is listed")

        // (b) A plan of bare ids without a user column: revoke finds none of them among the caller's own sessions
        // (notFound, exit 8) and every session remains; the audit must not call that done.
        let others = try createSessions(h.server, count: 3)
        let bare = others.joined(separator: "\n") + "\n"
        let bareJournal = h.home.file("bare.journal")
        let bareRun = try h.run("sl-sessions", ["revoke", "--journal", bareJournal, "-"], stdin: Array(bare.utf8))
        #expect(bareRun.status == 8)
        #expect(try remaining(h.server).isSuperset(of: others))
        let barePlan = h.home.file("bare.txt")
        try bare.write(toFile: barePlan, atomically: true, encoding: .utf8)
        let notFound = try h.run("sl-sessions", ["journal", "verify", "--plan", barePlan, bareJournal])
        #expect(notFound.status == 8, "\(notFound.stdoutText)")
        let notFoundSummary = try notFound.jsonLines().last?["summary"]
        #expect(notFoundSummary?["notFound"]?.intValue == 3 && notFoundSummary?["done"]?.intValue == 0, "\(notFound.stdoutText)")
        #expect(try notFound.jsonLines().filter { $0["problem"]?.stringValue == "notFound" }.count == 3)

        // (c) Two shards whose runs disagree (another reason): not one run, not one verdict.
        let more = try createSessions(h.server, count: 20)
        let shardInput = Array(("id,user\n" + more.map { "\($0),carol" }.joined(separator: "\n") + "\n").utf8)
        let shardPlan = h.home.file("shards.csv")
        try Data(shardInput).write(to: URL(fileURLWithPath: shardPlan))
        let shardJournals = (0..<2).map { h.home.file("shard\($0).journal") }
        for (k, reason) in ["offboarding", "something else"].enumerated() {
            let run = try h.run(
                "sl-sessions", ["revoke", "--shard", "\(k)/2", "--journal", shardJournals[k], "--reason", reason, "-"], stdin: shardInput)
            #expect(run.status == 0, "\(run.stderrText)")
        }
        #expect(try remaining(h.server).isDisjoint(with: more), "every session of the plan was revoked")
        let mixed = try h.run("sl-sessions", ["journal", "verify", "--plan", shardPlan] + shardJournals)
        #expect(mixed.status == 8, "\(mixed.stdoutText)")
        let mismatch = try mixed.jsonLines().first { $0["problem"]?.stringValue == "mismatchedRun" }
        #expect(mismatch?["journal"]?.stringValue == shardJournals[1] && mismatch?["field"]?.stringValue == "reason", "\(mixed.stdoutText)")
        #expect(try mixed.jsonLines().last?["summary"]?["mismatchedRuns"]?.intValue == 1)
    }

    /// What a GAM user trips on: a plain id of another user's session without --user is "not found" with a hint,
    /// counted in the summary; a JSON id that is not a string says so.
    @Test func plainIdsOfAnotherUserSayToPassUser() throws {
        let h = try harness()
        let ids = try createSessions(h.server, count: 1)
        let run = try h.run("sl-sessions", ["revoke", "-"], stdin: Array((ids[0] + "\n").utf8))
        #expect(run.status == 8, "\(run.stderrText)")
        let line = try results(run).first
        #expect(line?["status"]?.stringValue == "notFound" && line?["error"]?["message"]?.stringValue?.contains("--user") == true)
        #expect(try summary(run)?["notFoundWithoutUser"]?.intValue == 1)
        #expect(run.stderrText.contains("--user UID"))
        let numeric = try h.run("sl-sessions", ["revoke", "-"], stdin: Array(#"{"id":12345,"user":"carol"}"#.utf8))
        #expect(numeric.status == 8)
        #expect(try results(numeric).first?["error"]?["message"]?.stringValue?.contains("\"id\" is not a string") == true)
    }

    /// A listing refused for the whole run (not an admin) prints one error object, not one per user and
    /// another for the run.
    @Test func aRefusedAdminListingPrintsOneError() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("bob")
        for arguments in [["list", "--user", "carol", "--user", "dave"], ["list", "--all-users"]] {
            let run = try h.run("sl-sessions", arguments)
            #expect(run.status == 5, "\(arguments): \(run.stderrText)")
            let errors = run.stderrText.split(separator: "\n").filter { $0.hasPrefix("{\"error\"") }
            #expect(errors.count == 1, "\(arguments): \(run.stderrText)")
        }
    }

    /// docs/fleet.md's GNU parallel recipe, run for real: four shards as four local job slots against one
    /// devserver with faults injected; the shard that fails is rerun alone by --resume-failed (and resumes
    /// its journal); `journal verify` then proves the union exact.
    @Test func theGNUParallelRecipeRunsAndTheAuditProvesItExact() throws {
        guard Tools.available("parallel") else {
            Issue.record("GNU parallel is not installed: scripts/bootstrap installs it")
            return
        }
        let h = try harness()
        let ids = try createSessions(h.server, count: 400)
        let dir = h.home.path
        try ("id,user\n" + ids.map { "\($0),carol" }.joined(separator: "\n") + "\n").write(
            toFile: dir + "/plan.csv", atomically: true, encoding: .utf8)
        // Bursts for everyone, and one session whose route always fails: its shard ends 8 on the first pass.
        _ = try h.server.dev(
            "POST", "/__dev/faults", .object([("route", .string(Self.deleteRoute)), ("status", .int(503)), ("count", .int(20))]))
        _ = try h.server.dev(
            "POST", "/__dev/faults", .object([("route", .string(Self.deleteRoute)), ("reset", .bool(true)), ("count", .int(10))]))
        let broken = "DELETE /api/admin/users/carol/sessions/\(ids[11])"
        _ = try h.server.dev("POST", "/__dev/faults", .object([("route", .string(broken)), ("status", .int(500))]))
        let script = """
            cd '\(dir)' && seq 0 3 | parallel --will-cite --joblog revoke.joblog --resume-failed -S 4/: \\
              "sl-sessions revoke --shard {}/4 --journal shard-{}.journal --resume --max-attempts 2 --reason audit - < plan.csv > shard-{}.out"
            """
        var environment = h.environment
        environment["PATH"] = Tools.binDirectory + ":/usr/local/bin:/usr/bin:/bin"
        let first = try Tools.spawn("/bin/sh", ["-c", script], home: dir, environment: environment).waitOrKill(seconds: 180)
        #expect(first.status == 1, "one job failed: \(first.stderrText)")
        let journals = (0..<4).map { "\(dir)/shard-\($0).journal" }
        let before = try h.run("sl-sessions", ["journal", "verify", "--plan", dir + "/plan.csv"] + journals)
        #expect(before.status == 8)
        let problems = try before.jsonLines().filter { $0["problem"] != nil }
        #expect(problems.map { $0["id"]?.stringValue } == [ids[11]], "\(problems)")

        _ = try h.server.dev("DELETE", "/__dev/faults")
        let second = try Tools.spawn("/bin/sh", ["-c", script], home: dir, environment: environment).waitOrKill(seconds: 180)
        #expect(second.status == 0, "\(second.stderrText)")
        let joblog = try String(contentsOfFile: dir + "/revoke.joblog", encoding: .utf8).split(separator: "\n").dropFirst()
        #expect(joblog.count == 5, "four jobs, then the failed one again: \(joblog)")

        let audit = try h.run("sl-sessions", ["journal", "verify", "--plan", dir + "/plan.csv"] + journals)
        #expect(audit.status == 0, "\(audit.stdoutText) \(audit.stderrText)")
        let summary = try audit.jsonLines().last?["summary"]
        #expect(summary?["planned"]?.intValue == 400 && summary?["done"]?.intValue == 400 && summary?["exact"] == .bool(true))
        #expect(try remaining(h.server).isEmpty)
    }
}
