/// One command of a tool, in the house shape (docs/architecture.md, "The shape of a command"): its spec,
/// a typed `Options` value made from the parsed arguments in exactly one place, and a `run` that gets those
/// options and the context.
///
///     enum DecodeCommand: Command {
///         static let jobs = Option<Int?>.integer("jobs", short: "j", "N", help: "…", range: 1...256)
///         static let spec = CommandSpec("decode", abstract: "…", options: [jobs.spec], arguments: […])
///         struct Options { var files: [String]; var jobs: Int? }
///         static func options(_ arguments: ParsedArguments) throws -> Options {
///             Options(files: arguments.positionals, jobs: try arguments[jobs])
///         }
///         static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus { … }
///     }
///
/// Commands that await (the networked tools) conform to `AsyncCommand` in PlatformCommands instead:
/// nothing async lives in StarlineCore (its object files are linked into every tool).
public protocol Command: SendableMetatype {
    associatedtype Options
    static var spec: CommandSpec { get }
    static func options(_ arguments: ParsedArguments) throws -> Options
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus
}

/// How a synchronous tool runs the command a command line names.
public typealias CommandRunner = @Sendable (ParsedArguments, CommandContext) throws -> ExitStatus

/// A command and its subcommands, each with the runner that executes it. The tool's dispatch is a lookup
/// of the parsed command path in this tree — there is no hand-written switch over paths. `Runner` is the
/// kind of function the tool runs (`CommandRunner`, or an async one), so the tree itself has nothing async.
public struct CommandTree<Runner: Sendable>: Sendable {
    /// The spec of this command with the specs of all its subcommands.
    public let spec: CommandSpec
    private let runner: Runner?
    private let optionsCheck: (@Sendable (ParsedArguments) throws -> Void)?
    private let subcommands: [CommandTree]

    /// A command with an optional runner of its own and its subcommands. A command without a runner must
    /// have subcommands; one with both runs when no subcommand is named (`sl-login` signs in). `options`
    /// converts the parsed arguments into the command's typed options, as its runner does first.
    public init(
        _ spec: CommandSpec, runner: Runner?, options: (@Sendable (ParsedArguments) throws -> Void)? = nil,
        subcommands: [CommandTree] = []
    ) {
        precondition(runner != nil || !subcommands.isEmpty, "command '\(spec.name)' has neither a runner nor subcommands")
        var spec = spec
        spec.subcommands = subcommands.map { $0.spec }
        spec.runsWithoutSubcommand = runner != nil && !subcommands.isEmpty
        self.spec = spec
        self.runner = runner
        self.optionsCheck = options
        self.subcommands = subcommands
    }

    /// Converts `arguments` into the typed options of the command at `path` without running it — every
    /// value checked as a run checks it — so a test can try every option of every tool with no side effect.
    /// False when that command has no conversion to try.
    public func checkOptions(at path: [String], _ arguments: ParsedArguments) throws -> Bool {
        var node = self
        for name in path {
            guard let next = node.subcommands.first(where: { $0.spec.name == name }) else { return false }
            node = next
        }
        guard let check = node.optionsCheck else { return false }
        try check(arguments)
        return true
    }

    /// The runner of the command at `path` (names below this one). A walk down the tree, not a table: every
    /// run builds the tree, and a dictionary keyed by paths cost each start ~0.3 M instructions of runtime
    /// type instantiation and conformance lookups (callgrind, `sl-tasks --version`).
    public func runner(at path: [String]) -> Runner? {
        var node = self
        for name in path {
            guard let next = node.subcommands.first(where: { $0.spec.name == name }) else { return nil }
            node = next
        }
        return node.runner
    }
}

extension CommandTree where Runner == CommandRunner {
    /// A command type, with the subcommands it may have.
    public static func command<C: Command>(_ command: C.Type, subcommands: [CommandTree] = []) -> CommandTree {
        CommandTree(
            C.spec, runner: { arguments, context in try C.run(try C.options(arguments), context) }, options: { _ = try C.options($0) },
            subcommands: subcommands)
    }
}

extension CommandTree {
    /// A group that only holds subcommands (`sl-tasks sites …`), in a tool of either kind.
    public static func group(_ spec: CommandSpec, _ subcommands: [CommandTree]) -> CommandTree {
        CommandTree(spec, runner: nil, subcommands: subcommands)
    }
}

/// A whole tool: its command tree and what the man page needs beyond the commands.
public struct Tool<Runner: Sendable>: Sendable {
    public let spec: ToolSpec
    public let commands: CommandTree<Runner>

    public init(
        name: String, version: String = StarlineVersion.current, commands: CommandTree<Runner>, globalOptions: [OptionSpec],
        environment: [ToolSpec.Entry] = [], files: [ToolSpec.Entry] = [], seeAlso: [String] = [],
        versionDetails: (@Sendable () -> [String])? = nil
    ) {
        self.commands = commands
        spec = ToolSpec(
            name: name, version: version, root: commands.spec, globalOptions: globalOptions, environment: environment,
            files: files, seeAlso: seeAlso, versionDetails: versionDetails)
    }
}
