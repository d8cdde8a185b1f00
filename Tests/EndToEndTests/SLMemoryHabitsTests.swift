import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// Small habits of sl-memory (W2): a passphrase typed on a terminal gets three tries, `get` without a name
/// takes a note's only attachment, and `add --lines` titles each note by its line. The built executable,
/// on real files; the terminal is a real pseudo-terminal.
@Suite struct SLMemoryHabitsTests {
    typealias Home = SLMemoryTests.Home

    /// sl-memory ARGS on a terminal, without STARLINE_MEMORY_PASSPHRASE, typing `answers`.
    func onTerminal(_ h: Home, _ arguments: [String], answers: [String]) throws -> (run: ToolRun, prompts: [String]) {
        // The tests' pty driver (agepty.py) types the answers in order, one at each passphrase prompt, and
        // leaves a prompt after the last unanswered until its deadline (exit 124).
        let answersJSON = String(decoding: try JSONSerialization.data(withJSONObject: answers), as: UTF8.self)
        var environment = h.environment
        environment["STARLINE_MEMORY_PASSPHRASE"] = nil
        environment["STARLINE_KEYRING"] = "no"
        let run = try Tools.run(
            "/usr/bin/python3", [SLMemoryTests.agePty, "--answers", answersJSON, Tools.path("sl-memory")] + arguments,
            home: h.home.path, environment: environment)
        // Each prompt as shown (a prompt follows the unechoed answer on the same line): "Passphrase for DIR: " or
        // "Passphrase: ", a retry's after "Wrong passphrase, try again. ". Error messages say "passphrase".
        let pieces = run.stderrText.components(separatedBy: "Passphrase")
        let prompts = zip(pieces, pieces.dropFirst()).filter { $1.hasPrefix(" for ") || $1.hasPrefix(": ") }.map {
            $0.0.hasSuffix("try again. ") ? "retry" : "first"
        }
        return (run, prompts)
    }

    @Test("W2 a passphrase typed on a terminal gets three tries: two wrong then the right one opens the vault")
    func terminalPassphraseRetries() throws {
        let h = Home()
        try h.initialize()
        try h.ok(["add", "--title", "kept", "a note"])
        let (run, prompts) = try onTerminal(h, ["list"], answers: ["wrong one", "wrong two", h.passphrase])
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(prompts.count == 3, "\(run.stderrText)")
        #expect(prompts == ["first", "retry", "retry"], "\(run.stderrText)")
        #expect(run.stderrText.contains("kept"), "the list is printed on the terminal: \(run.stderrText)")

        // unlock (the agent's start) retries the same way.
        let unlock = try onTerminal(h, ["unlock", "--ttl", "1m"], answers: ["nope", h.passphrase])
        defer { _ = try? h.run(["lock"]) }
        #expect(unlock.run.status == 0 && unlock.prompts.count == 2, "\(unlock.run.stderrText)")
    }

    @Test("W2 three wrong passphrases on a terminal fail with WRONG_PASSPHRASE (exit 13), and a fourth is never asked")
    func terminalPassphraseGivesUpAfterThree() throws {
        let h = Home()
        try h.initialize()
        let (run, prompts) = try onTerminal(h, ["list"], answers: ["one", "two", "three", h.passphrase])
        #expect(run.status == 13, "\(run.stderrText)")
        #expect(prompts.count == 3, "\(run.stderrText)")
        #expect(run.stderrText.contains("WRONG_PASSPHRASE"), "\(run.stderrText)")
    }

    @Test("W2 a wrong passphrase from a file, a descriptor or the environment fails at once, even with a terminal there")
    func nonTerminalPassphraseFailsAtOnce() throws {
        let h = Home()
        try h.initialize()
        let file = h.home.file("pass")
        try "wrong\n".write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        let fromFile = try onTerminal(h, ["list", "--passphrase-file", file], answers: [h.passphrase])
        #expect(fromFile.run.status == 13 && fromFile.prompts.isEmpty, "\(fromFile.run.stderrText)")
        let fromEnvironment = try h.run(["list"], environment: ["STARLINE_MEMORY_PASSPHRASE": "wrong"])
        #expect(fromEnvironment.status == 13 && fromEnvironment.errorCode == "WRONG_PASSPHRASE", "\(fromEnvironment.stderrText)")
        let fromDescriptor = try h.run(
            ["list", "--passphrase-fd", "0"], stdin: Array("wrong\n".utf8), environment: ["STARLINE_MEMORY_PASSPHRASE": ""])
        #expect(fromDescriptor.status == 13 && fromDescriptor.errorCode == "WRONG_PASSPHRASE", "\(fromDescriptor.stderrText)")
    }

    @Test(
        """
        W2 get without a name streams the note's only attachment; with none it is NOT_FOUND and with several a usage \
        error listing them
        """)
    func getWithoutAName() throws {
        let h = Home()
        try h.initialize()
        let one = try #require(try h.ok(["add", "one attachment"])["id"]?.stringValue)
        let file = h.home.file("scan.txt")
        try "the only attachment\n".write(toFile: file, atomically: true, encoding: .utf8)
        try h.ok(["attach", one, file])
        let got = try h.run(["get", one])
        #expect(got.status == 0 && got.stdoutText == "the only attachment\n", "\(got.stderrText)")
        let out = h.home.file("out.txt")
        let toFile = try h.run(["get", one, "-o", out])
        #expect(
            toFile.status == 0 && (try? String(contentsOfFile: out, encoding: .utf8)) == "the only attachment\n", "\(toFile.stderrText)")

        let none = try #require(try h.ok(["add", "no attachment"])["id"]?.stringValue)
        let missing = try h.run(["get", none])
        #expect(missing.status == 6 && missing.errorCode == "NOT_FOUND", "\(missing.stderrText)")
        #expect(try missing.error()["error"]?["details"]?["attachments"] == .array([]))

        try h.ok(["attach", one, "-", "--name", "second.bin"], stdin: [1, 2, 3])
        let several = try h.run(["get", one])
        #expect(several.status == 2 && several.stdout.isEmpty, "\(several.stderrText)")
        let message = try several.error()["error"]?["message"]?.stringValue ?? ""
        #expect(message.contains("'scan.txt'") && message.contains("'second.bin'"), "\(message)")
        #expect(try several.error()["error"]?["details"]?["attachments"] == .array([.string("scan.txt"), .string("second.bin")]))
        // Named, either one still comes out.
        #expect(try h.run(["get", one, "second.bin"]).stdout == [1, 2, 3])
    }

    @Test("W2 add --lines titles each note with its line (trimmed, a long one cut with …); --title still wins")
    func addLinesGivesTitles() throws {
        let h = Home()
        try h.initialize()
        let long = String(repeating: "word ", count: 40)
        let added = try h.run(["add", "--lines", "--jsonl"], stdin: Array("  buy milk  \n\n\(long)\nwifi: starline-guest\n".utf8))
        #expect(added.status == 0, "\(added.stderrText)")
        let notes = try added.jsonLines()
        #expect(notes.map { $0["title"]?.stringValue ?? "" }.count == 3)
        #expect(notes[0]["title"]?.stringValue == "buy milk" && notes[0]["body"]?.stringValue == "  buy milk  ")
        let cut = notes[1]["title"]?.stringValue ?? ""
        #expect(cut.count <= 80 && cut.hasSuffix("…") && long.hasPrefix(String(cut.dropLast())), "\(cut)")
        #expect(notes[2]["title"]?.stringValue == "wifi: starline-guest")
        // What list shows (titles are kept in the vault, not only printed).
        let listed = try h.list(["list"]).compactMap { $0["title"]?.stringValue }
        // Notes added in the same second list in no particular order among themselves.
        #expect(listed.sorted() == ["buy milk", cut, "wifi: starline-guest"].sorted())
        let titled = try h.run(["add", "--lines", "--jsonl", "--title", "batch"], stdin: Array("a\nb\n".utf8))
        #expect(try titled.jsonLines().map { $0["title"]?.stringValue } == ["batch", "batch"])
    }
}
