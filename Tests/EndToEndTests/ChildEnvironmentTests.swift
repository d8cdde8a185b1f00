import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// No secret in a child's environment or argv, no secret in a core file (README, Security notes). Every process a
/// tool starts — sl-memory's unlock agent, the browser of a sign-in, sl-qr's isolated scan helper — is read in
/// /proc while it runs: its environ and cmdline hold none of the secrets the tool was given. And every tool
/// runs with core dumps off (its /proc/PID/limits), sl-memory also undumpable.
@Suite struct ChildEnvironmentTests {
    static let secrets = [
        "STARLINE_TOKEN": "token-secret-7f3a", "STARLINE_MEMORY_PASSPHRASE": "passphrase-secret-91c2",
        "STARLINE_MEMORY_SHARE_CODE": "share-code-secret-44d0", "STARLINE_DEV_TOKEN": "dev-token-secret-c0de"
    ]

    /// What in /proc/PID/{environ,cmdline} gives a secret away: a secret variable's name or any secret value.
    static func leaks(pid: Int32) -> [String] {
        var found: [String] = []
        for file in ["environ", "cmdline"] {
            guard let bytes = FileManager.default.contents(atPath: "/proc/\(pid)/\(file)") else {
                found.append("cannot read /proc/\(pid)/\(file)")
                continue
            }
            let text = String(decoding: bytes, as: UTF8.self)
            for (name, value) in secrets {
                if text.contains(value) { found.append("\(file) holds the value of \(name)") }
                if file == "environ", text.contains(name + "=") { found.append("environ holds \(name)") }
            }
        }
        return found
    }

    static func children(of pid: Int32) -> [Int32] {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        return text.split(separator: " ").compactMap { Int32($0) }
    }

    static func cmdline(_ pid: Int32) -> String {
        String(decoding: FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data(), as: UTF8.self)
    }

    @Test(
        "the unlock agent's environment holds no STARLINE_MEMORY_*, token or share code for its whole TTL",
        .requiresRoot("reads /proc/PID/environ of the agent, which makes itself undumpable: only root may"))
    func unlockAgentEnvironmentIsScrubbed() throws {
        let home = TemporaryDirectory("child-env-agent")
        let initRun = try Tools.run("sl-memory", ["init"], home: home.path, environment: Self.secrets)
        #expect(initRun.status == 0, "\(initRun.stderrText)")
        let unlock = try Tools.run("sl-memory", ["unlock", "--ttl", "10m"], home: home.path, environment: Self.secrets)
        #expect(unlock.status == 0, "\(unlock.stderrText)")
        let pid = try #require(try unlock.json()["agentPid"]?.intValue.map { Int32($0) })
        defer { _ = try? Tools.run("sl-memory", ["lock"], home: home.path) }
        #expect(Self.cmdline(pid).contains("--internal-memory-agent"), "pid \(pid) is the agent")
        #expect(Self.leaks(pid: pid) == [])
        // What the agent still needs of our settings reaches it.
        let environ = String(decoding: FileManager.default.contents(atPath: "/proc/\(pid)/environ") ?? Data(), as: UTF8.self)
        #expect(environ.contains("STARLINE_HOME=\(home.path)/starline"))
    }

    @Test("the browser of a sign-in gets no STARLINE_* variable at all")
    func browserEnvironmentIsScrubbed() throws {
        let server = try DevServerProcess()
        let harness = try SessionToolsHarness(server: server)
        let capture = harness.home.file("browser")
        // The "browser" copies what /proc says about itself, then waits to be read.
        let script = harness.home.file("browser.sh")
        try "cp /proc/$$/environ '\(capture).environ'; cp /proc/$$/cmdline '\(capture).cmdline'; echo $$ > '\(capture).pid'\n"
            .write(toFile: script, atomically: true, encoding: .utf8)
        let login = try harness.spawn(
            "sl-login", ["--browser", "--pending-ttl", "30"],
            environment: Self.secrets.merging(["BROWSER": "sh \(script) %s"]) { $1 })
        defer { login.signal(SIGTERM); _ = login.waitOrKill(seconds: 10) }
        let deadline = Date().addingTimeInterval(20)
        while access(capture + ".pid", F_OK) != 0, Date() < deadline { usleep(50_000) }
        usleep(100_000)
        let environ = String(decoding: FileManager.default.contents(atPath: capture + ".environ") ?? Data(), as: UTF8.self)
        let cmdline = String(decoding: FileManager.default.contents(atPath: capture + ".cmdline") ?? Data(), as: UTF8.self)
        #expect(environ.contains("PATH="), "the browser ran and its environment was captured: \(login.stderrSoFar)")
        #expect(!environ.contains("STARLINE_"), "\(environ.split(separator: "\0").filter { $0.hasPrefix("STARLINE_") })")
        for value in Self.secrets.values { #expect(!cmdline.contains(value) && !environ.contains(value)) }
    }

    @Test("sl-qr's isolated scan helper gets no secret")
    func scanHelperEnvironmentIsScrubbed() throws {
        let home = TemporaryDirectory("child-env-scan")
        let path = try DecodeDeadlineTests.tiledFinders(tiles: 250, in: home)  // a zbar pass of ~15 s: time to look
        let decode = try Tools.spawn("sl-qr", ["decode", "--image-timeout", "60000", path], home: home.path, environment: Self.secrets)
        defer { decode.signal(SIGKILL); _ = decode.wait() }
        var helper: Int32?
        let deadline = Date().addingTimeInterval(10)
        while helper == nil, Date() < deadline {
            helper = Self.children(of: decode.pid).first { Self.cmdline($0).contains("--internal-scan-helper") }
            if helper == nil { usleep(20_000) }
        }
        let pid = try #require(helper, "no scan helper seen")
        #expect(Self.leaks(pid: pid) == [])
    }

    @Test("every tool runs with core dumps off; sl-memory is also undumpable, and the others are not")
    func everyToolDisablesCoreDumps() throws {
        let home = TemporaryDirectory("child-env-core")
        let server = try DevServerProcess()
        // sl-restore reads no stdin: its GET /api/me is held by the server until the test is done.
        let held = try server.dev("POST", "/__dev/faults", .object([("route", .string("GET /api/me")), ("hold", .bool(true))]))
        try #require(held.status == 200 || held.status == 201, "\(held.text)")
        // A command of each tool that waits (on its stdin, a pipe the test holds open), so /proc can be read.
        let blocked: [(String, [String])] = [
            ("sl-qr", ["encode", "-"]), ("sl-tasks", ["import", "-"]), ("sl-memory", ["add", "title", "-"]),
            ("sl-sessions", ["revoke", "--dry-run", "-"]), ("sl-chat", ["send", "alice-bob", "-"]),
            ("sl-login", ["complete", "-"]), ("sl-devserver", ["--port", "0"]), ("sl-restore", ["--compact"])
        ]
        #expect(Set(blocked.map(\.0)) == Set(Tools.toolNames), "every tool is checked")
        _ = try Tools.run("sl-memory", ["init"], home: home.path, environment: ["STARLINE_MEMORY_PASSPHRASE": "pass phrase 1"])
        for (tool, arguments) in blocked {
            let run = try StdinHeldTool(
                tool, arguments, home: home.path,
                environment: [
                    "STARLINE_MEMORY_PASSPHRASE": "pass phrase 1", "STARLINE_TOKEN": "t",
                    "STARLINE_API_BASE_URL": server.baseURL, "STARLINE_CHAT_BASE_URL": server.chatBase
                ])
            defer { run.finish() }
            func coreLimit() -> String {
                let limits = (try? String(contentsOfFile: "/proc/\(run.pid)/limits", encoding: .utf8)) ?? ""
                return limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }.map(String.init)
                    ?? "(not running: \(run.pid))"
            }
            func undumpable() -> Bool {
                var st = stat()
                return stat("/proc/\(run.pid)/environ", &st) == 0 && st.st_uid == 0
            }
            func runsTheTool() -> Bool {
                // Not setpriv any more (ToolUser), which runs as root until it starts the tool (its name is readable
                // whoever owns the process's other files).
                let name = (try? String(contentsOfFile: "/proc/\(run.pid)/comm", encoding: .utf8)) ?? ""
                return name.trimmingCharacters(in: .whitespacesAndNewlines) == tool
            }
            // Until the tool runs and has hardened itself at start (or 10 s: then the checks below say what is missing).
            _ = eventually(seconds: 10) {
                runsTheTool() && coreLimit().split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"]
                    && (tool != "sl-memory" || undumpable())
            }
            let core = coreLimit()
            #expect(core.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"], "\(tool): \(core)")
            // An undumpable process's /proc files belong to root whoever runs it; a dumpable one's to its user.
            // That tells them apart only when the tool does not run as root itself (ToolUser).
            let status = (try? String(contentsOfFile: "/proc/\(run.pid)/status", encoding: .utf8)) ?? ""
            let uid = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }?.split(whereSeparator: \.isWhitespace).dropFirst().first
                .flatMap { UInt32($0) }
            try #require(
                uid != nil && uid != 0, "\(tool) runs as root here (uid \(String(describing: uid))): dumpable or not looks the same")
            var st = stat()
            #expect(stat("/proc/\(run.pid)/environ", &st) == 0, "\(tool) is not running")
            if tool == "sl-memory" {
                #expect(st.st_uid == 0, "sl-memory is undumpable: \(status.prefix(80))")
            } else {
                #expect(st.st_uid == uid, "\(tool) stays dumpable (only sl-memory holds a vault key for long)")
            }
        }
    }
}

/// A tool whose stdin is a FIFO the test keeps open for writing (opened O_RDWR first, so the tool's open does
/// not wait for a writer): it blocks reading it until `finish`.
final class StdinHeldTool {
    let running: RunningTool
    let writer: Int32
    var pid: Int32 { running.pid }

    init(_ tool: String, _ arguments: [String], home: String, environment: [String: String]) throws {
        let fifo = home + "/stdin-\(tool)-\(UInt32.random(in: 0...UInt32.max))"
        guard mkfifo(fifo, 0o600) == 0 else { throw StarlineError(.internalError, "mkfifo \(fifo) failed") }
        writer = open(fifo, O_RDWR | O_CLOEXEC)
        running = try Tools.spawn(tool, arguments, stdinPath: fifo, home: home, environment: environment)
    }

    func finish() {
        close(writer)
        running.signal(SIGTERM)
        _ = running.waitOrKill(seconds: 15)
    }
}
