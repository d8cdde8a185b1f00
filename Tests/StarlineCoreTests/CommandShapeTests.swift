import Testing
@testable import StarlineCore

/// A tool in the house shape, run in-process: typed options, dispatch from the tree, captured I/O.
private enum Shade: String, CaseIterable, Sendable { case light, dark }

private enum PaintCommand: Command {
    static let coats = Option<Int>.integer("coats", short: "c", "N", help: "Coats of paint.", default: 2, range: 1...5)
    static let shade = Option<Shade>.choice("shade", "SHADE", help: "The shade.", default: .light, env: "SAMPLE_SHADE")
    static let wait = Option<Duration>.duration("wait", help: "Drying time.", default: 60, range: 0...3600)
    static let note = Option<String?>.string("note", "TEXT", help: "A note.")
    static let spec = CommandSpec(
        "paint", abstract: "Paint things", options: [coats.spec, shade.spec, wait.spec, note.spec],
        arguments: [ArgumentSpec("WALL", help: "The wall.")])

    struct Options: Equatable {
        var wall: String
        var coats: Int
        var shade: Shade
        var wait: Duration
        var note: String?
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            wall: arguments.positionals[0], coats: try arguments[coats], shade: try arguments[shade], wait: try arguments[wait],
            note: try arguments[note])
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> StarlineCore.ExitStatus {
        context.output.emit(
            .object([
                ("wall", .string(options.wall)), ("coats", .int(options.coats)), ("shade", .string(options.shade.rawValue)),
                ("wait", .int(Int(options.wait.components.seconds))), ("note", .optional(options.note))
            ]))
        return .ok
    }
}

private enum EchoCommand: Command {
    static let spec = CommandSpec("echo", abstract: "Copy standard input to standard output")
    static func options(_ arguments: ParsedArguments) throws {}
    static func run(_ options: Void, _ context: CommandContext) throws -> StarlineCore.ExitStatus {
        context.output.writeBytes(try context.readStandardInput(maxBytes: 1 << 20))
        return .ok
    }
}

private enum FailCommand: Command {
    static let spec = CommandSpec("fail", abstract: "Fail with a storage error")
    static func options(_ arguments: ParsedArguments) throws {}
    static func run(_ options: Void, _ context: CommandContext) throws -> StarlineCore.ExitStatus {
        context.output.emit(.object([("partial", .bool(true))]))
        throw StarlineError(.storage, "disk on fire")
    }
}

private let sampleShapeTool = Tool<CommandRunner>(
    name: "sl-shape",
    commands: .group(
        CommandSpec("sl-shape", abstract: "a sample tool in the command shape"),
        [
            .command(PaintCommand.self),
            .group(CommandSpec("io", abstract: "I/O commands"), [.command(EchoCommand.self), .command(FailCommand.self)])
        ]),
    globalOptions: StandardOptions.output)

private func run(
    _ words: [String], stdin: [UInt8] = [], environment: Environment = [:],
    stdout: CapturingSink? = nil
) -> (status: StarlineCore.ExitStatus, stdout: String, stderr: String) {
    let captured = IOStreams.capturing(stdin: stdin, environment: environment)
    let io =
        stdout.map {
            IOStreams(
                stdin: captured.io.stdin, stdout: $0, stderr: captured.stderr, stdinIsTerminal: false,
                stdoutIsTerminal: false, stderrIsTerminal: false, environment: environment)
        } ?? captured.io
    let status = ToolMain.execute(sampleShapeTool, words, io: io)
    return (status, captured.stdout.text, captured.stderr.text)
}

@Suite struct CommandShapeTests {
    @Test func typedOptionsCarryTheirDefaultsAndConversions() throws {
        let r = run(["paint", "north"])
        #expect(r.status == .ok)
        #expect(r.stdout == #"{"wall":"north","coats":2,"shade":"light","wait":60,"note":null}"# + "\n")
        let given = run(["paint", "-c", "4", "--shade=dark", "--wait", "0", "--note", "two layers", "south"])
        #expect(given.stdout == #"{"wall":"south","coats":4,"shade":"dark","wait":0,"note":"two layers"}"# + "\n")
    }

    @Test func aValueOutsideTheDeclaredRangeIsAUsageErrorNamingTheOption() throws {
        let r = run(["paint", "--coats", "9", "east"])
        #expect(r.status == .usage)
        #expect(r.stdout.isEmpty)
        let error = try JSON.parse(Array(r.stderr.split(separator: "\n")[0].utf8))
        #expect(error["error"]?["code"]?.stringValue == "USAGE")
        #expect(error["error"]?["details"]?["option"]?.stringValue == "coats")
        #expect(r.stderr.contains("expected an integer in 1…5"))
    }

    @Test func anEnumFromTheEnvironmentIsCheckedLikeAFlag() throws {
        #expect(run(["paint", "west"], environment: ["SAMPLE_SHADE": "dark"]).stdout.contains(#""shade":"dark""#))
        let bad = run(["paint", "west"], environment: ["SAMPLE_SHADE": "purple"])
        #expect(bad.status == .usage)
        #expect(bad.stderr.contains("invalid value 'purple' for --shade (from environment)"))
    }

    @Test func helpShowsTheDeclaredRangeAndDefault() throws {
        let help = run(["paint", "--help"])
        #expect(help.status == .ok)
        #expect(help.stdout.contains("Coats of paint. (1–5) (default: 2)"))
        // A duration shows the shared note, and its range and default as durations (help text is wrapped).
        let words = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("--wait DURATION Drying time. \(DurationText.helpNote) (0–1h) (default: 1m)"), "\(words)")
        #expect(help.stdout.contains("[light, dark]"))
    }

    @Test func dispatchFollowsTheTreeAndStdinIsInjected() throws {
        let r = run(["io", "echo"], stdin: Array("hello\n".utf8))
        #expect(r.status == .ok && r.stdout == "hello\n" && r.stderr.isEmpty)
        let missing = run(["io"])
        #expect(missing.status == .usage && missing.stderr.contains("missing command: one of echo, fail"))
    }

    @Test func aCommandErrorIsReportedAfterItsOutputIsFlushed() throws {
        let r = run(["io", "fail"])
        #expect(r.status == .storage)
        #expect(r.stdout == #"{"partial":true}"# + "\n")
        #expect(r.stderr.hasPrefix(#"{"error":{"code":"STORAGE_ERROR","message":"disk on fire""#))
    }

    @Test func aFailedWriteToStdoutIsWriteFailedWithExit10() throws {
        let full = CapturingSink(failingWith: StarlineError(.writeFailed, "cannot write standard output: No space left on device"))
        let r = run(["paint", "north"], stdout: full)
        #expect(r.status == .storage)
        #expect(r.stderr.hasPrefix(#"{"error":{"code":"WRITE_FAILED""#))
        // Help goes through the same streams.
        let help = run(["--help"], stdout: full)
        #expect(help.status == .storage && help.stderr.contains("WRITE_FAILED"))
    }

    @Test func aClosedPipeEndsTheToolQuietly() throws {
        final class ClosedPipe: ByteSink {
            func write(_ bytes: UnsafeRawBufferPointer) throws { throw ByteSinkError.closed }
        }
        let captured = IOStreams.capturing()
        let io = IOStreams(
            stdin: .bytes([]), stdout: ClosedPipe(), stderr: captured.stderr, stdinIsTerminal: false,
            stdoutIsTerminal: false, stderrIsTerminal: false, environment: [:])
        #expect(ToolMain.execute(sampleShapeTool, ["paint", "north"], io: io) == .brokenPipe)
        #expect(ToolMain.execute(sampleShapeTool, ["io", "fail"], io: io) == .brokenPipe)
        #expect(captured.stderr.bytes.isEmpty)
    }

    @Test func theTreeKnowsEveryRunnerAndTheSpecItsSubcommands() throws {
        let tree = sampleShapeTool.commands
        #expect(tree.runner(at: ["paint"]) != nil && tree.runner(at: ["io", "echo"]) != nil)
        #expect(tree.runner(at: []) == nil && tree.runner(at: ["io"]) == nil)
        #expect(sampleShapeTool.spec.command(at: ["io"])?.subcommands.map(\.name) == ["echo", "fail"])
    }
}

/// Error objects never carry a key twice (`"details":{"command":…,"command":…}`).
@Suite struct UsageErrorShapeTests {
    func keysAreUnique(_ value: JSON) -> Bool {
        switch value {
        case .object(let members):
            Set(members.map(\.0)).count == members.count && members.allSatisfy { keysAreUnique($0.1) }
        case .array(let items): items.allSatisfy(keysAreUnique)
        default: true
        }
    }

    @Test(arguments: [
        ["pain"], ["io", "ech"], ["paint"], ["paint", "--coats"], ["paint", "--coats", "x", "w"], ["paint", "--colour", "w"],
        ["paint", "w", "extra"], ["io", "echo", "--coats", "2"]
    ])
    func everyUsageErrorHasUniqueKeys(_ words: [String]) throws {
        let r = run(words)
        #expect(r.status == .usage)
        let error = try JSON.parse(Array(r.stderr.split(separator: "\n")[0].utf8))
        #expect(keysAreUnique(error), "\(words): \(r.stderr)")
    }
}
