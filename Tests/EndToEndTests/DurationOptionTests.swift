import Foundation
import Testing
import StarlineCore
import StarlineTestSupport
import ChatCommands
import DevServerCommands
import LoginCommands
import MemoryCommands
import PlatformCommands
import QRCommands
import RestoreCommands
import SessionsCommands
import TasksCommands

/// One duration syntax for every option that takes a duration (`DurationText`): the test walks every tool's
/// spec, finds each DURATION option of each command, and converts the command's typed options in-process
/// (`CommandTree.checkOptions`: the conversion a run does first, without running) with the value from the
/// flag, the environment or the profile.
@Suite struct DurationOptionTests {
    typealias AnyTool = ToolRegistry.AnyTool
    typealias Outcome = ToolRegistry.Outcome

    static var tools: [AnyTool] { ToolRegistry.all }

    struct DurationOption: Sendable, CustomStringConvertible {
        var tool: AnyTool
        var path: [String]
        var option: OptionSpec
        var range: ClosedRange<Int64>
        var description: String { ([tool.spec.name] + path + ["--" + option.long]).joined(separator: " ") }
    }

    /// Every DURATION option of every runnable command, with its range read back from the spec.
    static func durationOptions() -> [DurationOption] {
        var found: [DurationOption] = []
        for tool in tools {
            for (path, command) in tool.spec.allCommands where command.subcommands.isEmpty || command.runsWithoutSubcommand {
                for option in command.options + tool.spec.globalOptions where option.valueName == DurationText.placeholder {
                    let bounds = (option.range ?? "").split(separator: "–").compactMap { DurationText.parts($0)?.totalSeconds }
                    let range: ClosedRange<Int64> = bounds.count == 2 && bounds[0] <= bounds[1] ? bounds[0]...bounds[1] : -1...(-1)
                    found.append(DurationOption(tool: tool, path: path, option: option, range: range))
                }
            }
        }
        return found
    }

    static let home = TemporaryDirectory("duration-options")

    /// What a command needs besides its arguments to get through its options at all.
    static let requiredWords: [String: [String]] = [
        "sl-chat read": ["--up-to", "m1"], "sl-sessions journal verify": ["--plan", "-"], "sl-sessions revoke": ["--others"]
    ]

    /// The command's words with a valid value for each required argument.
    static func words(_ d: DurationOption) -> [String] {
        var words = d.path
        for argument in d.tool.spec.command(at: d.path)?.arguments ?? [] where !argument.optional {
            words.append(argument.name.hasSuffix("|-") || argument.name == "FILE" ? "-" : "x")
        }
        return words + (requiredWords[([d.tool.spec.name] + d.path).joined(separator: " ")] ?? [])
    }

    func check(_ d: DurationOption, _ value: String?, environment: [String: String] = [:]) -> Outcome {
        var words = Self.words(d)
        if let value { words += ["--" + d.option.long, value] }
        let env = Environment(["STARLINE_HOME": Self.home.path + "/starline", "HOME": Self.home.path].merging(environment) { $1 })
        return d.tool.check(words, IOStreams.capturing(environment: env).io)
    }

    /// What is wrong with the rejection of `value` (nil: a usage error, exit 2, one JSON error naming the option
    /// and the value); from the environment when `environment` is given, else from the flag.
    func usageErrorProblem(_ d: DurationOption, _ value: String, environment: [String: String] = [:]) -> String? {
        var words = Self.words(d)
        if environment.isEmpty { words += ["--" + d.option.long, value] }
        let env = Environment(["STARLINE_HOME": Self.home.path + "/starline", "HOME": Self.home.path].merging(environment) { $1 })
        let captured = IOStreams.capturing(environment: env)
        let outcome = d.tool.check(words, captured.io)
        let firstLine = captured.stderr.bytes.split(separator: 0x0A).first.map(Array.init) ?? []
        let error = (try? JSON.parse(firstLine))?["error"]
        guard outcome == .rejected(.usage, ""), error?["code"]?.stringValue == "USAGE",
            error?["details"]?["option"]?.stringValue == d.option.long,
            error?["details"]?["value"]?.stringValue == value
        else {
            return "\(d) '\(value)'\(environment.isEmpty ? "" : " from the environment"): \(outcome) \(captured.stderr.text.prefix(200))"
        }
        return nil
    }

    @Test(
        """
        every duration option of every tool takes 90, 30s, 5m, 2h, 3d and 1w within its range and refuses 5x, -1 and \
        99999999999999w (exit 2, naming the option)
        """)
    func everyDurationOptionTakesOneSyntax() throws {
        let options = Self.durationOptions()
        // The options the syntax is for are all among them (the walk is not vacuous), each declared through the kit.
        let names = Set(options.map(\.description))
        for expected in [
            "sl-tasks list --due-within", "sl-sessions list --idle-for", "sl-chat friend-link create --ttl", "sl-memory unlock --ttl",
            "sl-memory unlock --idle", "sl-login --pending-ttl", "sl-login start --pending-ttl", "sl-restore --max-age",
            "sl-chat history --max-age", "sl-restore --timeout", "sl-login --timeout", "sl-sessions list --timeout",
            "sl-chat send --timeout", "sl-sessions revoke --outage-timeout", "sl-devserver --session-ttl",
            "sl-devserver --connection-timeout"
        ] {
            #expect(names.contains(expected), "\(expected) is not a DURATION option; have: \(names.sorted())")
        }
        var problems: [String] = []
        for d in options {
            if d.range.lowerBound < 0 { problems.append("\(d): range \(d.option.range ?? "none") is not shown as durations") }
            if !d.option.help.hasSuffix(DurationText.helpNote) { problems.append("\(d): help does not end with the shared note") }
            for (value, seconds) in [("90", Int64(90)), ("30s", 30), ("5m", 300), ("2h", 7_200), ("3d", 259_200), ("1w", 604_800)] {
                if d.range.contains(seconds) {
                    let outcome = check(d, value)
                    if outcome != .accepted { problems.append("\(d) '\(value)': \(outcome)") }
                } else if let problem = usageErrorProblem(d, value) {
                    problems.append(problem)
                }
            }
            for value in ["5x", "-1", "99999999999999w", "", "1d12", "m", "9223372036854775807", "1.5h"] {
                if let problem = usageErrorProblem(d, value) { problems.append(problem) }
            }
        }
        #expect(problems.isEmpty, "\(problems.count) problems:\n\(problems.joined(separator: "\n"))")
    }

    @Test(
        """
        --timeout takes the duration syntax from STARLINE_TIMEOUT and the profile too; a JSON number in config.json \
        is seconds
        """)
    func timeoutFromEnvironmentAndProfile() throws {
        let timeouts = Self.durationOptions().filter { $0.option.long == "timeout" }
        #expect(timeouts.count >= 4)
        for d in timeouts {
            #expect(check(d, nil, environment: ["STARLINE_TIMEOUT": "2m"]) == .accepted, "\(d)")
            #expect(check(d, nil, environment: ["STARLINE_TIMEOUT": "90"]) == .accepted, "\(d)")
            for bad in ["5x", "99999999999999w"] {
                let problem = usageErrorProblem(d, bad, environment: ["STARLINE_TIMEOUT": bad])
                #expect(problem == nil, "\(problem ?? "")")
            }
        }
        // The value itself, through the declaration: 2m is 120 seconds from the environment and from a profile,
        // and a JSON number in the profile is seconds (3600 fits the 1s–1h range, 3601 does not).
        func timeout(_ environment: [String: String], profile: String?) throws -> Result<Int, StarlineError> {
            let home = TemporaryDirectory("duration-profile")
            if let profile {
                try FileManager.default.createDirectory(
                    atPath: home.file("starline/config"), withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
                _ = FileManager.default.createFile(
                    atPath: home.file("starline/config/config.json"), contents: Data(profile.utf8),
                    attributes: [.posixPermissions: 0o600])
            }
            let env = Environment(["STARLINE_HOME": home.file("starline"), "HOME": home.path].merging(environment) { $1 })
            guard case .run(let context, _) = ToolMain.prepare(RestoreTool.tool, [], io: IOStreams.capturing(environment: env).io) else {
                throw StarlineError(.internalError, "sl-restore did not get to run")
            }
            do { return .success(try PlatformOptions(context.arguments).timeout) } catch let error as StarlineError {
                return .failure(error)
            }
        }
        func profile(_ value: String) -> String { #"{"profiles":{"default":{"timeout":\#(value)}}}"# }
        #expect(try timeout(["STARLINE_TIMEOUT": "2m"], profile: nil).get() == 120)
        #expect(try timeout([:], profile: profile(#""2m""#)).get() == 120)
        #expect(try timeout([:], profile: profile("90")).get() == 90)
        #expect(try timeout([:], profile: profile("3600")).get() == 3600)
        let tooLong = try timeout([:], profile: profile("3601"))
        guard case .failure(let error) = tooLong else { Issue.record("a 3601-second profile timeout was taken: \(tooLong)"); return }
        #expect(error.code == .usage && error.message.contains("--timeout") && error.message.contains("profile"), "\(error.message)")
        let malformed = try timeout([:], profile: profile(#""5x""#))
        guard case .failure(let bad) = malformed else { Issue.record("a profile timeout of 5x was taken"); return }
        #expect(bad.code == .usage, "\(bad.message)")
        // The flag overrides the environment, which overrides the profile.
        #expect(try timeout(["STARLINE_TIMEOUT": "1m"], profile: profile("90")).get() == 60)
    }

    @Test(
        """
        end to end: the built tools take the one syntax (sl-tasks --due-within 90, sl-memory unlock --ttl 1w --idle \
        90) and refuse a huge value with exit 2, never a trap
        """)
    func builtToolsTakeTheSyntax() throws {
        let home = TemporaryDirectory("duration-e2e")
        let tasks = try Tools.run("sl-tasks", ["list", "--due-within", "90"], home: home.path)
        #expect(tasks.status == 0, "\(tasks.stderrText)")
        let hugeTasks = try Tools.run("sl-tasks", ["list", "--due-within", "99999999999999w"], home: home.path)
        #expect(hugeTasks.killedBy == nil && hugeTasks.status == 2 && hugeTasks.errorCode == "USAGE", "\(hugeTasks.stderrText)")
        let restore = try Tools.run("sl-restore", ["--timeout", "99999999999999w"], home: home.path)
        #expect(restore.killedBy == nil && restore.status == 2, "\(restore.stderrText)")
        #expect(try restore.error()["error"]?["details"]?["option"]?.stringValue == "timeout")
        // STARLINE_TIMEOUT=2m is a valid timeout: sl-restore gets past its options to "not logged in" (3).
        let envTimeout = try Tools.run("sl-restore", [], home: home.path, environment: ["STARLINE_TIMEOUT": "2m"])
        #expect(envTimeout.status == 3, "\(envTimeout.stderrText)")

        let memory = ["STARLINE_MEMORY_PASSPHRASE": "duration syntax passphrase"]
        let initRun = try Tools.run("sl-memory", ["init"], home: home.path, environment: memory)
        #expect(initRun.status == 0, "\(initRun.stderrText)")
        let unlock = try Tools.run("sl-memory", ["unlock", "--ttl", "1w", "--idle", "90"], home: home.path, environment: memory)
        defer { _ = try? Tools.run("sl-memory", ["lock"], home: home.path, environment: memory) }
        #expect(unlock.status == 0, "\(unlock.stderrText)")
        let record = try unlock.json()
        #expect(record["idleSeconds"]?.intValue == 90)
        let expires = record["expiresAt"]?.stringValue.flatMap { Timestamp(rfc3339: $0) }
        let week = (expires?.seconds ?? 0) - Timestamp.now().seconds
        #expect(week > 7 * 86_400 - 600 && week <= 7 * 86_400, "expiresAt \(record["expiresAt"] ?? .null) is not a week away")
    }
}
