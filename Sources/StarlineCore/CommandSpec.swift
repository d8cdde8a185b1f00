/// The declarative description of a command. One spec per command renders the parser,
/// `--help`, the man page and the shell completions, so they can never disagree.
public struct OptionSpec: Sendable {
    public enum Completion: Sendable, Equatable {
        case none
        case file(extensions: [String])
        case directory
    }

    public var long: String
    public var short: Character?
    /// The placeholder of the option's value (`FORMAT`); nil for a flag.
    public var valueName: String?
    public var help: String
    public var repeatable: Bool
    /// The environment variable read when the option is not given on the command line.
    public var env: String?
    /// The key in the selected configuration profile read when neither flag nor env gives a value.
    public var configKey: String?
    public var defaultValue: String?
    /// The values the option accepts (empty: any). Listed on demand: an enumeration's cases are mapped to their
    /// raw values only when help, a completion or a given value needs them — at every start that mapping cost
    /// ~40,000 instructions per choice option of runtime generic instantiation (callgrind, `sl-qr encode`).
    public var choices: [String] {
        get { listChoices() }
        set { listChoices = { newValue } }
    }
    private var listChoices: @Sendable () -> [String]
    public var completion: Completion
    public var hidden: Bool
    /// The accepted range of a numeric value as shown in help and man pages (`1–100`); set by `Option`.
    public var range: String?
    /// Given, this flag silences the command's success (`StandardOptions.quiet`): the tool's runner makes its
    /// `Output` quiet.
    public var silencesSuccess = false

    public var takesValue: Bool { valueName != nil }

    public static func flag(_ long: String, short: Character? = nil, help: String, hidden: Bool = false) -> OptionSpec {
        OptionSpec(
            long: long, short: short, valueName: nil, help: help, repeatable: false, env: nil, configKey: nil,
            defaultValue: nil, listChoices: { [] }, completion: .none, hidden: hidden, range: nil)
    }

    public static func value(
        _ long: String, short: Character? = nil, _ valueName: String, help: String,
        default defaultValue: String? = nil, choices: [String] = [], env: String? = nil, configKey: String? = nil,
        repeatable: Bool = false, completion: Completion = .none, hidden: Bool = false
    ) -> OptionSpec {
        value(
            long, short: short, valueName, help: help, default: defaultValue, listChoices: { choices }, env: env, configKey: configKey,
            repeatable: repeatable, completion: completion, hidden: hidden)
    }

    /// A value option whose choices are listed by `listChoices` when first needed (an enumeration's cases).
    public static func value(
        _ long: String, short: Character? = nil, _ valueName: String, help: String,
        default defaultValue: String? = nil, listChoices: @escaping @Sendable () -> [String], env: String? = nil,
        configKey: String? = nil, repeatable: Bool = false, completion: Completion = .none, hidden: Bool = false
    ) -> OptionSpec {
        OptionSpec(
            long: long, short: short, valueName: valueName, help: help, repeatable: repeatable, env: env,
            configKey: configKey, defaultValue: defaultValue, listChoices: listChoices, completion: completion, hidden: hidden,
            range: nil)
    }

    /// `-f, --format FORMAT` as shown in help and man pages.
    public var synopsis: String {
        var s = short.map { "-\($0), " } ?? ""
        s += "--\(long)"
        if let valueName { s += " \(valueName)" }
        return s
    }
}

public struct ArgumentSpec: Sendable {
    public var name: String
    public var help: String
    public var optional: Bool
    public var variadic: Bool
    public var completion: OptionSpec.Completion

    public init(
        _ name: String, help: String, optional: Bool = false, variadic: Bool = false,
        completion: OptionSpec.Completion = .none
    ) {
        self.name = name
        self.help = help
        self.optional = optional
        self.variadic = variadic
        self.completion = completion
    }

    var synopsis: String {
        var s = name
        if variadic { s += "…" }
        return optional ? "[\(s)]" : s
    }
}

public struct Example: Sendable {
    public var command: String
    public var explanation: String
    public init(_ command: String, _ explanation: String) {
        self.command = command
        self.explanation = explanation
    }
}

public struct CommandSpec: Sendable {
    public var name: String
    public var abstract: String
    public var discussion: String
    public var options: [OptionSpec]
    public var arguments: [ArgumentSpec]
    public var subcommands: [CommandSpec]
    public var examples: [Example]
    /// A command with subcommands that also runs on its own (`sl-login` signs in; `sl-login status` …).
    public var runsWithoutSubcommand: Bool
    /// The exit statuses this command ends with, each with what it means here (empty: only the shared table
    /// in the man page). `--help` lists them; the man page adds them to the command's section.
    public var exitStatuses: [(ExitStatus, String)]

    public init(
        _ name: String, abstract: String, discussion: String = "", options: [OptionSpec] = [],
        arguments: [ArgumentSpec] = [], subcommands: [CommandSpec] = [], examples: [Example] = [],
        runsWithoutSubcommand: Bool = false, exitStatuses: [(ExitStatus, String)] = []
    ) {
        precondition(subcommands.isEmpty || arguments.isEmpty, "a command takes either subcommands or arguments")
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.arguments = arguments
        self.subcommands = subcommands
        self.examples = examples
        self.runsWithoutSubcommand = runsWithoutSubcommand
        self.exitStatuses = exitStatuses
    }

    public func subcommand(named name: String) -> CommandSpec? { subcommands.first { $0.name == name } }
}

/// A whole tool: its root command plus what the man page needs beyond the commands.
public struct ToolSpec: Sendable {
    public struct Entry: Sendable {
        public var name: String
        public var text: String
        public init(_ name: String, _ text: String) {
            self.name = name
            self.text = text
        }
    }

    public var name: String
    public var version: String
    public var root: CommandSpec
    /// Options accepted by every command of the tool, before or after the subcommand name.
    public var globalOptions: [OptionSpec]
    public var environment: [Entry]
    public var files: [Entry]
    public var seeAlso: [String]
    /// Lines `--version` prints after "NAME VERSION": what this install can do that depends on optional
    /// libraries (sl-qr's decoders). Computed only when asked, so it costs no other run anything.
    public var versionDetails: (@Sendable () -> [String])?

    public init(
        name: String, version: String = StarlineVersion.current, root: CommandSpec, globalOptions: [OptionSpec],
        environment: [Entry] = [], files: [Entry] = [], seeAlso: [String] = [],
        versionDetails: (@Sendable () -> [String])? = nil
    ) {
        self.name = name
        self.version = version
        self.root = root
        self.globalOptions = globalOptions + [StandardOptions.help, StandardOptions.version, StandardOptions.generate]
        self.environment = environment
        self.files = files
        self.seeAlso = seeAlso
        self.versionDetails = versionDetails
    }

    /// The command at `path` (names below the root).
    public func command(at path: [String]) -> CommandSpec? {
        var command = root
        for name in path {
            guard let next = command.subcommand(named: name) else { return nil }
            command = next
        }
        return command
    }

    /// Every command with its path, depth first, the root first.
    public var allCommands: [(path: [String], command: CommandSpec)] {
        var result: [(path: [String], command: CommandSpec)] = []
        func visit(_ c: CommandSpec, _ path: [String]) {
            result.append((path, c))
            for s in c.subcommands { visit(s, path + [s.name]) }
        }
        visit(root, [])
        return result
    }
}

public enum StarlineVersion {
    public static let current = "0.1.0"
}

/// Options shared by the tools, defined once so every tool spells and documents them alike.
public enum StandardOptions {
    public static let help = OptionSpec.flag("help", short: "h", help: "Print help and exit.")
    public static let version = OptionSpec.flag("version", help: "Print the version and exit.")
    /// Renders the man page or a completion script from the spec (used by `make generated`).
    public static let generate = OptionSpec.value(
        "generate", "KIND", help: "Write the man page or a shell completion script to stdout.",
        choices: ["man", "bash", "zsh", "fish"], hidden: true)
    public static let pretty = Option<Bool>.flag("pretty", help: "Pretty-print JSON output (the default on a terminal).")
    public static let compact = OptionSpec.flag("compact", help: "Print compact JSON (the default when stdout is not a terminal).")
    public static let jsonl = OptionSpec.flag("jsonl", help: "Print JSON Lines: one compact record per line.")
    public static let progress = OptionSpec.flag("progress", help: "Print progress on stderr even when stderr is not a terminal.")
    /// `-q/--quiet` of the commands cron runs: cron mails every line a job prints, so a job that succeeded
    /// prints none. Errors are still reported on stderr.
    public static let quiet: OptionSpec = {
        var spec = OptionSpec.flag(
            "quiet", short: "q", help: "Print nothing on success (no records, no notices); errors are still reported on stderr.")
        spec.silencesSuccess = true
        return spec
    }()
    public static let showSecrets = Option<Bool>.flag(
        "show-secrets", help: "Include tokens and codes in the output instead of \"redacted\".")
    public static let profile = OptionSpec.value(
        "profile", "NAME", help: "Use the named profile of the configuration file.",
        env: "STARLINE_PROFILE")
    /// `--api`: the platform API base URL (W4 rules).
    public static let apiBase = Option<BaseURL>.baseURL(
        "api", help: "Platform API base URL (https, or http on a loopback host).",
        default: "https://account.thestarline.cn", env: "STARLINE_API_BASE_URL", configKey: "api")
    public static let api = apiBase.spec
    /// `--chat`: the chat service base URL (W4).
    public static let chatBase = Option<BaseURL>.baseURL(
        "chat", help: "Chat service base URL (https, or http on a loopback host).",
        default: "https://chat.thestarline.cn", env: "STARLINE_CHAT_BASE_URL", configKey: "chat")
    public static let chat = chatBase.spec

    /// `--pretty`, `--compact`, `--jsonl`, `--progress`, `--profile`: every tool has these.
    public static let output: [OptionSpec] = [pretty.spec, compact, jsonl, progress, profile]

    public static let environment: [ToolSpec.Entry] = [
        .init("STARLINE_HOME", "Relocates configuration, state, data and runtime files to DIR/config, DIR/state, DIR/data and DIR/run."),
        .init(
            "XDG_CONFIG_HOME, XDG_STATE_HOME, XDG_DATA_HOME, XDG_RUNTIME_DIR", "Base directories of the XDG Base Directory specification."),
        .init("STARLINE_PROFILE", "Configuration profile to use, as --profile."),
        .init("NO_COLOR", "When set, no colour is used in terminal output."),
        .init(
            "STARLINE_PAGER, PAGER",
            """
            Pager for tables printed on a terminal, run by /bin/sh -c (STARLINE_PAGER first); unset, empty or cat: none. \
            less gets LESS=FRX unless LESS is set.
            """)
    ]

    public static let configFile = ToolSpec.Entry(
        "$XDG_CONFIG_HOME/starline/config.json",
        """
        Configuration profiles: \
        {\"defaultProfile\":\"NAME\",\"profiles\":{\"NAME\":{\"api\":URL,\"chat\":URL,\"appId\":ID,\"service\":NAME,\"timeout\":SECONDS|\"DURATION\"}}} \
        (a number is seconds; a string is a duration as --timeout takes). Command-line flags override environment \
        variables, which override the profile, which overrides the defaults.
        """)
}
