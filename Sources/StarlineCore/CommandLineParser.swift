/// Parses a command line against a `ToolSpec`.
///
/// Conventions (README, Conventions shared by every tool): `--opt=v` and `--opt v`; `-abc` clusters of
/// short flags, where the first short option that takes a value consumes the rest of the cluster (`-s4`) or
/// the next word; options may come before or after positional arguments; `--` ends the options; `-` alone
/// is a positional argument (stdin). A usage error names the bad word and suggests the nearest option.
public struct CommandLineParser: Sendable {
    public let tool: ToolSpec

    public init(_ tool: ToolSpec) { self.tool = tool }

    public func parse(_ words: [String]) throws -> ParsedArguments {
        var path: [String] = []
        var command = tool.root
        var inScope = tool.globalOptions + command.options
        var given: [GivenOption] = []
        var positionals: [String] = []
        var optionsEnded = false
        var index = 0

        func record(_ option: OptionSpec, _ value: String?) throws {
            let value = value ?? ""
            if option.takesValue, !option.choices.isEmpty, !option.choices.contains(value) {
                var message = "invalid value '\(value)' for --\(option.long)"
                if let near = Suggestion.nearest(to: value, in: option.choices) { message += "; did you mean '\(near)'?" }
                message += " (choose from \(option.choices.joined(separator: ", ")))"
                throw usage(message, path, details: [("option", .string(option.long)), ("value", .string(value))])
            }
            if !option.repeatable { given.removeAll { $0.long == option.long } }
            given.append(GivenOption(long: option.long, value: value))
        }

        while index < words.count {
            let word = words[index]
            index += 1
            if optionsEnded || word == "-" || !word.hasPrefix("-") {
                if !optionsEnded, positionals.isEmpty, !command.subcommands.isEmpty {
                    guard let sub = command.subcommand(named: word) else {
                        var message = "unknown command '\(word)' for \(([tool.name] + path).joined(separator: " "))"
                        if let near = Suggestion.nearest(to: word, in: command.subcommands.map(\.name)) {
                            message += "; did you mean '\(near)'?"
                        }
                        throw usage(message, path, details: [("word", .string(word))])
                    }
                    path.append(word)
                    command = sub
                    // A command's own options do not apply to its subcommands (`sl-login --device` signs in;
                    // `sl-login status --device` means nothing): the scope is the globals and this command's.
                    inScope = tool.globalOptions + sub.options
                    if let stray = given.first(where: { g in !inScope.contains { $0.long == g.long } }) {
                        throw usage(
                            "option --\(stray.long) does not apply to '\(([tool.name] + path).joined(separator: " "))'",
                            path, details: [("option", .string(stray.long))])
                    }
                    continue
                }
                positionals.append(word)
                continue
            }
            if word == "--" {
                optionsEnded = true
                continue
            }
            if word.hasPrefix("--") {
                let body = word.dropFirst(2)
                let name: Substring
                var inline: String?
                if let eq = body.firstIndex(of: "=") {
                    name = body[..<eq]
                    inline = String(body[body.index(after: eq)...])
                } else {
                    name = body
                }
                guard let option = inScope.last(where: { $0.long == name }) else {
                    throw unknownOption("--\(name)", path: path, inScope: inScope, command: command)
                }
                if option.takesValue {
                    if inline == nil {
                        guard index < words.count else {
                            throw usage(
                                "option --\(option.long) needs a value (\(option.valueName!))", path,
                                details: [("option", .string(option.long))])
                        }
                        inline = words[index]
                        index += 1
                    }
                    try record(option, inline)
                } else {
                    if inline != nil {
                        throw usage("option --\(option.long) takes no value", path, details: [("option", .string(option.long))])
                    }
                    try record(option, nil)
                }
                continue
            }
            // A cluster of short options: -abc, -s4, -s 4.
            var cluster = Substring(word.dropFirst())
            while let letter = cluster.first {
                cluster = cluster.dropFirst()
                guard let option = inScope.last(where: { $0.short == letter }) else {
                    throw unknownOption("-\(letter)", path: path, inScope: inScope, command: command)
                }
                if option.takesValue {
                    var value = String(cluster)
                    cluster = ""
                    if value.isEmpty {
                        guard index < words.count else {
                            throw usage(
                                "option -\(letter) needs a value (\(option.valueName!))", path, details: [("option", .string(option.long))])
                        }
                        value = words[index]
                        index += 1
                    }
                    try record(option, value)
                } else {
                    try record(option, nil)
                }
            }
        }

        let parsed = ParsedArguments(tool: tool, path: path, command: command, scope: inScope, given: given, positionals: positionals)
        // --help, --version and --generate stand on their own; arguments are not checked then.
        if parsed.flag("help") || parsed.flag("version") || parsed.given("generate") != nil { return parsed }
        if !command.subcommands.isEmpty, !command.runsWithoutSubcommand {
            throw usage("missing command: one of \(command.subcommands.map(\.name).joined(separator: ", "))", path)
        }
        let required = command.arguments.filter { !$0.optional }.count
        if positionals.count < required {
            let missing = command.arguments.filter { !$0.optional }[positionals.count]
            throw usage("missing argument \(missing.name)", path, details: [("argument", .string(missing.name))])
        }
        if command.arguments.last?.variadic != true, positionals.count > command.arguments.count {
            let extra = positionals[command.arguments.count]
            throw usage("unexpected argument '\(extra)'", path, details: [("argument", .string(extra))])
        }
        return parsed
    }

    private func usage(_ message: String, _ path: [String], details: [(String, JSON)] = []) -> StarlineError {
        StarlineError(.usage, message, details: .object([("command", .string(([tool.name] + path).joined(separator: " ")))] + details))
    }

    private func unknownOption(_ word: String, path: [String], inScope: [OptionSpec], command: CommandSpec) -> StarlineError {
        var message = "unknown option \(word)"
        let names = inScope.filter { !$0.hidden }.map { "--\($0.long)" }
        // An option of another command (one not named yet, or the parent's own) is named as such first: that is
        // likelier what was meant than the nearest spelling here.
        let owners = word.hasPrefix("--") ? tool.allCommands.filter { $0.command.options.contains { "--\($0.long)" == word } } : []
        if !owners.isEmpty {
            let list = owners.map { "'" + ([tool.name] + $0.path).joined(separator: " ") + "'" }.joined(separator: ", ")
            message += "; it is an option of \(list)"
        } else if word.hasPrefix("--"), let near = Suggestion.nearest(to: word, in: names) {
            message += "; did you mean \(near)?"
        } else if !word.hasPrefix("--") {
            message += " (see \(([tool.name] + path).joined(separator: " ")) --help)"
        }
        return usage(message, path, details: [("option", .string(word))])
    }
}

/// The result of parsing, with values resolved in the order flag > environment > profile > default.
public struct ParsedArguments: Sendable {
    public let tool: ToolSpec
    public let path: [String]
    public let command: CommandSpec
    /// The options this command line may use: the tool's global options, then this command's own (a later one
    /// shadows an earlier one of the same name). Computed once by the parser: every typed option read looks here.
    public let scope: [OptionSpec]
    /// The options given, in command-line order; commands read typed values through `Option`
    /// (`arguments[option]`). A list, not a dictionary: a command line holds a handful, and a dictionary's
    /// first use costs every start a runtime conformance lookup (~0.1 M instructions, callgrind).
    let given: [GivenOption]
    public let positionals: [String]
    public var environment: Environment = [:]
    public var profile: ConfigProfile?

    public enum Source: String, Sendable { case flag, environment, profile, defaultValue = "default" }

    func flag(_ long: String) -> Bool {
        assertDeclared(long)
        return given(long) != nil
    }

    /// Values given on the command line only.
    func values(_ long: String) -> [String] {
        assertDeclared(long)
        return given.filter { $0.long == long }.map { $0.value }
    }

    /// The resolved value and where it came from.
    func resolved(_ long: String) -> (value: String, source: Source)? {
        assertDeclared(long)
        if let v = given(long) { return (v, .flag) }
        guard let option = spec(long) else { return nil }
        if let env = option.env, let v = environment[env], !v.isEmpty { return (v, .environment) }
        if let key = option.configKey, let v = profile?.value(key) { return (v, .profile) }
        if let d = option.defaultValue { return (d, .defaultValue) }
        return nil
    }

    func value(_ long: String) -> String? { resolved(long)?.value }

    /// An integer option checked against `range`; a bad value is a usage error naming the option.
    func int(_ long: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let (text, source) = resolved(long) else { return nil }
        guard let n = Int(text), range.contains(n) else {
            throw StarlineError(
                .usage,
                "invalid value '\(text)' for --\(long) (from \(source.rawValue)): expected an integer in \(range.lowerBound)…\(range.upperBound)",
                details: .object([("option", .string(long)), ("value", .string(text))]))
        }
        return n
    }

    /// The last value given for `long` on the command line (a flag's is "").
    func given(_ long: String) -> String? { given.last { $0.long == long }?.value }

    /// Asking for an option the command does not declare is a programming error (a typo, or an option of
    /// another command): it traps in debug builds instead of reading as "not given".
    func assertDeclared(_ long: String) {
        assert(spec(long) != nil, "--\(long) is not an option of '\(([tool.name] + path).joined(separator: " "))'")
    }

    public func spec(_ long: String) -> OptionSpec? {
        scope.last { $0.long == long }
    }
}

/// "Did you mean" suggestions by edit distance.
enum Suggestion {
    static func nearest(to word: String, in candidates: [String]) -> String? {
        let limit = max(2, word.count / 3)
        var best: (String, Int)?
        for candidate in candidates {
            let d = distance(Array(word.lowercased().utf8), Array(candidate.lowercased().utf8))
            if d <= limit, d < (best?.1 ?? Int.max) { best = (candidate, d) }
        }
        if best == nil {
            // A unique prefix is a good guess too (--form → --format).
            let prefixed = candidates.filter { $0.hasPrefix(word) }
            if prefixed.count == 1 { return prefixed[0] }
        }
        return best?.0
    }

    /// Damerau-Levenshtein distance (optimal string alignment), so a swap of two letters counts once.
    static func distance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}

/// One option word of the command line and its value ("" for a flag).
struct GivenOption: Sendable {
    let long: String
    let value: String
}
