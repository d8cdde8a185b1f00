#if canImport(Glibc)
import Glibc
#endif

/// Runs a tool: parse, answer --help/--version/--generate, load the profile, run the command the tree names,
/// and turn its result or error into the documented exit status. Errors become one compact JSON line on
/// stderr; a failed write to stdout is an error too (`WRITE_FAILED`, exit 10); a closed pipe ends the tool
/// quietly.
///
/// `execute` runs a tool in-process on any `IOStreams` and returns its status (tests use it); `main` runs it
/// on this process's streams and exits.
public enum ToolMain {
    public static func main(_ tool: Tool<CommandRunner>) -> Never {
        CoreDumps.disable()
        Interrupts.install()
        exitProcess(execute(tool, Array(CommandLine.arguments.dropFirst()), io: .process()))
    }

    public static func execute(_ tool: Tool<CommandRunner>, _ words: [String], io: IOStreams) -> ExitStatus {
        switch prepare(tool, words, io: io) {
        case .exit(let status): return status
        case .run(let context, let runner): return finish(context, Result { try runner(context.arguments, context) })
        }
    }

    /// What a command line comes to: an exit status already (help, version, a usage error), or the command's
    /// context and runner. Shared by the synchronous `execute` and the async one of the networked tools.
    package enum Prepared<Runner> { case exit(ExitStatus), run(CommandContext, Runner) }

    package static func prepare<Runner>(_ tool: Tool<Runner>, _ words: [String], io: IOStreams) -> Prepared<Runner> {
        switch prepareContext(tool.spec, words, io: io) {
        case .exit(let status): return .exit(status)
        case .run(let context):
            guard let runner = tool.commands.runner(at: context.arguments.path) else {
                return .exit(
                    finish(
                        context, .failure(StarlineError(.internalError, "no runner for '\(context.arguments.path.joined(separator: " "))'"))
                    ))
            }
            return .run(context, runner)
        }
    }

    private enum PreparedContext { case exit(ExitStatus), run(CommandContext) }

    private static func prepareContext(_ tool: ToolSpec, _ words: [String], io: IOStreams) -> PreparedContext {
        var parsed: ParsedArguments
        do {
            parsed = try CommandLineParser(tool).parse(words)
        } catch {
            return .exit(report(error, tool: tool, path: partialPath(tool, words), io: io))
        }
        if let kind = parsed.given("generate") {
            let text =
                switch kind {
                case "man": ManPageRenderer.render(tool)
                default: CompletionRenderer.render(tool, shell: CompletionRenderer.Shell(rawValue: kind)!)
                }
            return .exit(writeDirectly(text, tool: tool, io: io))
        }
        if parsed.flag("help") { return .exit(writeDirectly(HelpRenderer.render(tool, path: parsed.path), tool: tool, io: io)) }
        if parsed.flag("version") {
            let lines = ["\(tool.name) \(tool.version)"] + (tool.versionDetails?() ?? [])
            return .exit(writeDirectly(lines.map { $0 + "\n" }.joined(), tool: tool, io: io))
        }
        let environment = io.environment
        parsed.environment = environment
        let paths = StarlinePaths(environment: environment)
        let declaresProfile = parsed.spec("profile") != nil
        let needsProfile =
            declaresProfile
            && (parsed.flag("profile") || (environment["STARLINE_PROFILE"].map { !$0.isEmpty } ?? false)
                || parsed.scope.contains { $0.configKey != nil })
        if needsProfile {
            do {
                parsed.profile = try ConfigProfile.load(path: paths.configFile, requested: parsed.value("profile"))
            } catch {
                return .exit(report(error, tool: tool, path: parsed.path, io: io))
            }
        }
        let output = Output(io: io, mode: outputMode(parsed), progress: parsed.declaredFlag("progress"))
        output.quiet = parsed.command.options.contains { $0.silencesSuccess } && parsed.declaredFlag("quiet")
        return .run(CommandContext(arguments: parsed, output: output, io: io, paths: paths))
    }

    /// `--jsonl` and `--compact` win over a terminal's default of pretty output.
    static func outputMode(_ parsed: ParsedArguments) -> Output.Mode? {
        parsed.declaredFlag("jsonl")
            ? .jsonLines : parsed.declaredFlag("compact") ? .compact : parsed.declaredFlag("pretty") ? .pretty : nil
    }

    /// The command's result, after flushing its output: a stdout failure turns success into `WRITE_FAILED`
    /// (or, for a closed pipe, a quiet `brokenPipe`); the command's own error is reported first if it had one.
    package static func finish(_ context: CommandContext, _ result: Result<ExitStatus, any Error>) -> ExitStatus {
        context.output.flush()
        // The user quits the pager before an error appears under it or the prompt returns.
        TerminalPager.finish()
        if let failure = context.output.failure, failure as? ByteSinkError == .closed { return .brokenPipe }
        switch result {
        case .success(let status):
            guard let failure = context.output.failure else { return status }
            return report(failure, tool: context.arguments.tool, path: context.arguments.path, io: context.io)
        case .failure(let error):
            return report(error, tool: context.arguments.tool, path: context.arguments.path, io: context.io)
        }
    }

    /// Help, version and generated files go straight to stdout; their write can fail like any other.
    static func writeDirectly(_ text: String, tool: ToolSpec, io: IOStreams) -> ExitStatus {
        do {
            try io.stdout.write(text)
            return .ok
        } catch ByteSinkError.closed {
            return .brokenPipe
        } catch {
            return report(error, tool: tool, path: [], io: io)
        }
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
    public static func report(_ error: any Error, tool: ToolSpec, path: [String], io: IOStreams) -> ExitStatus {
        let failure = (error as? StarlineError) ?? StarlineError(.internalError, "unexpected error: \(error)")
        var text = failure.json.serialized(.compact) + "\n"
        if failure.exitStatus == .usage, failure.code == .usage {
            text += "Usage: \(HelpRenderer.usageLine(tool, path: path))\n"
            text += "Try '\(([tool.name] + path).joined(separator: " ")) --help' for more information.\n"
        }
        try? io.stderr.write(text)
        return failure.exitStatus
    }

    /// Ends the process with `status`. A closed pipe ends it as SIGPIPE ends any Unix tool — by the
    /// signal, with no message — even when SIGPIPE was ignored by whoever started us.
    public static func exitProcess(_ status: ExitStatus) -> Never {
        if status == .brokenPipe {
            signal(SIGPIPE, SIG_DFL)
            raise(SIGPIPE)
        }
        exit(status.rawValue)
    }

}

extension ParsedArguments {
    /// A flag that not every tool declares (output modes): false when this tool has no such option.
    func declaredFlag(_ long: String) -> Bool { spec(long) != nil && flag(long) }
}
