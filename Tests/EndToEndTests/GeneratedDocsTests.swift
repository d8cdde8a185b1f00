import Foundation
import StarlineTestSupport
import Testing

/// The committed man pages and completions are what each tool's command spec renders now
/// (`make generated`), and man renders every page without warnings.
@Suite struct GeneratedDocsTests {
    /// The tools as Package.swift declares them (its `tools` list, the one place a tool is named), read by
    /// `scripts/tools` as the Makefile reads them.
    static let tools: [String] = {
        let run = try? Tools.shell("'\(repositoryRoot)/scripts/tools'")
        return (run?.stdoutText ?? "").split(separator: "\n").map(String.init)
    }()

    @Test(arguments: tools)
    func committedManPageAndCompletionsAreCurrent(_ tool: String) throws {
        for (kind, path) in [
            ("man", "man/man1/\(tool).1"), ("bash", "completions/bash/\(tool)"),
            ("zsh", "completions/zsh/_\(tool)"), ("fish", "completions/fish/\(tool).fish")
        ] {
            let generated = try Tools.run(tool, ["--generate", kind], home: TemporaryDirectory().path).stdoutText
            let committed = (try? String(contentsOfFile: repositoryRoot + "/" + path, encoding: .utf8)) ?? ""
            #expect(generated == committed, "\(path) is stale: run make generated")
        }
    }

    @Test(arguments: tools)
    func manPageRendersWithoutWarnings(_ tool: String) throws {
        let run = try Tools.shell("MANWIDTH=80 man --warnings -l '\(repositoryRoot)/man/man1/\(tool).1' 2>&1 >/dev/null")
        #expect(run.status == 0)
        #expect(run.stdoutText.isEmpty, "man warnings: \(run.stdoutText)")
    }

    @Test(arguments: tools)
    func helpAndVersion(_ tool: String) throws {
        let help = try Tools.run(tool, ["--help"], home: TemporaryDirectory().path)
        #expect(help.status == 0 && help.stdoutText.contains("Usage: \(tool)") && help.stderr.isEmpty)
        #expect(try Tools.run(tool, ["--version"], home: TemporaryDirectory().path).stdoutText.hasPrefix("\(tool) "))
    }
}
