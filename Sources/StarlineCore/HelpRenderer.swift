/// `--help` text, rendered from the spec.
public enum HelpRenderer {
    public static func render(_ tool: ToolSpec, path: [String]) -> String {
        guard let command = tool.command(at: path) else { return "" }
        let full = ([tool.name] + path).joined(separator: " ")
        var out = "\(full) — \(command.abstract)\n\nUsage: \(usageLine(tool, path: path))\n"
        if !command.discussion.isEmpty { out += "\n" + wrap(command.discussion, indent: 0, width: 80) + "\n" }
        if !command.subcommands.isEmpty {
            out += "\nCommands:\n"
            out += table(command.subcommands.map { ($0.name, $0.abstract) })
        }
        if !command.arguments.isEmpty {
            out += "\nArguments:\n"
            out += table(command.arguments.map { ($0.name, $0.help) })
        }
        let own = optionRows(command.options)
        if !own.isEmpty { out += "\nOptions:\n" + table(own) }
        let global = optionRows(tool.globalOptions)
        if !global.isEmpty { out += "\n\(path.isEmpty && own.isEmpty ? "Options" : "Global options"):\n" + table(global) }
        if !command.examples.isEmpty {
            out += "\nExamples:\n"
            for e in command.examples { out += "  $ \(e.command)\n" + wrap(e.explanation, indent: 6, width: 80) + "\n" }
        }
        if !command.exitStatuses.isEmpty {
            out += "\nExit status:\n" + table(command.exitStatuses.map { ("\($0.0.rawValue)", $0.1) })
        }
        if !command.subcommands.isEmpty {
            out += "\nRun '\(full) COMMAND --help' for a command's options. Exit codes and files: man \(tool.name).\n"
        } else {
            out += "\nEvery Starline tool shares one table of exit codes (2 is a usage error): man \(tool.name).\n"
        }
        return out
    }

    public static func usageLine(_ tool: ToolSpec, path: [String]) -> String {
        guard let command = tool.command(at: path) else { return tool.name }
        var parts = [tool.name] + path
        if !command.subcommands.isEmpty {
            parts.append(command.runsWithoutSubcommand ? "[COMMAND]" : "COMMAND")
        }
        parts.append("[OPTIONS]")
        parts += command.arguments.map(\.synopsis)
        return parts.joined(separator: " ")
    }

    static func optionRows(_ options: [OptionSpec]) -> [(String, String)] {
        options.filter { !$0.hidden }.map { o in
            var help = o.help
            if !o.choices.isEmpty { help += " [\(o.choices.joined(separator: ", "))]" }
            if let r = o.range { help += " (\(r))" }
            if let d = o.defaultValue { help += " (default: \(d))" }
            if let e = o.env { help += " [env: \(e)]" }
            if o.repeatable { help += " (repeatable)" }
            return ((o.short == nil ? "    " : "") + o.synopsis, help)
        }
    }

    static func table(_ rows: [(String, String)]) -> String {
        let width = min(30, (rows.map(\.0.count).max() ?? 0) + 2)
        var out = ""
        for (left, right) in rows {
            let pad =
                left.count + 2 <= width
                ? String(repeating: " ", count: width - left.count) : "\n" + String(repeating: " ", count: width + 2)
            let body = wrap(right, indent: width + 2, width: 80)
            out += "  " + left + pad + body.drop(while: { $0 == " " }) + "\n"
        }
        return out
    }

    static func wrap(_ text: String, indent: Int, width: Int) -> String {
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            for word in paragraph.split(separator: " ") {
                if !line.isEmpty, indent + line.count + 1 + word.count > width {
                    lines.append(String(repeating: " ", count: indent) + line)
                    line = ""
                }
                line += (line.isEmpty ? "" : " ") + word
            }
            lines.append(String(repeating: " ", count: indent) + line)
        }
        return lines.joined(separator: "\n")
    }
}
