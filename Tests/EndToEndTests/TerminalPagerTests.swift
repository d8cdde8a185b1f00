import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// A table on a terminal goes through the user's pager, as gh's and git's output does (README, Conventions:
/// "Tables"): STARLINE_PAGER, else PAGER; empty or `cat` is none; less gets LESS=FRX unless LESS is set;
/// piped output and JSON are never paged. Run on a real pseudo-terminal (`script`), as a person sees it.
@Suite struct TerminalPagerTests {
    let home = TemporaryDirectory("sl-pager")

    func onTerminal(_ command: String) throws -> ToolRun { try Tools.onTerminal(command, home: home.path) }

    /// A pager that keeps what it was given and the variables it saw, in files named after `tag`.
    func pager(_ tag: String) throws -> String {
        let script = home.file("pager-\(tag).sh")
        try """
        printf '%s|%s|%s\\n' "${LESS-unset}" "${LV-unset}" "${STARLINE_HOME-unset}" > '\(home.file("env-\(tag)"))'
        cat > '\(home.file("paged-\(tag)"))'
        """.write(toFile: script, atomically: true, encoding: .utf8)
        // Run through sh: a script just written can still be open for writing elsewhere (ETXTBSY).
        return "sh '\(script)'"
    }

    func paged(_ tag: String) -> String? { try? String(contentsOfFile: home.file("paged-\(tag)"), encoding: .utf8) }
    func pagerEnvironment(_ tag: String) -> String? { try? String(contentsOfFile: home.file("env-\(tag)"), encoding: .utf8) }

    @Test("W1: a table on a terminal goes through STARLINE_PAGER, else PAGER; empty or cat is none; pipes and JSON never")
    func w1TableOnTerminalGoesThroughThePager() throws {
        for title in ["Pay rent", "Water plants"] {
            #expect(try Tools.run("sl-tasks", ["add", title], home: home.path).status == 0)
        }
        let bin = Tools.path("sl-tasks")

        // STARLINE_PAGER gets the whole table; nothing reaches the terminal around it; less's defaults are
        // set and nothing of ours (STARLINE_*) is passed on.
        let starline = try onTerminal("STARLINE_PAGER=\"\(try pager("own"))\" PAGER=false '\(bin)' list")
        #expect(starline.status == 0, "\(starline.stderrText)")
        let table = try #require(paged("own"), "the pager never ran: \(starline.stdoutText)")
        #expect(table.hasPrefix("NUMBER  ID ") && table.contains("Pay rent") && table.contains("Water plants"), "\(table)")
        #expect(!starline.stdoutText.contains("Pay rent") && starline.stderr.isEmpty, "\(starline.stdoutText)")
        #expect(pagerEnvironment("own") == "FRX|-c|unset\n")

        // PAGER alone is honoured, and a LESS of the user's is kept.
        let plain = try onTerminal("LESS=S PAGER=\"\(try pager("plain"))\" '\(bin)' list")
        #expect(plain.status == 0 && paged("plain") == table && pagerEnvironment("plain") == "S|-c|unset\n")

        // An empty STARLINE_PAGER, or cat, means no pager even with PAGER set: the table is printed.
        for none in ["STARLINE_PAGER=", "STARLINE_PAGER=cat", "PAGER=' cat '"] {
            let direct = try onTerminal("\(none) PAGER=\"${PAGER:-\(try pager("none"))}\" '\(bin)' list")
            #expect(direct.status == 0 && direct.stdoutText == table, "\(none): \(direct.stdoutText)")
        }
        #expect(paged("none") == nil)

        // Piped output and JSON on a terminal are data, never paged.
        let piped = try onTerminal("PAGER=\"\(try pager("piped"))\" '\(bin)' list | cat")
        #expect(piped.status == 0 && piped.stdoutText.hasPrefix("{\"id\":") && paged("piped") == nil, "\(piped.stdoutText)")
        let json = try onTerminal("PAGER=\"\(try pager("json"))\" '\(bin)' list -o json")
        #expect(json.status == 0 && json.stdoutText.hasPrefix("[") && paged("json") == nil)
        // The real less, as a user has it: LESS=FRX makes it print a table that fits on one screen and quit
        // (a less waiting for a key would be stopped by timeout, status 124).
        try #require(Tools.available("less"), "less is needed for this test; run scripts/bootstrap")
        let less = try Tools.onTerminal("PAGER=less timeout --foreground 20 '\(bin)' list", home: home.path, term: "xterm")
        #expect(less.status == 0 && less.stdoutText.contains("Water plants"), "\(less.status) \(less.stdoutText.debugDescription)")
        // An empty list prints nothing and starts no pager.
        let empty = try onTerminal("PAGER=\"\(try pager("empty"))\" '\(bin)' list --tag nothing-has-it")
        #expect(empty.status == 0 && empty.stdoutText.isEmpty && paged("empty") == nil, "\(empty.stdoutText)")
    }

    @Test("W1: quitting the pager before the table ends ends the tool as a closed pipe does: nothing on stderr")
    func w1QuittingThePagerEndsTheToolQuietly() throws {
        let bin = Tools.path("sl-tasks")
        #expect(try Tools.run("sl-tasks", ["import", "-"], stdin: Array(batch().utf8), home: home.path).status == 0)
        let quit = try onTerminal("PAGER='head -c 100 >/dev/null' '\(bin)' list --all")
        #expect(quit.stderr.isEmpty && quit.stdoutText.isEmpty, "\(quit.stderrText) \(quit.stdoutText)")
        #expect(quit.status == 141, "killed by SIGPIPE, as git log under a quit less")
    }

    /// 3,000 tasks as Taskwarrior exports them (`task export`), enough that the table outgrows the pipe's
    /// buffer after the pager has gone.
    func batch() -> String {
        let tasks = (0..<3000).map { n in
            "{\"uuid\":\"00000000-0000-4000-8000-\(String(repeating: "0", count: 12 - String(n).count))\(n)\","
                + "\"description\":\"task \(n) with a long title to fill the pipe\",\"status\":\"pending\",\"entry\":\"20261201T000000Z\"}"
        }
        return "[" + tasks.joined(separator: ",") + "]\n"
    }
}
