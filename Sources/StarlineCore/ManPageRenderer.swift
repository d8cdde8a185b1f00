/// A roff man page (man(7) macros) rendered from the spec, with SYNOPSIS, DESCRIPTION, COMMANDS,
/// OPTIONS, EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES and SEE ALSO. The output is deterministic
/// (no build date) so the committed page can be checked for staleness.
public enum ManPageRenderer {
    /// A command's own exit statuses, as a tagged paragraph.
    static func exitStatusItems(_ command: CommandSpec) -> String {
        guard !command.exitStatuses.isEmpty else { return "" }
        var out = ".TP\n.B Exit status\n"
        out += command.exitStatuses.map { "\($0.0.rawValue) \(escape($0.1))" }.joined(separator: ";\n.br\n") + ".\n"
        return out
    }

    public static func render(_ tool: ToolSpec) -> String {
        var out = ".\\\" Generated from the command spec by `\(tool.name) --generate man`; do not edit.\n"
        out += ".TH \"\(escape(tool.name.uppercased()))\" \"1\" \"\" \"Starline \(tool.version)\" \"Starline Manual\"\n"
        // Left-adjusted: JSON samples are long words, and justified lines around them cannot be adjusted.
        out += ".ad l\n"
        out += ".SH NAME\n\(escape(tool.name)) \\- \(escape(tool.root.abstract))\n"

        out += ".SH SYNOPSIS\n"
        let leaves = tool.allCommands.filter { $0.command.subcommands.isEmpty || $0.command.runsWithoutSubcommand }
        for (i, leaf) in leaves.enumerated() {
            if i > 0 { out += ".br\n" }
            out += synopsis(tool, path: leaf.path)
        }

        out += ".SH DESCRIPTION\n"
        out += paragraphs(tool.root.discussion.isEmpty ? tool.root.abstract : tool.root.discussion)

        let commands = tool.allCommands.filter { !$0.path.isEmpty }
        if !commands.isEmpty {
            out += ".SH COMMANDS\n"
            for (path, command) in commands {
                out += ".SS \"\(escape(HelpRenderer.usageLine(tool, path: path)))\"\n"
                out += paragraphs(command.abstract + (command.abstract.hasSuffix(".") ? "" : "."))
                if !command.discussion.isEmpty { out += paragraphs(command.discussion) }
                for argument in command.arguments {
                    out += ".TP\n.I \(escape(argument.name))\n\(escape(argument.help))\n"
                }
                for option in command.options where !option.hidden { out += item(option) }
                out += exitStatusItems(command)
                for example in command.examples { out += exampleBlock(example) }
            }
        }
        // A root command that runs on its own (sl-login signs in) has options of its own: they are not
        // global, so they get their own section.
        let rootOptions = tool.root.options.filter { !$0.hidden }
        if !commands.isEmpty, tool.root.runsWithoutSubcommand, !rootOptions.isEmpty || !tool.root.exitStatuses.isEmpty {
            out += ".SH \"OPTIONS WITHOUT A COMMAND\"\n"
            out += ".PP\nThese apply to \(escape(tool.name)) run without a command.\n"
            for option in rootOptions { out += item(option) }
            out += exitStatusItems(tool.root)
        }

        let globals = tool.globalOptions.filter { !$0.hidden }
        if !globals.isEmpty {
            out += ".SH OPTIONS\n"
            if !commands.isEmpty { out += ".PP\nThese options are accepted by every command, before or after the command name.\n" }
            for option in globals { out += item(option) }
            if commands.isEmpty {
                for argument in tool.root.arguments { out += ".TP\n.I \(escape(argument.name))\n\(escape(argument.help))\n" }
                for option in tool.root.options where !option.hidden { out += item(option) }
                out += exitStatusItems(tool.root)
            }
        }

        out += ".SH EXIT STATUS\n"
        out += paragraphs(
            """
            Every Starline tool uses the same exit codes. On failure the first line of standard error is a JSON object \
            {\"error\":{\"code\":…,\"message\":…,\"retryable\":…,\"details\":…}}.
            """)
        for status in ExitStatus.allCases {
            out += ".TP\n.B \(status.rawValue)\n\(escape(status.name)): \(escape(status.meaning))\n"
        }

        var environment = tool.environment
        let optionEnv = tool.allCommands.flatMap(\.command.options) + tool.globalOptions
        for option in optionEnv where option.env != nil && !environment.contains(where: { $0.name == option.env }) {
            environment.append(.init(option.env!, "Default for --\(option.long): \(option.help)"))
        }
        if !environment.isEmpty {
            out += ".SH ENVIRONMENT\n"
            for e in environment { out += ".TP\n.B \(escape(e.name))\n\(escape(e.text))\n" }
        }
        if !tool.files.isEmpty {
            out += ".SH FILES\n"
            for f in tool.files { out += ".TP\n.I \(escape(f.name))\n\(escape(f.text))\n" }
        }
        let allExamples = tool.root.examples
        if !allExamples.isEmpty {
            out += ".SH EXAMPLES\n"
            for e in allExamples { out += exampleBlock(e) }
        }
        if !tool.seeAlso.isEmpty {
            out += ".SH SEE ALSO\n"
            out +=
                tool.seeAlso.map { ref -> String in
                    if let open = ref.firstIndex(of: "(") {
                        return ".BR \(escape(String(ref[..<open]))) \(escape(String(ref[open...])))"
                    }
                    return ".B \(escape(ref))"
                }.joined(separator: " ,\n") + "\n"
        }
        return out
    }

    static func synopsis(_ tool: ToolSpec, path: [String]) -> String {
        guard let command = tool.command(at: path) else { return "" }
        var out = ".B \(escape(([tool.name] + path).joined(separator: " ")))\n"
        out += "[\\fIOPTIONS\\fR]\n"
        for argument in command.arguments {
            var name = "\\fI\(escape(argument.name))\\fR"
            if argument.variadic { name += "\\&..." }
            out += (argument.optional ? "[\(name)]" : name) + "\n"
        }
        return out
    }

    static func item(_ option: OptionSpec) -> String {
        var head = ".TP\n"
        var tag = ""
        if let s = option.short { tag += "\\fB\\-\(escape(String(s)))\\fR, " }
        tag += "\\fB\\-\\-\(escape(option.long))\\fR"
        if let v = option.valueName { tag += " \\fI\(escape(v))\\fR" }
        head += tag + "\n"
        var text = option.help
        if !option.choices.isEmpty { text += " One of: \(option.choices.joined(separator: ", "))." }
        if let r = option.range { text += " Range: \(r)." }
        if let d = option.defaultValue { text += " Default: \(d)." }
        if let e = option.env { text += " Environment: \(e)." }
        if let c = option.configKey { text += " Profile key: \(c)." }
        if option.repeatable { text += " May be repeated." }
        return head + escape(text) + "\n"
    }

    static func exampleBlock(_ e: Example) -> String {
        ".PP\n\(escape(e.explanation))\n.PP\n.RS 4\n.nf\n\(escape(e.command))\n.fi\n.RE\n"
    }

    static func paragraphs(_ text: String) -> String {
        text.split(separator: "\n\n").map { ".PP\n" + escape(String($0)) + "\n" }.joined()
    }

    /// Escapes text for roff: backslashes, hyphens (so options copy-paste as ASCII minus), break points after commas,
    /// control characters at line starts, and non-ASCII characters as \[uXXXX].
    public static func escape(_ text: String) -> String {
        var out = ""
        var previous: Unicode.Scalar = " "
        for scalar in text.unicodeScalars {
            // A break point after a comma inside a long token (JSON field lists), so groff can fill
            // lines instead of warning that it cannot adjust them.
            if previous == ",", scalar != " ", scalar != "\n" { out += "\\:" }
            previous = scalar
            switch scalar {
            case "\\": out += "\\e"
            case "-": out += "\\-"
            case "\n": out += "\n"
            default:
                if scalar.isASCII {
                    out.unicodeScalars.append(scalar)
                } else {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    out += "\\[u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "]"
                }
            }
        }
        // A line starting with '.' or '\'' would be read as a request.
        return out.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix(".") || line.hasPrefix("'") ? "\\&" + line : String(line)
        }.joined(separator: "\n")
    }
}
