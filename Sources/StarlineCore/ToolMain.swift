#if canImport(Glibc)
import Glibc
#endif

/// One run of a tool: the parsed command line, where output goes, the environment and paths.
public struct Invocation: Sendable {
    public let arguments: ParsedArguments
    public let output: Output
    public let environment: Environment
    public let paths: StarlinePaths

    /// The chat base URL from `--chat`, `STARLINE_CHAT_BASE_URL`, the profile or the default, validated (W4).
    public func chatBase() throws -> BaseURL { try baseURL("chat") }

    /// The platform API base URL, validated (W4).
    public func apiBase() throws -> BaseURL { try baseURL("api") }

    private func baseURL(_ option: String) throws -> BaseURL {
        guard let (value, source) = arguments.resolved(option) else {
            throw StarlineError(.internalError, "--\(option) is not an option of this command")
        }
        let name: String = switch source {
        case .flag: "--\(option)"
        case .environment: arguments.spec(option)?.env ?? option
        case .profile: "profile key '\(arguments.spec(option)?.configKey ?? option)'"
        case .defaultValue: "default \(option) URL"
        }
        return try BaseURL(validating: value, name: name)
    }
}

/// Runs a tool: parse, answer --help/--version/--generate, load the profile, run the command, and turn
/// its result or error into the documented exit status. Errors become one compact JSON line on stderr.
public enum ToolMain {
    public static func run(_ tool: ToolSpec, arguments: [String] = CommandLine.arguments,
                           _ body: (Invocation) throws -> ExitStatus) -> Never {
        let status: ExitStatus
        switch prepare(tool, Array(arguments.dropFirst())) {
        case .exit(let s): status = s
        case .run(let invocation):
            do {
                status = try body(invocation)
                invocation.output.flush()
            } catch {
                invocation.output.flush()
                status = report(error, tool: tool, path: invocation.arguments.path)
            }
        }
        exit(status.rawValue)
    }

    package enum Prepared { case exit(ExitStatus), run(Invocation) }

    package static func prepare(_ tool: ToolSpec, _ words: [String]) -> Prepared {
        let environment = Environment.process
        var parsed: ParsedArguments
        do {
            parsed = try CommandLineParser(tool).parse(words)
        } catch {
            return .exit(report(error, tool: tool, path: partialPath(tool, words)))
        }
        if let kind = parsed.values["generate"]?.last {
            let text = switch kind {
            case "man": ManPageRenderer.render(tool)
            default: CompletionRenderer.render(tool, shell: CompletionRenderer.Shell(rawValue: kind)!)
            }
            Output.writeStdout(text)
            return .exit(.ok)
        }
        if parsed.flag("help") {
            Output.writeStdout(HelpRenderer.render(tool, path: parsed.path))
            return .exit(.ok)
        }
        if parsed.flag("version") {
            Output.writeStdout("\(tool.name) \(tool.version)\n")
            return .exit(.ok)
        }
        parsed.environment = environment
        let paths = StarlinePaths(environment: environment)
        let needsProfile = parsed.flag("profile") || (environment["STARLINE_PROFILE"].map { !$0.isEmpty } ?? false)
            || (parsed.spec("profile") != nil && hasConfigKeys(tool, parsed.path))
        if needsProfile {
            do {
                parsed.profile = try ConfigProfile.load(path: paths.configFile, requested: parsed.value("profile"))
            } catch {
                return .exit(report(error, tool: tool, path: parsed.path))
            }
        }
        return .run(Invocation(arguments: parsed, output: Output(parsed), environment: environment, paths: paths))
    }

    static func hasConfigKeys(_ tool: ToolSpec, _ path: [String]) -> Bool {
        (tool.globalOptions + tool.allCommands.filter { path.starts(with: $0.path) }.flatMap(\.command.options))
            .contains { $0.configKey != nil }
    }

    /// The subcommand path named by the leading words, for usage hints after a parse error.
    static func partialPath(_ tool: ToolSpec, _ words: [String]) -> [String] {
        var path: [String] = []
        var command = tool.root
        for w in words where !w.hasPrefix("-") {
            guard let sub = command.subcommand(named: w) else { break }
            path.append(w)
            command = sub
        }
        return path
    }

    /// Writes the error object (and for usage errors a usage hint) to stderr; returns the exit status.
    @discardableResult
    public static func report(_ error: Error, tool: ToolSpec, path: [String]) -> ExitStatus {
        let failure = (error as? StarlineError) ?? StarlineError(.internalError, "unexpected error: \(error)")
        var text = failure.json.serialized(.compact) + "\n"
        if failure.exitStatus == .usage, failure.code == .usage {
            text += "Usage: \(HelpRenderer.usageLine(tool, path: path))\n"
            text += "Try '\(([tool.name] + path).joined(separator: " ")) --help' for more information.\n"
        }
        Output.writeStderr(text)
        return failure.exitStatus
    }
}

extension Output {
    public static func writeStdout(_ text: String) {
        var t = text
        t.withUTF8 { _ = FileBytes.write(fd: STDOUT_FILENO, UnsafeRawBufferPointer($0)) }
    }
}
