import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// One journey per group of people the suite is for, end to end against a real sl-devserver, as an ordinary
/// user would take it: the tools run under the tests' unprivileged account (`ToolUser`) with nothing but what a
/// login session gives them (`env -i`: HOME, PATH, LANG, XDG_RUNTIME_DIR and the platform's address) — no
/// `STARLINE_HOME`, and no `STARLINE_MACHINE_ID_FILE`: the machine id is the system's own file, which root owns
/// (until it was a system file of its own kind, every networked tool of an ordinary user stopped there with
/// INSECURE_PERMISSIONS, exit 10).
@Suite struct OrdinaryUserJourneyTests {
    /// Someone with a home of their own on this machine.
    final class Person: @unchecked Sendable {
        let home = TemporaryDirectory("person")
        let server: DevServerProcess
        let stubs = TemporaryDirectory("person-bin")

        init(server: DevServerProcess) throws {
            self.server = server
            try FileManager.default.createDirectory(atPath: home.file("run"), withIntermediateDirectories: false)
            chmod(home.file("run"), 0o700)
            // mail: records its arguments and its message; the job of the login gate: records that it ran.
            try "#!/bin/sh\n{ echo \"mail $*\"; cat; } >> \"$HOME/mail.log\"\n".write(
                toFile: stubs.file("mail"), atomically: true, encoding: .utf8)
            chmod(stubs.file("mail"), 0o755)
            try FileManager.default.createDirectory(atPath: home.file("bin"), withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: home.file("logs"), withIntermediateDirectories: false)
            try "#!/bin/sh\necho ran >> \"$HOME/job.ran\"\n".write(
                toFile: home.file("bin/job-that-needs-the-login"), atomically: true, encoding: .utf8)
            chmod(home.file("bin/job-that-needs-the-login"), 0o755)
        }

        /// What a login session (or cron, with the platform's address in the crontab) gives every command.
        var environment: [String] {
            [
                "HOME=\(home.path)", "PATH=\(Tools.binDirectory):\(stubs.path):/usr/bin:/bin", "LANG=C.UTF-8",
                "XDG_RUNTIME_DIR=\(home.file("run"))", "STARLINE_API_BASE_URL=\(server.baseURL)",
                "STARLINE_CHAT_BASE_URL=\(server.chatBase)"
            ]
        }

        /// `tool arguments` under `env -i` with `environment`.
        func spawn(_ tool: String, _ arguments: [String], stdin: [UInt8]? = nil) throws -> RunningTool {
            try Tools.spawn("/usr/bin/env", ["-i"] + environment + [Tools.path(tool)] + arguments, stdin: stdin, home: home.path)
        }

        func run(_ tool: String, _ arguments: [String], stdin: [UInt8]? = nil) throws -> ToolRun {
            try spawn(tool, arguments, stdin: stdin).wait()
        }

        /// A shell line as cron runs it: `sh -c`, the environment above and nothing else, an empty stdin.
        func cron(_ line: String) throws -> ToolRun {
            try Tools.spawn("/usr/bin/env", ["-i"] + environment + ["SHELL=/bin/sh", "/bin/sh", "-c", line], stdin: [], home: home.path)
                .wait()
        }

        var mailLog: String { (try? String(contentsOfFile: home.file("mail.log"), encoding: .utf8)) ?? "" }
        var jobRuns: Int {
            ((try? String(contentsOfFile: home.file("job.ran"), encoding: .utf8)) ?? "").split(separator: "\n").count
        }

        /// Signs in as `user` with the device flow, as on a machine without a browser: sl-login prints the code,
        /// the user approves it elsewhere (here: the sign-in page, with curl), sl-login stores the session.
        func deviceLogin(_ user: String) throws -> ToolRun {
            let login = try spawn("sl-login", ["--device"], stdin: [])
            var code: String?
            _ = login.waitForStderr(seconds: 60) { text in
                // "To sign in, open URL and enter the code CJDH-HRJX"
                code = text.range(of: "[A-Z0-9]{4}-[A-Z0-9]{4}", options: .regularExpression).map { String(text[$0]) }
                return code != nil || login.poll() != nil
            }
            guard let code else { return login.waitOrKill(seconds: 0) }
            let approved = try server.request(
                "POST", "/oauth/device",
                body: .form([("user_code", code), ("username", user), ("password", "\(user)-pass"), ("action", "approve")]))
            guard approved.status == 200 else { return login.waitOrKill(seconds: 0) }
            return login.waitOrKill(seconds: 60)
        }
    }

    /// The README's cron lines of the login check and the gate (section sl-login), as written.
    static func loginCronLines() throws -> [String] {
        let lines = try ReadmeCronLinesTests.cronLines(try String(contentsOfFile: repositoryRoot + "/README.md", encoding: .utf8))
        return lines.filter { $0.command.contains("sl-restore") }.map(\.command)
    }

    @Test("S3 S4 the cron scripter: device sign-in, the sl-restore gate and the README's cron lines, as an ordinary user")
    func s3S4CronScripterJourney() throws {
        let server = try DevServerProcess(["--device-interval", "1"])
        let me = try Person(server: server)
        let login = try me.deviceLogin("alice")
        #expect(login.status == 0, "sl-login --device: \(login.stderrText)")
        let status = try me.run("sl-login", ["status"])
        #expect(status.status == 0, "\(status.stderrText)")
        if FileManager.default.fileExists(atPath: "/etc/machine-id") {
            #expect(status.stdoutText.contains("/etc/machine-id"), "the system's machine id is used: \(status.stdoutText)")
        }
        let restored = try me.run("sl-restore", ["--compact"])
        #expect(restored.status == 0 && (try? restored.json()["state"]?.stringValue) == "valid", "\(restored.stderrText)")

        let lines = try Self.loginCronLines()
        #expect(lines.count == 2, "the check and the gate: \(lines)")
        for line in lines {
            let run = try me.cron(line)
            #expect(run.status == 0, "\(line): \(run.stderrText)")
        }
        #expect(me.jobRuns == 1, "the gate ran its job")
        #expect(me.mailLog.isEmpty, "nothing to tell on a good day: \(me.mailLog)")

        // Something only the user can fix (here a session store others may write): the check says so with its
        // own code, and the gate does not run the job and mails why — never a silent skip.
        let store = try #require(status.stdoutText.range(of: "\"[^\"]*sessions\\.db\"", options: .regularExpression))
        let storePath = String(status.stdoutText[store].dropFirst().dropLast())
        #expect(chmod((storePath as NSString).deletingLastPathComponent, 0o777) == 0)
        defer { chmod((storePath as NSString).deletingLastPathComponent, 0o700) }
        let refused = try me.run("sl-restore", ["--compact"])
        #expect(refused.status != 0 && refused.status != 3 && refused.status != 4 && refused.status != 7, "\(refused.stderrText)")
        for line in lines { _ = try me.cron(line) }
        #expect(me.jobRuns == 1, "the gate did not run the job")
        #expect(me.mailLog.contains("job not run (exit \(refused.status))"), "\(me.mailLog)")
        #expect(me.mailLog.contains("login check failed (exit \(refused.status))"), "\(me.mailLog)")
    }

    @Test("W6 the friend-link user: create, encode, decode, and redeem as a second user, as ordinary users")
    func w6FriendLinkJourney() throws {
        let server = try DevServerProcess(["--device-interval", "1"])
        let alice = try Person(server: server)
        #expect(try alice.deviceLogin("alice").status == 0)
        let link = try alice.run("sl-chat", ["friend-link", "create", "--ttl", "1d"])
        #expect(link.status == 0, "\(link.stderrText)")
        let url = try #require(try link.json()["url"]?.stringValue)
        let png = alice.home.file("invite.png")
        let encoded = try alice.run("sl-qr", ["encode", "-o", png, url])
        #expect(encoded.status == 0, "\(encoded.stderrText)")
        let scanned = try alice.run("sl-qr", ["decode", "--raw", png])
        #expect(scanned.status == 0 && scanned.stdoutText == url + "\n", "\(scanned.stderrText)")

        let carol = try Person(server: server)
        #expect(try carol.deviceLogin("carol").status == 0)
        let redeemed = try carol.run("sl-chat", ["friend-link", "redeem", "-"], stdin: scanned.stdout)
        #expect(redeemed.status == 0, "\(redeemed.stderrText)")
        #expect(try redeemed.json()["friend"]?["id"]?.stringValue == "alice")
        let friends = try carol.run("sl-chat", ["friends"])
        #expect(try friends.jsonLines().contains { $0["id"]?.stringValue == "alice" }, "\(friends.stdoutText)")
    }

    @Test(
        """
        S16 the admin: list, bulk revoke from a pipe with a journal, interrupted, resumed and verified, as an \
        ordinary user
        """)
    func s16AdminJourney() throws {
        let server = try DevServerProcess(["--device-interval", "1"])
        let admin = try Person(server: server)
        #expect(try admin.deviceLogin("alice").status == 0)
        let ids =
            try server.createSessions(count: 300)
        #expect(ids.count == 300)
        let listed = try admin.run("sl-sessions", ["list", "--user", "carol"])
        #expect(listed.status == 0, "\(listed.stderrText)")
        #expect(Set(try listed.jsonLines().compactMap { $0["id"]?.stringValue }).isSuperset(of: ids))
        let plan = admin.home.file("plan.jsonl")
        try Data(listed.stdout).write(to: URL(fileURLWithPath: plan))

        // From a pipe, with a journal; stopped (SIGTERM) part-way, as a maintenance window ends.
        let journal = admin.home.file("offboard.journal")
        let pipeline = "sl-sessions list --user carol | sl-sessions revoke --rate 50 --journal '\(journal)' -"
        let running = try Tools.spawn("/usr/bin/env", ["-i"] + admin.environment + ["/bin/sh", "-c", pipeline], home: admin.home.path)
        #expect(running.waitForStdout(seconds: 60) { $0.split(separator: "\n").count >= 10 }, "the revoke is under way")
        let revokers = ReadmeCronLinesTests.toolProcesses(under: running.pid)
        for pid in revokers { kill(pid, SIGTERM) }
        let stopped = running.waitOrKill(seconds: 30)
        #expect(stopped.status != 0, "stopped part-way: \(stopped.stderrText)")

        let resumed = try Tools.spawn(
            "/usr/bin/env", ["-i"] + admin.environment + ["/bin/sh", "-c", pipeline + " --resume"],
            home: admin.home.path
        ).wait()
        #expect(resumed.status == 0, "\(resumed.stderrText)")
        let verified = try admin.run("sl-sessions", ["journal", "verify", "--plan", plan, journal])
        #expect(verified.status == 0, "\(verified.stdoutText) \(verified.stderrText)")
        #expect(try verified.jsonLines().last?["summary"]?["exact"] == .bool(true))
        let left = try server.request("GET", "/api/admin/users/carol/sessions", token: try server.login("alice").token)
        #expect(try left.json()["sessions"]?.arrayValue?.isEmpty == true)
    }

    @Test("W1 W2 W5 the vault with its agent, chat send and history, and tasks, as an ordinary user")
    func w1W2W5VaultChatAndTasksJourney() throws {
        let server = try DevServerProcess(["--device-interval", "1"])
        let me = try Person(server: server)
        let passphrase = me.home.file("memory.pass")
        try "a passphrase of my own\n".write(toFile: passphrase, atomically: true, encoding: .utf8)
        chmod(passphrase, 0o600)
        #expect(try me.run("sl-memory", ["--passphrase-file", passphrase, "init"]).status == 0)
        let unlocked = try me.run("sl-memory", ["--passphrase-file", passphrase, "unlock", "--ttl", "10m"])
        #expect(unlocked.status == 0, "\(unlocked.stderrText)")
        defer { _ = try? me.run("sl-memory", ["lock"]) }
        let added = try me.run("sl-memory", ["add", "--title", "Router", "the", "admin", "password"])
        #expect(added.status == 0, "the agent serves the key: \(added.stderrText)")
        #expect(try me.run("sl-memory", ["search", "admin"]).jsonLines().count == 1)

        #expect(try me.deviceLogin("alice").status == 0)
        let sent = try me.run("sl-chat", ["send", "c_team", "deploy done"])
        #expect(sent.status == 0, "\(sent.stderrText)")
        let history = try me.run("sl-chat", ["history", "c_team"])
        #expect(history.status == 0, "\(history.stderrText)")
        #expect(history.stdoutText.contains("deploy done"))

        let task = try me.run("sl-tasks", ["add", "Pay", "the", "rent", "--due", "2030-01-01T09:00:00Z"])
        #expect(task.status == 0, "\(task.stderrText)")
        let id = try #require(try task.json()["id"]?.stringValue)
        #expect(try me.run("sl-tasks", ["done", id]).status == 0)
        #expect(try me.run("sl-tasks", ["list", "--all"]).jsonLines().first?["done"] == .bool(true))
    }
}
