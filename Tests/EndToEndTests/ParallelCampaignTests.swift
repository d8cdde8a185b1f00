import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// S16, docs/fleet.md's GNU parallel recipe (deploy/parallel/revoke-campaign.sh) run as written, across two
/// hosts: a real sshd on loopback, with two accounts standing for two machines (each its own home, its own
/// signed-in admin, the tools on sshd's PATH), reached as `host1` (127.0.0.1) and `host2` (localhost) through an
/// ssh config given to parallel as PARALLEL_SSH. A shard that fails on host1 is rerun on host2 and resumes the
/// journal it left; a second campaign keeps its own records; the audit is exact for both.
@Suite(.serialized) struct ParallelCampaignTests {
    static let recipe = Tools.binDirectory.components(separatedBy: "/.build/").first! + "/deploy/parallel/revoke-campaign.sh"

    /// Two "hosts" behind one sshd: accounts starline-ssh1 and starline-ssh2.
    final class Hosts {
        let server: TemporaryDirectory  // sshd's own files (host key, config): the test process's
        let homes: TemporaryDirectory
        let port: Int
        let pid: pid_t
        static let accounts = ["starline-ssh1", "starline-ssh2"]

        init() throws {
            server = TemporaryDirectory("sshd")
            // sshd reads authorized_keys as the account logging in: it must be able to reach it.
            chmod(server.path, 0o755)
            homes = TemporaryDirectory("ssh-homes")
            chmod(homes.path, 0o755)
            for (n, account) in Self.accounts.enumerated() {
                let home = homes.file("host\(n + 1)")
                mkdir(home, 0o755)
                let exists = try Tools.run("/usr/bin/id", [account], home: server.path, runAs: .testProcess).status == 0
                let made = try Tools.run(
                    "/usr/sbin/" + (exists ? "usermod" : "useradd"),
                    (exists ? [] : ["-M", "-s", "/bin/sh"]) + ["-d", home, "-p", "*", account],
                    home: server.path, runAs: .testProcess)
                guard made.status == 0 else { throw StarlineError(.internalError, "cannot make \(account): \(made.stderrText)") }
                _ = try Tools.run("/bin/chown", ["\(account):", home], home: server.path, runAs: .testProcess)
            }
            _ = try Tools.run(
                "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", server.file("host_key")], home: server.path,
                runAs: .testProcess)
            mkdir("/run/sshd", 0o755)
            var started: (Int, pid_t)?
            for candidate in (0..<20).map({ _ in Int.random(in: 20_000...60_000) }) {
                let config = """
                    Port \(candidate)
                    ListenAddress 127.0.0.1
                    HostKey \(server.file("host_key"))
                    AuthorizedKeysFile \(server.file("authorized_keys"))
                    StrictModes no
                    UsePAM no
                    PasswordAuthentication no
                    KbdInteractiveAuthentication no
                    PidFile \(server.file("sshd.pid"))
                    SetEnv PATH=\(Tools.binDirectory):/usr/bin:/bin LANG=C.UTF-8

                    """
                try config.write(toFile: server.file("sshd_config"), atomically: true, encoding: .utf8)
                let run = try Tools.run(
                    "/usr/sbin/sshd", ["-f", server.file("sshd_config"), "-E", server.file("sshd.log")], home: server.path,
                    runAs: .testProcess)
                // The daemon writes its pid file once it listens; one that cannot bind says so in its log and exits.
                let (pidFile, logFile) = (server.file("sshd.pid"), server.file("sshd.log"))
                _ = eventually(seconds: 10) {
                    FileManager.default.fileExists(atPath: pidFile)
                        || ((try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "").contains("Cannot bind")
                }
                if run.status == 0, let text = try? String(contentsOfFile: server.file("sshd.pid"), encoding: .utf8),
                    let pid = pid_t(text.trimmingWhitespace())
                {
                    started = (candidate, pid)
                    break
                }
            }
            guard let started else { throw StarlineError(.internalError, "sshd did not start") }
            (port, pid) = started
        }

        deinit { kill(pid, SIGTERM) }

        /// The control machine's ssh setup, in `dir` (the admin's): a key the hosts accept, and host1/host2.
        func client(in dir: TemporaryDirectory) throws -> String {
            _ = try Tools.run(
                "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", dir.file("id")], home: dir.path, runAs: .testProcess)
            try FileManager.default.copyItem(atPath: dir.file("id.pub"), toPath: server.file("authorized_keys"))
            chmod(server.file("authorized_keys"), 0o644)
            let config = """
                Host host1
                  HostName 127.0.0.1
                  User \(Self.accounts[0])
                Host host2
                  HostName localhost
                  User \(Self.accounts[1])
                Host *
                  Port \(port)
                  IdentityFile \(dir.file("id"))
                  IdentitiesOnly yes
                  UserKnownHostsFile \(dir.file("known_hosts"))
                  StrictHostKeyChecking accept-new
                  BatchMode yes
                  LogLevel ERROR

                """
            try config.write(toFile: dir.file("ssh_config"), atomically: true, encoding: .utf8)
            return dir.file("ssh_config")
        }
    }

    @Test(
        """
        S16 the GNU parallel recipe: a failed shard rerun on another host resumes its journal; two campaigns keep \
        their own records
        """,
        .requiresRoot("starts sshd and makes two ssh accounts that stand for two hosts"))
    func testS16TheParallelRecipeRunsAcrossHostsAndReruns() throws {
        guard Tools.available("parallel"), Tools.available("rsync"), FileManager.default.fileExists(atPath: "/usr/sbin/sshd") else {
            Issue.record("GNU parallel, rsync or sshd is missing: scripts/bootstrap installs them")
            return
        }
        let hosts = try Hosts()
        let h = try SessionToolsHarness(server: try DevServerProcess())
        let admin = try h.server.login("alice")
        let control = TemporaryDirectory("control")
        let sshConfig = try hosts.client(in: control)
        // Each host signs its admin in once (the token through ssh's stdin, never a command line).
        for host in ["host1", "host2"] {
            let signIn = try Tools.run(
                "/usr/bin/ssh", ["-F", sshConfig, host, "STARLINE_API_BASE_URL=\(h.server.baseURL) sl-login --with-token"],
                stdin: Array(admin.token.utf8), home: control.path, runAs: .testProcess)
            #expect(signIn.status == 0, "\(host): \(signIn.stderrText)")
        }
        let ids =
            try h.server.createSessions(count: 200)
        try (ids.map { #"{"id":"\#($0)","user":"carol"}"# }.joined(separator: "\n") + "\n").write(
            toFile: control.file("plan.jsonl"), atomically: true, encoding: .utf8)
        // One session's route fails until the fault is cleared: its shard ends 8 on the first pass.
        _ = try h.server.dev(
            "POST", "/__dev/faults",
            .object([("route", .string("DELETE /api/admin/users/carol/sessions/\(ids[7])")), ("status", .int(500))]))

        func campaign(_ name: String, hosts: String) throws -> ToolRun {
            try Tools.run(
                "/bin/sh", [Self.recipe], home: control.path,
                environment: [
                    "C": name, "HOSTS": hosts, "N": "4", "PATH": "\(Tools.binDirectory):/usr/bin:/bin",
                    "PARALLEL_SSH": "ssh -F \(sshConfig)", "STARLINE_API_BASE_URL": h.server.baseURL
                ], workingDirectory: control.path)
        }
        let first = try campaign("idle-2026-12", hosts: "4/host1")
        #expect(first.status != 0, "one shard failed: \(first.stderrText)")
        let failedShard = try #require(
            (0..<4).first { k in
                ((try? String(contentsOfFile: control.file("idle-2026-12.shard-\(k).journal"), encoding: .utf8)) ?? "").contains(
                    #""status":"failed""#)
            })
        let before = try String(contentsOfFile: control.file("idle-2026-12.shard-\(failedShard).journal"), encoding: .utf8)
        _ = try h.server.dev("DELETE", "/__dev/faults")

        // The rerun goes to the other host: the shard's journal goes with it.
        let rerun = try campaign("idle-2026-12", hosts: "4/host2")
        #expect(rerun.status == 0, "\(rerun.stderrText)")
        let after = try String(contentsOfFile: control.file("idle-2026-12.shard-\(failedShard).journal"), encoding: .utf8)
        #expect(after.hasPrefix(before), "the first attempt's records are kept, the rerun's appended")
        #expect(after.components(separatedBy: "\"run\":").count - 1 == 2, "two runs in the failed shard's journal")
        let verify = try h.run("sl-sessions", ["journal", "verify"] + (0..<4).map { control.file("idle-2026-12.shard-\($0).journal") })
        #expect(verify.status == 0, "\(verify.stdoutText.suffix(600))")
        #expect(try verify.jsonLines().last?["summary"]?["done"]?.intValue == 200)
        #expect(try remainingSessions(h).isEmpty)

        // A second campaign over the same plan: its own joblog and journals (every session already revoked).
        let second = try campaign("recheck-2026-12", hosts: "2/host1,2/host2")
        #expect(second.status == 0, "\(second.stderrText)")
        for name in ["idle-2026-12", "recheck-2026-12"] {
            let files = (0..<4).map { control.file("\(name).shard-\($0).journal") }
            #expect(files.allSatisfy { FileManager.default.fileExists(atPath: $0) }, "\(name)'s journals")
            #expect(try h.run("sl-sessions", ["journal", "verify"] + files).status == 0, "\(name) is exact")
        }
        // Nothing is left on the hosts (--cleanup): no plan, no journal.
        for n in 1...2 {
            let left = (try? FileManager.default.contentsOfDirectory(atPath: hosts.homes.file("host\(n)"))) ?? []
            #expect(!left.contains { $0.hasSuffix(".journal") || $0 == "plan.jsonl" }, "host\(n): \(left)")
        }
    }

    func remainingSessions(_ h: SessionToolsHarness) throws -> [JSON] {
        let admin = try h.server.login("alice")
        return try h.server.request("GET", "/api/admin/users/carol/sessions", token: admin.token).json()["sessions"]?.arrayValue ?? []
    }
}
