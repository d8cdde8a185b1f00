import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// The README's "In a script" block of sl-devserver, run exactly as written (with the `dev` helper its earlier
/// block defines): its own server on a free port, an admin signed in with the device flow, 3,000 sessions
/// revoked from a pipe, and the checks it prints — the summary, an empty second listing, no session asked twice,
/// no failed request — then the server stopped.
@Suite struct ReadmeDevServerScriptTests {
    static func block(_ readme: String, containing marker: String) -> String? {
        var lines: [String] = []
        var inBlock = false
        var found = false
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("```") {
                if inBlock, found { return lines.joined(separator: "\n") + "\n" }
                inBlock = line == "```sh"
                lines = []
                continue
            }
            guard inBlock else { continue }
            lines.append(line)
            if line.contains(marker) { found = true }
        }
        return nil
    }

    @Test("S16 the README's sl-devserver script revokes 3,000 sessions from a pipe and its checks hold")
    func testS16TheReadmeDevServerScriptRunsAsWritten() throws {
        let readme = try String(contentsOfFile: repositoryRoot + "/README.md", encoding: .utf8)
        let script = try #require(Self.block(readme, containing: "--auto-approve alice --log requests.jsonl"))
        let helper = try #require(readme.split(separator: "\n").first { $0.hasPrefix("dev() {") })
        let dir = TemporaryDirectory("readme-script")
        let run = try Tools.run(
            "/bin/sh", ["-c", helper + "\n" + script], home: dir.path,
            environment: ["PATH": "\(Tools.binDirectory):/usr/bin:/bin", "XDG_RUNTIME_DIR": dir.file("run")],
            workingDirectory: dir.path)
        #expect(run.status == 0, "\(run.stderrText)")
        let lines = run.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "the sign-in, the summary, the second listing's count and the revocations check: \(lines)")
        guard lines.count == 4 else { return }
        #expect(try JSON.parse(Array(lines[0].utf8))["state"]?.stringValue == "loggedIn")
        let summary = try JSON.parse(Array(lines[1].utf8))["summary"]
        #expect(summary?["revoked"]?.intValue == 3_000 && summary?["failed"]?.intValue == 0, "\(lines)")
        #expect(lines.suffix(2).map { $0.trimmingWhitespace() } == ["0", "0"], "\(lines)")
    }
}
