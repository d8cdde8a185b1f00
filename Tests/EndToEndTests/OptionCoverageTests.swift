import Foundation
import Testing
import StarlineCore
import StarlineTestSupport
import ChatCommands
import DevServerCommands
import LoginCommands
import MemoryCommands
import QRCommands
import RestoreCommands
import SessionsCommands
import TasksCommands

/// Every declared option runs: the test walks every tool's command tree from its spec (the same spec that
/// renders the parser, --help, the man page and the completions) and runs the built executable once per
/// command, once more per option with a valid value, and once per command with every documented environment
/// variable set — against a real sl-devserver, a signed-in STARLINE_HOME and an initialised vault. Each run
/// must end by itself or on SIGTERM with a documented exit status: never a signal (a trap is SIGILL or
/// SIGTRAP), never INTERNAL (exit 1: a bug, e.g. an option read that its command does not declare). A new
/// option or argument whose placeholder the test cannot fill fails the test until it is taught a value, so
/// no option ships that no test ran (`sl-memory --vault` did, and always died of SIGILL).
@Suite(.serialized) struct OptionCoverageTests {
    static var tools: [ToolSpec] { ToolRegistry.specs }

    /// Exit statuses a run may end with: the documented table, and 128 + SIGTERM when the test stopped it.
    static let documented: Set<Int32> = Set(0...13).subtracting([1]).union([129, 130, 143])

    struct Run: Sendable {
        var tool: String
        var arguments: [String]
        var environment: [String: String]
        var label: String
    }

    /// Placeholders (an option's value name, an argument's name) and a valid value for each.
    static func value(for placeholder: String, _ fixture: Fixture) -> String? {
        switch placeholder {
        case "FILE", "PATH": fixture.inputFile
        case "FILE|-", "TEXT|-", "ID|-", "CALLBACK|-", "URL|CODE|-": "-"
        case "DIR": fixture.directory
        case "NAME": "default"
        case "N", "SEQ", "ID", "MODULES": "1"
        case "SECONDS": "5"
        case "PIXELS": "4"
        case "PORT": "0"
        case "TEXT", "WORD", "TITLE": "hello"
        case "TAG": "work"
        case "URL", "ID|URL": "https://example.com/page"
        case "CODE|URL": "abc"
        case "WHEN": "2030-01-01"
        case "DURATION": "1h"
        case "UID": "bob"
        case "K/N": "0/1"
        case "RATE": "2400/1m/4"
        case "PERIOD": "weekly"
        case "APP", "CLIENT_ID": "workbench"
        case "CONV": "alice-bob"
        case "PHONE": "+8613800000000"
        case "JOURNAL": fixture.journal
        case "WHERE": "state"
        case "USER": "alice"
        case "TOKEN": "dev-token"
        case "file|keyring": "file"
        case "KEY": "client-key-1"
        case "STATE": "pending"
        case "A,B,…": "id"
        default: nil
        }
    }

    /// Options whose placeholder is not enough to pick a valid value (keyed `tool --long`).
    static func override(_ tool: String, _ option: OptionSpec, _ fixture: Fixture) -> String? {
        switch (tool, option.long) {
        case (_, "api"): fixture.server.baseURL
        case (_, "chat"): fixture.server.chatBase
        case (_, "output"), (_, "o"): fixture.directory + "/out-\(UUID().uuidString)"
        case (_, "events"): fixture.directory + "/events.jsonl"
        case ("sl-devserver", "db"): fixture.directory + "/dev-\(UUID().uuidString).db"
        case ("sl-devserver", "seed"), ("sl-devserver", "log"): nil
        case ("sl-memory", "vault"): fixture.directory + "/other-vault"
        default: nil
        }
    }

    /// Documented environment variables (every tool's ENVIRONMENT section) and a valid value for each.
    static func environmentValue(_ name: String, _ fixture: Fixture) -> String? {
        switch name {
        case "STARLINE_HOME": fixture.home.path + "/starline"
        case "STARLINE_API_BASE_URL": fixture.server.baseURL
        case "STARLINE_CHAT_BASE_URL": fixture.server.chatBase
        case "STARLINE_APP_ID": "workbench"
        case "STARLINE_SERVICE": "default"
        case "STARLINE_PROFILE": ""
        case "STARLINE_TIMEOUT": "10"
        case "STARLINE_TOKEN": fixture.token
        case "STARLINE_KEYRING": "no"
        case "STARLINE_MACHINE_ID_FILE": fixture.home.file("machine-id")
        case "STARLINE_MEMORY_PASSPHRASE": fixture.passphrase
        case "STARLINE_MEMORY_VAULT": fixture.directory + "/env-vault"
        case "STARLINE_MEMORY_SHARE_CODE": "not-a-share-code"
        case "STARLINE_WORKSPACE": fixture.directory + "/workspace.json"
        case "STARLINE_DEV_TOKEN": "dev-token"
        case "STARLINE_CA_BUNDLE", "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt"
        case "NO_COLOR": "1"
        // Tables on a pipe are never paged; a pager that would block is never run here.
        case "STARLINE_PAGER", "PAGER": "cat"
        case "BROWSER": "/bin/true"
        case "JOB_COMPLETION_INDEX": "0"
        case "TZ": "UTC"
        case "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "HOME": fixture.directory + "/xdg"
        case "DBUS_SESSION_BUS_ADDRESS": "unix:path=" + fixture.directory + "/no-bus"
        case "DISPLAY", "WAYLAND_DISPLAY": ""
        default: nil
        }
    }

    final class Fixture: @unchecked Sendable {
        let server: DevServerProcess
        let harness: SessionToolsHarness
        let scratch = TemporaryDirectory("option-coverage")
        let passphrase = "correct horse battery staple"
        var token = ""
        var home: TemporaryDirectory { harness.home }
        var directory: String { scratch.path }
        var inputFile: String { scratch.file("input.txt") }
        var journal: String { scratch.file("journal.jsonl") }

        init() throws {
            server = try DevServerProcess()
            harness = try SessionToolsHarness(server: server)
            token = try harness.storeLogin("alice").token
            try "hello\n".write(toFile: inputFile, atomically: true, encoding: .utf8)
            try FileManager.default.createDirectory(atPath: scratch.file("xdg"), withIntermediateDirectories: true)
            let initRun = try harness.run("sl-memory", ["init"], environment: ["STARLINE_MEMORY_PASSPHRASE": passphrase])
            precondition(initRun.status == 0, "sl-memory init failed: \(initRun.stderrText)")
        }

        /// Every process still running with this fixture's home (unlock agents, a devserver that a run left).
        func stopLeftovers() {
            let marker = Array("STARLINE_HOME=\(home.path)/starline".utf8)
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
                guard let pid = Int32(entry), pid != getpid(),
                    let environ = FileManager.default.contents(atPath: "/proc/\(entry)/environ")
                else { continue }
                if Array(environ).split(separator: 0).contains(where: { Array($0) == marker }) { kill(pid, SIGTERM) }
            }
        }
    }

    /// The runs: per runnable command, one bare, one per option, one with every documented variable set.
    static func plan(_ fixture: Fixture) -> (runs: [Run], unknown: [String]) {
        var runs: [Run] = []
        var unknown: [String] = []
        let base = fixture.harness.environment.merging(["STARLINE_MEMORY_PASSPHRASE": fixture.passphrase]) { $1 }
        for tool in tools {
            var everyVariable = base
            for entry in tool.environment {
                for name in entry.name.split(separator: ",").map({ String($0).trimmingWhitespace() }) where !name.isEmpty {
                    let bare = name.split(separator: "=").first.map(String.init) ?? name
                    if let value = environmentValue(bare, fixture) {
                        everyVariable[bare] = value
                    } else {
                        unknown.append("\(tool.name): environment \(bare)")
                    }
                }
            }
            for (path, command) in tool.allCommands where command.subcommands.isEmpty || command.runsWithoutSubcommand {
                var positional: [String] = []
                for argument in command.arguments where !argument.optional {
                    if let v = value(for: argument.name, fixture) {
                        positional.append(v)
                    } else {
                        unknown.append("\(tool.name) \(path.joined(separator: " ")): argument \(argument.name)")
                    }
                }
                let words = path + positional
                let name = ([tool.name] + path).joined(separator: " ")
                runs.append(Run(tool: tool.name, arguments: words, environment: base, label: name))
                runs.append(
                    Run(tool: tool.name, arguments: words, environment: everyVariable, label: name + " (every documented variable)"))
                for option in command.options + tool.globalOptions where option.long != "generate" {
                    guard option.takesValue else {
                        runs.append(
                            Run(
                                tool: tool.name, arguments: words + ["--\(option.long)"], environment: base,
                                label: "\(name) --\(option.long)"))
                        continue
                    }
                    let chosen =
                        override(tool.name, option, fixture) ?? option.choices.first ?? option.defaultValue
                        ?? option.range.flatMap { $0.split(separator: "–").first.map(String.init) }
                        ?? value(for: option.valueName ?? "", fixture)
                    guard let chosen else { unknown.append("\(name): --\(option.long) \(option.valueName ?? "")"); continue }
                    runs.append(
                        Run(
                            tool: tool.name, arguments: words + ["--\(option.long)", chosen], environment: base,
                            label: "\(name) --\(option.long) \(chosen)"))
                    if let env = option.env {
                        runs.append(
                            Run(
                                tool: tool.name, arguments: words, environment: base.merging([env: chosen]) { $1 },
                                label: "\(name) with \(env)=\(chosen)"))
                    }
                }
            }
        }
        return (runs, unknown)
    }

    @Test("every option of every command of every tool runs to a documented exit status, never a signal")
    func everyDeclaredOptionRuns() throws {
        let fixture = try Fixture()
        defer { fixture.stopLeftovers() }
        let (runs, unknown) = Self.plan(fixture)
        #expect(unknown.isEmpty, "teach OptionCoverageTests a valid value for: \(unknown.joined(separator: "; "))")
        #expect(runs.count > 300)

        let failures = Locked<[String]>([])
        let next = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            while true {
                let index: Int = next.withLock { i in
                    defer { i += 1 }; return i
                }
                guard index < runs.count else { return }
                let run = runs[index]
                let problem: String?
                do {
                    problem = try Self.execute(run, fixture)
                } catch {
                    problem = "\(error)"
                }
                if let problem { failures.withLock { $0.append("\(run.label): \(problem)") } }
            }
        }
        let found = failures.withLock { $0 }
        #expect(found.isEmpty, "\(found.count) of \(runs.count) runs failed:\n\(found.joined(separator: "\n"))")
    }

    /// `--vault DIR` asked BLAKE2b for an 8-byte digest (the pin's name) where libsodium's minimum is 16: every
    /// run with it, or with STARLINE_MEMORY_VAULT, died of SIGILL before doing anything.
    @Test("sl-memory --vault DIR and STARLINE_MEMORY_VAULT use the vault in DIR, with a pin of its own")
    func memoryVaultOptionWorks() throws {
        let home = TemporaryDirectory("vault-option")
        let env = ["STARLINE_MEMORY_PASSPHRASE": "vault option passphrase"]
        let other = home.file("elsewhere")
        for arguments in [["init"], ["add", "--title", "in elsewhere", "body"]] {
            let run = try Tools.run("sl-memory", arguments + ["--vault", other], home: home.path, environment: env)
            #expect(run.killedBy == nil && run.status == 0, "\(arguments): \(run.status) \(run.stderrText.prefix(300))")
        }
        let listed = try Tools.run(
            "sl-memory", ["list"], home: home.path, environment: env.merging(["STARLINE_MEMORY_VAULT": other]) { $1 })
        #expect(listed.status == 0 && listed.stdoutText.contains("in elsewhere"), "\(listed.stderrText)")
        #expect(FileManager.default.fileExists(atPath: other + "/vault.db"))
        // The default vault was never created.
        let status = try Tools.run("sl-memory", ["status"], home: home.path, environment: env)
        let exists = try status.json()["exists"]
        #expect(status.status == 0 && exists == .bool(false), "\(status.stdoutText)")
    }

    /// Runs one command line; nil when it ended acceptably, else what was wrong.
    static func execute(_ run: Run, _ fixture: Fixture) throws -> String? {
        let process = try Tools.spawn(run.tool, run.arguments, stdin: [], home: fixture.home.path, environment: run.environment)
        var stopped = false
        var result = process.wait(seconds: 6)
        if result == nil {
            // A server, a follower or a sign-in that waits: it must stop on SIGTERM.
            stopped = true
            process.signal(SIGTERM)
            result = process.wait(seconds: 15)
        }
        guard let result else {
            _ = process.waitOrKill(seconds: 0)
            return "did not end within 15 s of SIGTERM"
        }
        if let signal = result.killedBy { return "killed by signal \(signal); stderr: \(result.stderrText.prefix(300))" }
        if !documented.contains(result.status) || (result.status >= 128 && !stopped) {
            return "exit \(result.status); stderr: \(result.stderrText.prefix(300))"
        }
        return nil
    }
}
