import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// Output failures are failures (README, Conventions): every tool, as built, turns a failed write to stdout into
/// WRITE_FAILED (exit 10) and ends quietly when its reader has gone away.
@Suite struct OutputFailureTests {
    /// For each tool, a command that prints to stdout without a server.
    static let commands: [String: [String]] = [
        "sl-qr": ["encode", "-f", "svg", "x"],
        "sl-tasks": ["export"],
        "sl-login": ["status"],
        "sl-restore": [],
        "sl-devserver": ["--routes"],
        // No command of sl-sessions prints without a server yet; --version goes through the same streams.
        "sl-sessions": ["--version"],
        "sl-memory": ["status"],
        // Every sl-chat command needs a stored session; --version goes through the same streams.
        "sl-chat": ["--version"]
    ]

    @Test func everyToolHasACommandHere() {
        #expect(Set(ToolRegistry.names) == Set(Self.commands.keys))
    }

    @Test(arguments: GeneratedDocsTests.tools)
    func aFullDiskIsWriteFailedWithExit10(_ tool: String) throws {
        let home = TemporaryDirectory()
        let words = try #require(Self.commands[tool])
        let run = try Tools.run("/bin/sh", ["-c", "exec \"$0\" \"$@\" > /dev/full", Tools.path(tool)] + words, home: home.path)
        #expect(run.status == 10, "\(tool): \(run.stderrText)")
        let firstLine = String(run.stderrText.split(separator: "\n").first ?? "")
        #expect(firstLine.hasPrefix(#"{"error":{"code":"WRITE_FAILED""#), "\(tool): \(run.stderrText)")
        // --help and --version write through the same streams.
        let help = try Tools.run("/bin/sh", ["-c", "exec \"$0\" --help > /dev/full", Tools.path(tool)], home: home.path)
        #expect(help.status == 10 && help.stderrText.contains("WRITE_FAILED"))
    }

    /// The reading end is closed before the tool starts, so its first write meets a closed pipe — with SIGPIPE
    /// at its default and with SIGPIPE ignored by the parent (as Python, and some job runners, leave it).
    @Test(arguments: GeneratedDocsTests.tools)
    func aClosedPipeEndsTheToolQuietly(_ tool: String) throws {
        let home = TemporaryDirectory()
        let words = try #require(Self.commands[tool])
        let script = """
            import os, subprocess, sys
            r, w = os.pipe()
            os.close(r)
            for restore in (True, False):
                p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE, restore_signals=restore)
                print(p.returncode, len(p.stderr), p.stderr[:200])
            """
        let run = try Tools.run("/usr/bin/python3", ["-c", script, Tools.path(tool)] + words, home: home.path)
        #expect(run.status == 0, "\(run.stderrText)")
        let lines = run.stdoutText.split(separator: "\n").map(String.init)
        // -13: ended by SIGPIPE, as a Unix tool is; 0 bytes on stderr.
        #expect(lines == ["-13 0 b''", "-13 0 b''"], "\(tool): \(run.stdoutText)")
    }
}
