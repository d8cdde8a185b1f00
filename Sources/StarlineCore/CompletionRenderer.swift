/// Shell completion scripts for bash, zsh and fish, rendered from the spec.
public enum CompletionRenderer {
    public enum Shell: String, CaseIterable, Sendable { case bash, zsh, fish }

    public static func render(_ tool: ToolSpec, shell: Shell) -> String {
        switch shell {
        case .bash: bash(tool)
        case .zsh: zsh(tool)
        case .fish: fish(tool)
        }
    }

    static func functionName(_ tool: ToolSpec, _ path: [String] = []) -> String {
        "_" + ([tool.name] + path).joined(separator: "__").map { $0.isLetter || $0.isNumber ? $0 : "_" }.map(String.init).joined()
    }

    static func visible(_ options: [OptionSpec]) -> [OptionSpec] { options.filter { !$0.hidden } }

    static func optionWords(_ options: [OptionSpec]) -> [String] {
        visible(options).flatMap { o in (o.short.map { ["-\($0)"] } ?? []) + ["--\(o.long)"] }
    }

    // MARK: bash

    static func bash(_ tool: ToolSpec) -> String {
        let fn = functionName(tool)
        let all = tool.allCommands
        var valueOptions: [(words: [String], option: OptionSpec)] = []
        for option in visible(tool.globalOptions + all.flatMap(\.command.options)) where option.takesValue {
            let words = (option.short.map { ["-\($0)"] } ?? []) + ["--\(option.long)"]
            if !valueOptions.contains(where: { $0.words == words }) { valueOptions.append((words, option)) }
        }
        var out = """
            # bash completion for \(tool.name); generated from the command spec by `\(tool.name) --generate bash`; do not edit.
            \(fn)() {
                local cur prev path="" w i cmds="" opts="" args=""
                cur="${COMP_WORDS[COMP_CWORD]}"
                prev="${COMP_WORDS[COMP_CWORD-1]}"
                for ((i = 1; i < COMP_CWORD; i++)); do
                    w="${COMP_WORDS[i]}"
                    case "$w" in
                        \(valueOptions.isEmpty ? "--*=*" : valueOptions.flatMap(\.words).joined(separator: "|"))) ((i++)); continue ;;
                        -*) continue ;;
                    esac
                    case "$path:$w" in

            """
        for (path, _) in all where !path.isEmpty {
            let parent = path.dropLast().joined(separator: " ")
            out += "                \"\(parent):\(path.last!)\") path=\"\(path.joined(separator: " "))\" ;;\n"
        }
        out += """
                    esac
                done
                case "$prev" in

            """
        for (words, option) in valueOptions {
            let action: String =
                switch option.completion {
                case _ where !option.choices.isEmpty: "COMPREPLY=($(compgen -W \"\(option.choices.joined(separator: " "))\" -- \"$cur\"))"
                case .file: "COMPREPLY=($(compgen -f -- \"$cur\"))"
                case .directory: "COMPREPLY=($(compgen -d -- \"$cur\"))"
                case .none: "COMPREPLY=()"
                }
            out += "        \(words.joined(separator: "|"))) \(action); return 0 ;;\n"
        }
        out += """
                esac
                case "$path" in

            """
        for (path, command) in all {
            // A command's own options do not apply to its subcommands (the parser's scope).
            let opts = optionWords(tool.globalOptions + command.options)
            let fileArgs = command.arguments.contains { $0.completion != .none } ? "files" : ""
            out += "        \"\(path.joined(separator: " "))\") cmds=\"\(command.subcommands.map(\.name).joined(separator: " "))\"; "
            out += "opts=\"\(opts.joined(separator: " "))\"; args=\"\(fileArgs)\" ;;\n"
        }
        out += """
                esac
                if [[ "$cur" == -* ]]; then
                    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
                elif [[ -n "$cmds" ]]; then
                    COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
                elif [[ -n "$args" ]]; then
                    COMPREPLY=($(compgen -f -- "$cur"))
                else
                    COMPREPLY=()
                fi
                return 0
            }
            complete -o filenames -o bashdefault -F \(fn) \(tool.name)

            """
        return out
    }

    // MARK: zsh

    static func zshQuote(_ s: String) -> String {
        "'" + s.replacingAll("'", with: "'\\''") + "'"
    }

    static func zshDescription(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "[", "]", ":", "\\": out += "\\" + String(c)
            default: out.append(c)
            }
        }
        return out
    }

    static func zshAction(_ completion: OptionSpec.Completion, choices: [String]) -> String {
        if !choices.isEmpty { return "(\(choices.joined(separator: " ")))" }
        switch completion {
        case .none: return " "
        case .directory: return "_files -/"
        case .file(let extensions):
            if extensions.isEmpty { return "_files" }
            return "_files -g \"*.(\(extensions.joined(separator: "|")))\""
        }
    }

    static func zshSpecs(_ options: [OptionSpec]) -> [String] {
        visible(options).map { o in
            let description = "[" + zshDescription(o.help) + "]"
            let value = o.valueName.map { ":" + zshDescription($0) + ":" + zshAction(o.completion, choices: o.choices) } ?? ""
            let repeatPrefix = o.repeatable ? "*" : ""
            if let s = o.short {
                let exclusion = o.repeatable ? "" : "(-\(s) --\(o.long))"
                let shortForm = "-\(s)" + (o.takesValue ? "+" : "")
                let longForm = "--\(o.long)" + (o.takesValue ? "=" : "")
                return zshQuote(exclusion) + "{" + zshQuote(repeatPrefix + shortForm) + "," + zshQuote(repeatPrefix + longForm) + "}"
                    + zshQuote(description + value)
            }
            return zshQuote(repeatPrefix + "--\(o.long)" + (o.takesValue ? "=" : "") + description + value)
        }
    }

    static func zsh(_ tool: ToolSpec) -> String {
        var out =
            "#compdef \(tool.name)\n# zsh completion for \(tool.name); generated from the command spec by `\(tool.name) --generate zsh`; do not edit.\n\n"
        for (path, command) in tool.allCommands {
            let fn = functionName(tool, path)
            let specs = zshSpecs(tool.globalOptions + command.options)
            out += "\(fn)() {\n"
            if command.subcommands.isEmpty {
                var args = specs
                for (i, a) in command.arguments.enumerated() {
                    let action = zshAction(a.completion, choices: [])
                    if a.variadic {
                        args.append(zshQuote("*:\(zshDescription(a.name)):\(action)"))
                    } else {
                        args.append(zshQuote("\(a.optional ? "\(i + 1):" : "\(i + 1)"):\(zshDescription(a.name)):\(action)"))
                    }
                }
                out += "    _arguments -s -S \\\n        " + args.joined(separator: " \\\n        ") + "\n"
            } else {
                out += "    local curcontext=\"$curcontext\" state line\n    typeset -A opt_args\n"
                out +=
                    "    _arguments -C -s -S \\\n        "
                    + (specs + ["': :->command'", "'*:: :->argument'"]).joined(separator: " \\\n        ") + "\n"
                out += "    case $state in\n"
                out += "        command)\n            local -a commands\n            commands=(\n"
                for sub in command.subcommands { out += "                \(zshQuote(sub.name + ":" + sub.abstract))\n" }
                out += "            )\n            _describe -t commands 'command' commands ;;\n"
                out += "        argument)\n            case $line[1] in\n"
                for sub in command.subcommands { out += "                \(sub.name)) \(functionName(tool, path + [sub.name])) ;;\n" }
                out += "            esac ;;\n    esac\n"
            }
            out += "}\n\n"
        }
        out += "\(functionName(tool)) \"$@\"\n"
        return out
    }

    // MARK: fish

    static func fishQuote(_ s: String) -> String {
        "'" + s.replacingAll("\\", with: "\\\\").replacingAll("'", with: "\\'") + "'"
    }

    static func fish(_ tool: ToolSpec) -> String {
        var out = "# fish completion for \(tool.name); generated from the command spec by `\(tool.name) --generate fish`; do not edit.\n"
        out += "complete -c \(tool.name) -f\n"
        let all = tool.allCommands
        func condition(_ path: [String], siblings: [String]) -> String {
            var parts = path.map { "__fish_seen_subcommand_from \($0)" }
            if !siblings.isEmpty { parts.append("not __fish_seen_subcommand_from \(siblings.joined(separator: " "))") }
            if path.isEmpty && siblings.isEmpty { return "" }
            return parts.joined(separator: "; and ")
        }
        func optionLine(_ o: OptionSpec, _ cond: String) -> String {
            var line = "complete -c \(tool.name)"
            if !cond.isEmpty { line += " -n \(fishQuote(cond))" }
            if let s = o.short { line += " -s \(s)" }
            line += " -l \(o.long)"
            if o.takesValue {
                if !o.choices.isEmpty {
                    line += " -x -a \(fishQuote(o.choices.joined(separator: " ")))"
                } else if case .none = o.completion {
                    line += " -x"
                } else {
                    line += " -r -F"
                }
            }
            line += " -d \(fishQuote(o.help))"
            return line + "\n"
        }
        for o in visible(tool.globalOptions) { out += optionLine(o, "") }
        for (path, command) in all {
            let cond = path.isEmpty ? "__fish_use_subcommand" : condition(path, siblings: command.subcommands.map(\.name))
            for sub in command.subcommands {
                out += "complete -c \(tool.name) -n \(fishQuote(cond)) -a \(sub.name) -d \(fishQuote(sub.abstract))\n"
            }
            let optionCondition = condition(path, siblings: [])
            for o in visible(command.options) where !path.isEmpty { out += optionLine(o, optionCondition) }
            if path.isEmpty {
                let rootCondition = command.subcommands.isEmpty ? "" : "__fish_use_subcommand"
                for o in visible(command.options) { out += optionLine(o, rootCondition) }
            }
            if command.arguments.contains(where: { $0.completion != .none }) {
                out += "complete -c \(tool.name)" + (optionCondition.isEmpty ? "" : " -n \(fishQuote(optionCondition))") + " -F\n"
            }
        }
        return out
    }
}

extension String {
    /// `replacingOccurrences(of:with:)` without Foundation.
    public func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = self[...]
        while let r = rest.firstRange(of: target) {
            out += rest[..<r.lowerBound]
            out += replacement
            rest = rest[r.upperBound...]
        }
        out += rest
        return out
    }
}
