import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
@testable import TasksCommands

/// sl-tasks run in-process through `ToolMain.execute` with captured streams, an injected clock and an
/// environment pointing into a temporary directory: the command tree, the typed options and their errors
/// without spawning the binary (SLTasksTests runs the binary itself).
@Suite struct TasksInProcessTests {
    let home = TemporaryDirectory("sl-tasks-inprocess")
    var workspacePath: String { home.path + "/starline/data/workspace.json" }
    static let now = "2026-11-30T08:00:00Z"

    func run(
        _ words: [String], stdin: [UInt8] = [], environment: [String: String] = [:],
        clock: Timestamp? = nil
    ) -> (status: StarlineCore.ExitStatus, stdout: String, stderr: String) {
        runTasks(words, home: home, stdin: stdin, environment: environment, now: clock)
    }

    func lines(_ text: String) throws -> [JSON] {
        try text.split(separator: "\n").map { try JSON.parse(String($0)) }
    }

    func error(_ stderr: String) throws -> JSON { try firstError(stderr) }

    @Test("add then list --jsonl with a fixed --now: relative dates count from --now")
    func addThenList() throws {
        let added = run(["add", "Pay", "rent", "--due", "+36h", "-t", "home,bills", "--now", Self.now])
        #expect(added.status == .ok, "\(added.stderr)")
        let task = try JSON.parse(added.stdout)
        #expect(task["title"]?.stringValue == "Pay rent")
        #expect(task["due"]?.stringValue == "2026-12-01T20:00:00Z")
        #expect(task["createdAt"]?.stringValue == Self.now)
        #expect(task["tags"] == .array([.string("home"), .string("bills")]))

        let listed = run(["list", "--jsonl", "--due-within", "36h", "--now", Self.now])
        #expect(listed.status == .ok, "\(listed.stderr)")
        let records = try lines(listed.stdout)
        #expect(records.count == 1 && records.first?["id"] == task["id"])
        // One second later than the window: nothing.
        #expect(run(["list", "--jsonl", "--due-within", "36h", "--now", "2026-11-30T07:59:59Z"]).stdout.isEmpty)
        // Without --jsonl: piped, still JSON Lines (every list's one shape); -o json one array.
        #expect(try lines(run(["list", "--now", Self.now]).stdout).count == 1)
        #expect(try JSON.parse(run(["list", "-o", "json", "--now", Self.now]).stdout).arrayValue?.count == 1)
    }

    @Test("without --now the streams' clock is the current time")
    func injectedClock() throws {
        let clock = Timestamp(rfc3339: Self.now)!
        let added = run(["add", "soon", "--due", "+1h"], clock: clock)
        #expect(added.status == .ok, "\(added.stderr)")
        #expect(try JSON.parse(added.stdout)["createdAt"]?.stringValue == Self.now)
        #expect(try lines(run(["list", "--jsonl", "--overdue"], clock: clock).stdout).isEmpty)
        #expect(try lines(run(["list", "--jsonl", "--overdue"], clock: clock + 7200).stdout).count == 1)
    }

    @Test(
        "bad --keep and --due-within values are usage errors naming the option, and nothing is written",
        arguments: [
            (["recent", "add", "https://a.example/", "--keep", "0"], "keep"),
            (["recent", "add", "https://a.example/", "--keep", "many"], "keep"),
            (["list", "--due-within", "3x"], "due-within"),
            (["add", "x", "--due", "someday"], "due"),
            (["list", "--now", "yesterday-ish"], "now")
        ])
    func badValues(_ words: [String], _ option: String) throws {
        let r = run(words)
        #expect(r.status == .usage)
        #expect(r.stdout.isEmpty)
        let error = try error(r.stderr)
        #expect(error["code"]?.stringValue == "USAGE")
        #expect(error["details"]?["option"]?.stringValue == option)
        #expect(error["message"]?.stringValue?.contains("--\(option)") == true)
        #expect(r.stderr.contains("Try 'sl-tasks"))
        #expect(!FileManager.default.fileExists(atPath: workspacePath))
    }

    @Test("import - reads the injected standard input; a duplicate URL is not added twice")
    func importFromStandardInput() throws {
        let html = """
            <!DOCTYPE NETSCAPE-Bookmark-file-1>
            <DL><p>
            <DT><A HREF="https://Example.com/docs/?utm_source=x" ADD_DATE="1764489600">Docs</A>
            <DT><A HREF="https://example.com/docs">Docs again</A>
            <DT><A HREF="javascript:alert(1)">Not a site</A>
            </DL><p>
            """
        let imported = run(["import", "-"], stdin: Array(html.utf8))
        #expect(imported.status == .ok, "\(imported.stderr)")
        let counts = try JSON.parse(imported.stdout)
        #expect(counts["format"]?.stringValue == "netscape")
        #expect(counts["websites"]?["added"]?.intValue == 1)
        #expect(counts["websites"]?["duplicates"]?.intValue == 1)
        #expect(counts["websites"]?["skipped"]?.intValue == 1)
        let sites = try lines(run(["sites", "list", "--jsonl"]).stdout)
        #expect(sites.count == 1)
        #expect(sites.first?["url"]?.stringValue == "https://Example.com/docs/?utm_source=x")
        #expect(sites.first?["normalizedUrl"]?.stringValue == "https://example.com/docs")
        #expect(sites.first?["createdAt"]?.stringValue == "2025-11-30T08:00:00Z")

        // Notes from standard input too.
        let noted = run(["add", "read", "--notes", "-", "--now", Self.now], stdin: Array("line 1\nline 2\n".utf8))
        #expect(try JSON.parse(noted.stdout)["notes"]?.stringValue == "line 1\nline 2")
    }

    @Test("STARLINE_WORKSPACE from the injected environment chooses the file; --workspace wins over it")
    func workspaceSelection() throws {
        let viaEnv = home.path + "/env/ws.json", viaFlag = home.path + "/flag/ws.json"
        // The directory of a chosen file must exist (only the default <data> directory is created).
        for dir in ["/env", "/flag"] { try FileManager.default.createDirectory(atPath: home.path + dir, withIntermediateDirectories: true) }
        #expect(run(["add", "a"], environment: ["STARLINE_WORKSPACE": viaEnv]).status == .ok)
        #expect(run(["add", "b", "--workspace", viaFlag], environment: ["STARLINE_WORKSPACE": viaEnv]).status == .ok)
        #expect(FileManager.default.fileExists(atPath: viaEnv) && FileManager.default.fileExists(atPath: viaFlag))
        #expect(!FileManager.default.fileExists(atPath: workspacePath))
        let check = run(["check"], environment: ["STARLINE_WORKSPACE": viaEnv])
        #expect(check.status == .ok)
        #expect(try JSON.parse(check.stdout)["file"]?.stringValue == viaEnv)
        #expect(try JSON.parse(check.stdout)["tasks"]?.intValue == 1)
    }

    @Test("dispatch follows the command tree: every command runs, an unknown one is a usage error")
    func dispatch() throws {
        let id = try #require(try JSON.parse(run(["add", "t", "--now", Self.now]).stdout)["id"]?.stringValue)
        let prefix = String(id.prefix(8))
        for words in [
            ["show", prefix], ["edit", prefix, "--title", "u"], ["done", prefix], ["undo", prefix],
            ["sites", "add", "https://example.com/"], ["sites", "list"], ["sites", "dedup", "--dry-run"],
            ["sites", "rm", "https://EXAMPLE.com"], ["recent", "add", "https://example.com/"], ["recent", "list"],
            ["recent", "clear"], ["export", "-f", "taskwarrior"], ["check"], ["rm", prefix]
        ] {
            let r = run(words + ["--now", Self.now])
            #expect(r.status == .ok, "\(words): \(r.stderr)")
        }
        let unknown = run(["sites", "frob"])
        #expect(unknown.status == .usage && unknown.stderr.contains("unknown command 'frob'"))
        #expect(run(["sites"]).status == .usage)
    }
}
