import Foundation
import StarlineTestSupport
import Testing
@testable import StarlineCore

@Suite struct HelpRenderingTests {
    @Test func helpListsCommandsOptionsAndExamples() {
        let root = HelpRenderer.render(sampleTool, path: [])
        #expect(root.contains("Usage: sl-sample COMMAND [OPTIONS]"))
        #expect(root.contains("make") && root.contains("Make things"))
        let make = HelpRenderer.render(sampleTool, path: ["make"])
        #expect(make.contains("Usage: sl-sample make [OPTIONS] TEXT"))
        #expect(make.contains("-f, --format FORMAT"))
        #expect(make.contains("[png, svg]") && make.contains("(default: png)"))
        #expect(make.contains("$ sl-sample make -f svg hi"))
        #expect(make.contains("--chat URL") && make.contains("STARLINE_CHAT_BASE_URL]"))
        #expect(!make.contains("--generate"))
    }
}

@Suite struct ManPageTests {
    @Test func hasEverySectionAndTheExitTable() {
        let page = ManPageRenderer.render(sampleTool)
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "FILES"] {
            #expect(page.contains(".SH \(section)\n"), "missing section \(section)")
        }
        for status in ExitStatus.allCases { #expect(page.contains(".B \(status.rawValue)\n\(status.name)")) }
        #expect(page.contains("\\-\\-format"))
        #expect(page.contains("STARLINE_CHAT_BASE_URL"))
    }

    @Test func escapesRoffControlSequences() {
        #expect(ManPageRenderer.escape(".start") == "\\&.start")
        #expect(ManPageRenderer.escape("a\\b-c") == "a\\eb\\-c")
        #expect(ManPageRenderer.escape("星") == "\\[u661F]")
    }

    /// Every warning category is on (`-ww`), which is stricter than `man --warnings -l`.
    @Test func groffRendersWithoutWarnings() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("sl-sample.1")
        try ManPageRenderer.render(sampleTool).write(toFile: path, atomically: true, encoding: .utf8)
        let run = try Tools.shell("groff -man -Tutf8 -ww -z '\(path)'")
        #expect(run.status == 0)
        #expect(run.stderrText.isEmpty, "groff warnings: \(run.stderrText)")
    }
}

@Suite struct CompletionTests {
    /// Completes `words` (the last one is the word being completed) with the generated bash script.
    func bashComplete(_ words: [String]) throws -> [String] {
        let dir = TemporaryDirectory()
        let script = dir.file("completion.bash")
        try CompletionRenderer.render(sampleTool, shell: .bash).write(toFile: script, atomically: true, encoding: .utf8)
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let command =
            "cd '\(dir.path)' && touch a.png b.txt && source '\(script)' && COMP_WORDS=(sl-sample \(quoted)) && COMP_CWORD=\(words.count) && _sl_sample && printf '%s\\n' \"${COMPREPLY[@]}\""
        let result = try Tools.run("/bin/bash", ["-c", command], home: dir.path)
        #expect(result.status == 0, "bash failed: \(result.stderrText)")
        return result.stdoutText.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
    }

    @Test func bashCompletesCommandsOptionsChoicesAndFiles() throws {
        #expect(try bashComplete(["m"]) == ["make"])
        #expect(Set(try bashComplete([""])) == ["make", "read", "group"])
        #expect(try bashComplete(["make", "--for"]) == ["--format"])
        #expect(try bashComplete(["make", "--format", ""]) == ["png", "svg"])
        #expect(try bashComplete(["group", "l"]) == ["leaf"])
        #expect(try bashComplete(["group", "leaf", "--d"]) == ["--deep"])
        #expect(try bashComplete(["read", "a"]) == ["a.png"])
        #expect(Set(try bashComplete(["--compact", "make", "-s", "3", "--ver"])) == ["--verify", "--version"])
        #expect(try bashComplete(["--compact", "make", "-s", "3", "--verif"]) == ["--verify"])
    }

    @Test func zshAndFishScriptsAreValidSyntax() throws {
        let dir = TemporaryDirectory()
        for (shell, check) in [(CompletionRenderer.Shell.zsh, "zsh -n"), (.fish, "fish --no-execute")] {
            let path = dir.file("c.\(shell.rawValue)")
            try CompletionRenderer.render(sampleTool, shell: shell).write(toFile: path, atomically: true, encoding: .utf8)
            let program = String(check.split(separator: " ")[0])
            try #require(Tools.available(program), "\(program) is not installed; run scripts/bootstrap")
            let run = try Tools.shell("\(check) '\(path)'")
            #expect(run.status == 0, "\(shell): \(run.stderrText)")
        }
        let zsh = CompletionRenderer.render(sampleTool, shell: .zsh)
        #expect(zsh.hasPrefix("#compdef sl-sample"))
        #expect(zsh.contains("(png svg)"))
        let fish = CompletionRenderer.render(sampleTool, shell: .fish)
        #expect(fish.contains("complete -c sl-sample -n '__fish_use_subcommand' -a make"))
        #expect(fish.contains("-l format -x -a 'png svg'"))
    }

    @Test func zshCompletesSubcommandsWhenLoaded() throws {
        try #require(Tools.available("zsh"), "zsh is not installed; run scripts/bootstrap")
        let dir = TemporaryDirectory()
        try CompletionRenderer.render(sampleTool, shell: .zsh).write(toFile: dir.file("_sl-sample"), atomically: true, encoding: .utf8)
        // Loading the function through compinit proves the file parses as a completion function.
        let run = try Tools.shell(
            "zsh -f -c 'fpath=(\(dir.path) $fpath); autoload -Uz compinit; compinit -u -d \(dir.path)/zcd; whence -w _sl-sample'")
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(run.stdoutText.contains("_sl-sample: function"))
    }
}
