import Foundation
import StarlineCore
import StarlineTestSupport
import StarlineWorkspace
import Testing

/// End-to-end tests of the built `sl-tasks` with a temporary STARLINE_HOME.
@Suite struct SLTasksTests {
    let home = TemporaryDirectory("sl-tasks-e2e")

    var dataDir: String { home.path + "/starline/data" }
    var workspacePath: String { dataDir + "/workspace.json" }

    func tasks(_ arguments: [String], stdin: [UInt8]? = nil, environment: [String: String] = [:]) throws -> ToolRun {
        try Tools.run("sl-tasks", arguments, stdin: stdin, home: home.path, environment: environment)
    }

    /// Runs and requires exit 0; returns stdout as one JSON document.
    func ok(_ arguments: [String], stdin: [UInt8]? = nil, environment: [String: String] = [:]) throws -> JSON {
        let run = try tasks(arguments, stdin: stdin, environment: environment)
        try #require(run.status == 0, "sl-tasks \(arguments.joined(separator: " ")) exited \(run.status): \(run.stderrText)")
        return try run.json()
    }

    func lines(_ arguments: [String], environment: [String: String] = [:]) throws -> [JSON] {
        let run = try tasks(arguments + ["--jsonl"], environment: environment)
        try #require(run.status == 0, "sl-tasks \(arguments.joined(separator: " ")) exited \(run.status): \(run.stderrText)")
        return try run.jsonLines()
    }

    func titles(_ arguments: [String], environment: [String: String] = [:]) throws -> [String] {
        try lines(arguments, environment: environment).compactMap { $0["title"]?.stringValue }
    }

    func writeWorkspace(_ text: String) throws {
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        try text.write(toFile: workspacePath, atomically: false, encoding: .utf8)
    }

    func fileBytes(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { Array($0) } }

    func mode(_ path: String) -> Int? { (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? nil }

    /// A workspace whose tasks are due at the given instants (title → RFC 3339), all open.
    func workspace(dues: [(String, String?)]) -> String {
        let tasks = dues.enumerated().map { i, entry in
            let due = entry.1.map { "\"\($0)\"" } ?? "null"
            return
                #"{"id":"\#(String(format: "%08x", i + 1))-0000-4000-8000-000000000000","title":"\#(entry.0)","notes":"","tags":[],"due":\#(due),"done":false,"doneAt":null,"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z"}"#
        }
        return #"{"version":1,"tasks":[\#(tasks.joined(separator: ","))],"websites":[],"recents":[]}"#
    }

    /// A task record as the commands print it: the id, its working-set number, then the documented fields.
    static let keys = ["id", "number", "title", "notes", "tags", "due", "done", "doneAt", "createdAt", "updatedAt"]

    // MARK: tasks

    @Test("add prints the full record; show, edit, done, undo and rm work by unique id prefix")
    func taskLifecycle() throws {
        let added = try ok([
            "add", "Pay", "the", "rent", "--due", "2026-12-01T09:00:00+01:00", "--tag", "home,bills", "-t", "home",
            "--notes", "by transfer", "--now", "2026-11-30T08:00:00Z"
        ])
        #expect(added.objectValue?.map(\.0) == Self.keys)
        #expect(added["title"]?.stringValue == "Pay the rent")
        #expect(added["due"]?.stringValue == "2026-12-01T08:00:00Z")
        #expect(added["tags"] == .array([.string("home"), .string("bills")]))
        #expect(added["notes"]?.stringValue == "by transfer")
        #expect(added["done"] == .bool(false))
        #expect(added["doneAt"] == .null)
        #expect(added["createdAt"]?.stringValue == "2026-11-30T08:00:00Z")
        let id = try #require(added["id"]?.stringValue)
        #expect(id.count == 36)
        // Six characters, or eight when the six are all digits: those would be a working-set number (one to seven
        // digits, Workspace.taskIndex), and a random id begins with six digits about one time in seventeen.
        let prefix = String(id.prefix(id.prefix(6).allSatisfy(\.isNumber) ? 8 : 6))

        #expect(try ok(["show", prefix]) == added)
        let edited = try ok(
            [
                "edit", prefix, "--title", "Pay rent", "--untag", "bills", "--tag", "urgent", "--no-due",
                "--notes", "-", "--now", "2026-11-30T09:00:00Z"
            ], stdin: Array("line 1\nline 2\n".utf8))
        #expect(edited["id"]?.stringValue == id)
        #expect(edited["title"]?.stringValue == "Pay rent")
        #expect(edited["tags"] == .array([.string("home"), .string("urgent")]))
        #expect(edited["due"] == .null)
        #expect(edited["notes"]?.stringValue == "line 1\nline 2")
        #expect(edited["updatedAt"]?.stringValue == "2026-11-30T09:00:00Z")
        #expect(edited["createdAt"]?.stringValue == "2026-11-30T08:00:00Z")

        let done = try ok(["done", prefix, "--now", "2026-11-30T10:00:00Z"])
        #expect(done["done"] == .bool(true))
        #expect(done["doneAt"]?.stringValue == "2026-11-30T10:00:00Z")
        let again = try ok(["done", prefix, "--now", "2026-11-30T11:00:00Z"])
        #expect(again["doneAt"]?.stringValue == "2026-11-30T10:00:00Z")
        #expect(try titles(["list"]).isEmpty)
        #expect(try titles(["list", "--done"]) == ["Pay rent"])
        let undone = try ok(["undo", id.uppercased()])
        #expect(undone["done"] == .bool(false))
        #expect(undone["doneAt"] == .null)
        #expect(try titles(["list"]) == ["Pay rent"])

        let removed = try ok(["rm", prefix])
        #expect(removed["id"]?.stringValue == id)
        #expect(try titles(["list", "--all"]).isEmpty)
        let missing = try tasks(["show", prefix])
        #expect(missing.status == 6)
        #expect(missing.errorCode == "NOT_FOUND")
    }

    @Test("an ambiguous id prefix exits 2 listing every candidate, and changes nothing")
    func ambiguousPrefix() throws {
        try writeWorkspace(
            """
            {"version":1,"tasks":[
            {"id":"abcd1111-0000-4000-8000-000000000001","title":"first","notes":"","tags":[],"due":null,"done":false,"doneAt":null,"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z"},
            {"id":"abcd2222-0000-4000-8000-000000000002","title":"second","notes":"","tags":[],"due":null,"done":false,"doneAt":null,"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z"},
            {"id":"ffff0000-0000-4000-8000-000000000003","title":"third","notes":"","tags":[],"due":null,"done":false,"doneAt":null,"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z"}],
            "websites":[],"recents":[]}
            """)
        let before = fileBytes(workspacePath)
        for command in [["show", "abcd"], ["done", "ABCD"], ["rm", "abc"], ["edit", "a", "--title", "x"]] {
            let run = try tasks(command)
            #expect(run.status == 2, "\(command)")
            let error = try run.error()["error"]
            #expect(error?["code"]?.stringValue == "AMBIGUOUS_ID")
            let candidates = error?["details"]?["candidates"]?.arrayValue ?? []
            #expect(
                candidates.compactMap { $0["id"]?.stringValue } == [
                    "abcd1111-0000-4000-8000-000000000001", "abcd2222-0000-4000-8000-000000000002"
                ])
            #expect(candidates.compactMap { $0["title"]?.stringValue } == ["first", "second"])
        }
        #expect(fileBytes(workspacePath) == before)
        #expect(try ok(["show", "abcd2"])["title"]?.stringValue == "second")
        #expect(try ok(["show", "f"])["title"]?.stringValue == "third")
    }

    @Test("bad dates, durations, tags and URLs are usage errors (exit 2)")
    func usageErrors() throws {
        for args in [
            ["add", "x", "--due", "someday"], ["list", "--due-within", "3x"], ["list", "--due-before", "2026-02-30"],
            ["add", "x", "--tag", "two words"], ["sites", "add", "example.com"], ["recent", "add", "javascript:alert(1)"],
            ["add", "  "], ["edit", "abc"], ["list", "--now", "yesterday-ish"]
        ] {
            let run = try tasks(args)
            #expect(run.status == 2, "\(args): \(run.stderrText)")
            #expect(run.errorCode == "USAGE" || run.errorCode == "INVALID_URL", "\(args): \(run.stderrText)")
        }
        #expect(!FileManager.default.fileExists(atPath: workspacePath))
    }

    // MARK: deadline filters

    /// Start of today / tomorrow (UTC instants) for now = 2026-11-30T12:00:00Z in each zone.
    @Test(
        "each filter at its boundaries, in several time zones",
        arguments: [
            ("UTC", "2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z"),
            ("Asia/Tokyo", "2026-11-29T15:00:00Z", "2026-11-30T15:00:00Z"),
            ("America/New_York", "2026-11-30T05:00:00Z", "2026-12-01T05:00:00Z")
        ])
    func filterBoundaries(zone: String, startOfToday: String, startOfTomorrow: String) throws {
        let now = "2026-11-30T12:00:00Z"
        let sod = Timestamp(rfc3339: startOfToday)!, tom = Timestamp(rfc3339: startOfTomorrow)!, n = Timestamp(rfc3339: now)!
        let in1d = n + 86400
        try writeWorkspace(
            workspace(dues: [
                ("sod-1", (sod - 1).rfc3339), ("sod", sod.rfc3339), ("now-1", (n - 1).rfc3339), ("now", n.rfc3339),
                ("tom-1", (tom - 1).rfc3339), ("tom", tom.rfc3339), ("now+1d", in1d.rfc3339), ("now+1d+1", (in1d + 1).rfc3339),
                ("none", nil)
            ]))
        let env = ["TZ": zone]
        func list(_ filter: [String]) throws -> Set<String> { Set(try titles(["list", "--now", now] + filter, environment: env)) }
        #expect(try list(["--overdue"]) == ["sod-1", "sod", "now-1"])
        #expect(try list(["--today"]) == ["sod", "now-1", "now", "tom-1"])
        #expect(try list(["--due-within", "1d"]) == ["now", "tom-1", "tom", "now+1d"])
        #expect(try list(["--due-within", "24h"]) == ["now", "tom-1", "tom", "now+1d"])
        #expect(try list(["--due-before", "tomorrow"]) == ["sod-1", "sod", "now-1", "now", "tom-1"])
        #expect(try list(["--due-after", "today"]) == ["now-1", "now", "tom-1", "tom", "now+1d", "now+1d+1"])
        #expect(try list(["--due-before", now]) == ["sod-1", "sod", "now-1"])
        #expect(try list(["--due-after", now]) == ["tom-1", "tom", "now+1d", "now+1d+1"])
        #expect(try list(["--no-due"]) == ["none"])
        #expect(try list(["--today", "--overdue"]) == ["sod", "now-1"])
        // Order: by due date, then those without one.
        #expect(try titles(["list", "--now", now], environment: env).last == "none")
        #expect(try titles(["list", "--now", now], environment: env).first == "sod-1")
    }

    @Test("--today and --due-within across the DST changes of Europe/Berlin (23- and 25-hour days)")
    func daylightSaving() throws {
        let env = ["TZ": "Europe/Berlin"]
        // Spring forward: 2026-03-29 02:00 CET → 03:00 CEST. The day runs 2026-03-28T23:00Z … 2026-03-29T22:00Z.
        try writeWorkspace(
            workspace(dues: [
                ("before", "2026-03-28T22:59:59Z"), ("first", "2026-03-28T23:00:00Z"), ("last", "2026-03-29T21:59:59Z"),
                ("after", "2026-03-29T22:00:00Z"), ("23h", "2026-03-29T10:00:00Z"), ("23h+1s", "2026-03-29T10:00:01Z")
            ]))
        #expect(
            Set(try titles(["list", "--today", "--now", "2026-03-29T12:00:00+02:00"], environment: env)) == [
                "first", "last", "23h", "23h+1s"
            ])
        // +1d from Saturday noon is Sunday noon local time: 23 hours later.
        #expect(
            Set(try titles(["list", "--due-within", "1d", "--now", "2026-03-28T12:00:00+01:00"], environment: env)) == [
                "before", "first", "23h"
            ])
        #expect(
            Set(try titles(["list", "--due-within", "24h", "--now", "2026-03-28T12:00:00+01:00"], environment: env)) == [
                "before", "first", "23h", "23h+1s"
            ])

        // Fall back: 2026-10-25 03:00 CEST → 02:00 CET. The day runs 2026-10-24T22:00Z … 2026-10-25T23:00Z.
        try writeWorkspace(
            workspace(dues: [
                ("before", "2026-10-24T21:59:59Z"), ("first", "2026-10-24T22:00:00Z"), ("last", "2026-10-25T22:59:59Z"),
                ("after", "2026-10-25T23:00:00Z")
            ]))
        #expect(Set(try titles(["list", "--today", "--now", "2026-10-25T12:00:00+01:00"], environment: env)) == ["first", "last"])

        // Date input: calendar days keep the wall-clock time, hours are exact.
        let base = ["--now", "2026-03-28T12:00:00+01:00"]
        #expect(try ok(["add", "a", "--due", "+1d"] + base, environment: env)["due"]?.stringValue == "2026-03-29T10:00:00Z")
        #expect(try ok(["add", "b", "--due", "+24h"] + base, environment: env)["due"]?.stringValue == "2026-03-29T11:00:00Z")
        #expect(try ok(["add", "c", "--due", "tomorrow"] + base, environment: env)["due"]?.stringValue == "2026-03-28T23:00:00Z")
        #expect(try ok(["add", "d", "--due", "tomorrow 12:00"] + base, environment: env)["due"]?.stringValue == "2026-03-29T10:00:00Z")
    }

    @Test("date input: words, weekdays, ISO dates and date-times, read in TZ")
    func dateInput() throws {
        let now = ["--now", "2026-11-30T12:00:00Z"]  // Monday, 21:00 in Tokyo
        let expectations: [(String, String)] = [
            ("today", "2026-11-29T15:00:00Z"), ("tomorrow", "2026-11-30T15:00:00Z"), ("yesterday", "2026-11-28T15:00:00Z"),
            ("monday", "2026-12-06T15:00:00Z"), ("Fri", "2026-12-03T15:00:00Z"), ("friday 17:30", "2026-12-04T08:30:00Z"),
            ("+3d", "2026-12-03T12:00:00Z"), ("+2w", "2026-12-14T12:00:00Z"), ("+36h", "2026-12-02T00:00:00Z"),
            ("2026-12-24", "2026-12-23T15:00:00Z"), ("2026-12-24T18:00", "2026-12-24T09:00:00Z"),
            ("2026-12-24T18:00:00+01:00", "2026-12-24T17:00:00Z"), ("2026-12-24T18:00:00Z", "2026-12-24T18:00:00Z"),
            ("now", "2026-11-30T12:00:00Z")
        ]
        for (input, expected) in expectations {
            let record = try ok(["add", "t", "--due", input] + now, environment: ["TZ": "Asia/Tokyo"])
            #expect(record["due"]?.stringValue == expected, "\(input)")
        }
        // The same word in another zone is another instant.
        #expect(try ok(["add", "t", "--due", "tomorrow"] + now, environment: ["TZ": "UTC"])["due"]?.stringValue == "2026-12-01T00:00:00Z")
    }

    @Test("a task without a due date is never overdue, and done tasks only show with --done or --all")
    func noDueNeverOverdue() throws {
        _ = try ok(["add", "no date"])
        _ = try ok(["add", "past", "--due", "2000-01-01"])
        let doneID = try #require(try ok(["add", "done past", "--due", "2000-01-01"])["id"]?.stringValue)
        _ = try ok(["done", doneID])
        #expect(try titles(["list", "--overdue"]) == ["past"])
        #expect(try titles(["list", "--overdue", "--done"]) == ["done past"])
        #expect(try titles(["list", "--overdue", "--all"]) == ["past", "done past"])
        #expect(try titles(["list", "--no-due", "--all"]) == ["no date"])
    }

    @Test("tags filter with AND; list -o json is one JSON array of whole records")
    func tagsAndArray() throws {
        _ = try ok(["add", "a", "-t", "work"])
        _ = try ok(["add", "b", "-t", "work,urgent"])
        _ = try ok(["add", "c", "-t", "urgent"])
        #expect(try titles(["list", "--tag", "work"]) == ["a", "b"])
        #expect(try titles(["list", "--tag", "work", "--tag", "urgent"]) == ["b"])
        let array = try tasks(["list", "-o", "json"])
        #expect(try array.json().arrayValue?.count == 3)
        for record in try array.json().arrayValue ?? [] { #expect(record.objectValue?.map(\.0) == Self.keys) }
        #expect(try tasks(["list", "--compact"]).jsonLines().map { $0.objectValue?.map(\.0) } == Array(repeating: Self.keys, count: 3))
    }

    // MARK: W1 / W9: the store

    @Test("W1 workspace.json is private: mode 0600 in a 0700 directory, .bak beside it, no temporary files left")
    func privateSnapshot() throws {
        for i in 0..<5 { _ = try ok(["add", "task \(i)"]) }
        _ = try ok(["sites", "add", "https://example.com/"])
        #expect(mode(workspacePath) == 0o600)
        #expect(mode(workspacePath + ".bak") == 0o600)
        #expect(mode(dataDir) == 0o700)
        let names = try FileManager.default.contentsOfDirectory(atPath: dataDir).sorted()
        #expect(names == ["workspace.json", "workspace.json.bak", "workspace.json.lock"])
        let backup = try JSON.parse(try #require(fileBytes(workspacePath + ".bak")))
        #expect(backup["tasks"]?.arrayValue?.count == 5)
        #expect(backup["websites"]?.arrayValue?.count == 0)
    }

    @Test("W1 sl-tasks never touches the network: no socket calls under strace, no networking libraries linked")
    func neverNetwork() throws {
        try #require(Tools.available("strace"), "strace is needed for this test; run scripts/bootstrap")
        let bin = Tools.path("sl-tasks")
        let script = """
            set -e
            export STARLINE_HOME='\(home.path)/net'
            strace -f -qq -e trace=%network -o '\(home.path)/trace' sh -c '
              "\(bin)" add "offline task" --due tomorrow >/dev/null
              "\(bin)" list --overdue >/dev/null
              "\(bin)" sites add https://example.com/ >/dev/null
              "\(bin)" recent add https://example.com/a >/dev/null
              "\(bin)" export -f netscape >/dev/null
              "\(bin)" check >/dev/null'
            cat '\(home.path)/trace'
            """
        let run = try Tools.shell(script)
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(!run.stdoutText.contains("socket"), "network system calls: \(run.stdoutText)")
        #expect(!run.stdoutText.contains("connect"), "network system calls: \(run.stdoutText)")
        // Nothing that could reach the network is linked or loadable: sl-tasks is fully static (no dynamic
        // section, so no NEEDED library and no dynamic loader), and names no network library a dlopen could load.
        // (ldd says nothing useful of a static binary: "not a dynamic executable".)
        let dynamic = try Tools.runInstalled("/usr/bin/readelf", ["-d", bin])
        #expect(dynamic.status == 0 && dynamic.stdoutText.contains("There is no dynamic section"), "\(dynamic.stdoutText)")
        let image = try #require(FileManager.default.contents(atPath: bin))
        for library in ["libcurl.so", "libssl.so", "libnghttp2", "FoundationNetworking"] {
            #expect(image.range(of: Data(library.utf8)) == nil, "sl-tasks names \(library)")
        }
        // The same check finds them where they are: sl-restore loads libcurl by name.
        let restore = try #require(FileManager.default.contents(atPath: Tools.path("sl-restore")))
        #expect(restore.range(of: Data("libcurl.so".utf8)) != nil)
    }

    @Test("W9 workbench data belongs to its one store: nothing is written outside <data>/workspace.json*")
    func oneStore() throws {
        _ = try ok(["add", "x", "--due", "+1d"])
        _ = try ok(["sites", "add", "https://example.com/"])
        _ = try ok(["recent", "add", "https://example.com/"])
        _ = try ok(["export", "-f", "json"])
        _ = try ok(["check"])
        let all = try FileManager.default.subpathsOfDirectory(atPath: home.path + "/starline").sorted()
        #expect(all == ["data", "data/workspace.json", "data/workspace.json.bak", "data/workspace.json.lock"])
        // --workspace and STARLINE_WORKSPACE choose another file, and only that one is used.
        let other = home.file("elsewhere/ws.json")
        try FileManager.default.createDirectory(atPath: home.file("elsewhere"), withIntermediateDirectories: true)
        _ = try ok(["add", "y", "--workspace", other])
        _ = try ok(["add", "z"], environment: ["STARLINE_WORKSPACE": other])
        #expect(try titles(["list", "--workspace", other]) == ["y", "z"])
        #expect(try titles(["list"]) == ["x"])
    }

    @Test("W1 50 processes adding tasks at once lose nothing")
    func concurrentAdds() throws {
        // Started together, then waited for.
        var running: [RunningTool] = []
        for i in 1...50 {
            running.append(try Tools.spawn("sl-tasks", ["add", "task \(i)", "--compact"], home: home.path))
        }
        var printed: [JSON] = []
        for process in running {
            let run = process.wait()
            #expect(run.status == 0, "\(run.stderrText)")
            printed.append(try JSON.parse(run.stdout))
        }
        let listed = try lines(["list"])
        #expect(listed.count == 50)
        #expect(Set(listed.compactMap { $0["title"]?.stringValue }) == Set((1...50).map { "task \($0)" }))
        #expect(Set(listed.compactMap { $0["id"]?.stringValue }).count == 50)
        // Every process printed the record it stored.
        for (i, record) in zip(1...50, printed) {
            #expect(listed.contains { $0["id"] == record["id"] && $0["title"]?.stringValue == "task \(i)" })
        }
        #expect(try ok(["check"])["ok"] == .bool(true))
    }

    @Test("W1 a kill -9 during writes never leaves a broken workspace.json")
    func killDuringWrites() throws {
        // A big import makes the write window wide; adds and edits run in between.
        var big: [String] = []
        for i in 0..<3000 {
            big.append(
                #"{"uuid":"\#(String(format: "%08x", i))-1111-4000-8000-000000000000","description":"imported \#(i) with a longer title to make the file bigger","status":"pending","entry":"20261101T100000Z","tags":["bulk"]}"#
            )
        }
        let importFile = home.file("big.json")
        try ("[\n" + big.joined(separator: ",\n") + "\n]\n").write(toFile: importFile, atomically: false, encoding: .utf8)
        var killed = 0
        for round in 0..<60 {
            let process = try Tools.spawn(
                "sl-tasks", round % 3 == 0 ? ["import", importFile] : ["add", "round \(round)", "--tag", "kill"], home: home.path)
            usleep(UInt32.random(in: 0...40_000))
            if process.poll() == nil {
                process.signal(SIGKILL)
                killed += 1
            }
            _ = process.wait()
            // After every round: the file parses, and every task in it is whole.
            let check = try tasks(["check"])
            #expect(check.status == 0, "round \(round): \(check.stdoutText) \(check.stderrText)")
            if check.status != 0 { break }
        }
        let all = try lines(["list", "--all"])
        for task in all {
            #expect(task.objectValue?.map(\.0) == Self.keys)
            let title = task["title"]?.stringValue ?? ""
            #expect(title.hasPrefix("round ") || title.hasPrefix("imported "))
        }
        // A killed writer may leave its temporary file behind; the next successful write removes it.
        _ = try ok(["add", "after the storm"])
        let names = try FileManager.default.contentsOfDirectory(atPath: dataDir).sorted()
        #expect(names == ["workspace.json", "workspace.json.bak", "workspace.json.lock"])
        #expect(killed > 0, "no process was killed while running; the test proved nothing")
    }

    @Test("corrupt and truncated files exit 12 naming workspace.json.bak, and are never overwritten")
    func corruptFile() throws {
        _ = try ok(["add", "one"])
        _ = try ok(["add", "two"])
        let good = try #require(fileBytes(workspacePath))
        let backup = try #require(fileBytes(workspacePath + ".bak"))
        for bad in [
            Array(good.prefix(good.count / 2)), Array(good.prefix(1)), [], Array("not json".utf8), Array(#"{"version":1,"tasks":"x"}"#.utf8)
        ] {
            try Data(bad).write(to: URL(fileURLWithPath: workspacePath))
            for args in [
                ["list"], ["add", "three"], ["done", "abc"], ["sites", "add", "https://a.example/"], ["recent", "clear"], ["check"],
                ["export"]
            ] {
                let run = try tasks(args)
                #expect(run.status == 12, "\(args)")
                let error = try run.error()["error"]
                #expect(error?["code"]?.stringValue == "CORRUPT_FILE")
                #expect(error?["message"]?.stringValue?.contains("workspace.json.bak") == true)
                #expect(error?["details"]?["backup"]?.stringValue == workspacePath + ".bak")
                #expect(fileBytes(workspacePath) == bad, "\(args) changed the corrupt file")
                #expect(fileBytes(workspacePath + ".bak") == backup, "\(args) changed the backup")
            }
        }
        // Restoring the named backup brings the last good state back.
        try Data(backup).write(to: URL(fileURLWithPath: workspacePath))
        #expect(try titles(["list"]) == ["one"])
    }

    @Test("a newer format version is listed but every change exits 12 UNSUPPORTED_VERSION, file untouched")
    func newerVersion() throws {
        let text =
            #"{"version":2,"tasks":[{"id":"abcd1111-0000-4000-8000-000000000001","title":"future","due":null,"done":false,"lanes":["x"]}],"websites":[],"recents":[],"v2":true}"#
        try writeWorkspace(text)
        #expect(try titles(["list"]) == ["future"])
        #expect(try ok(["show", "abcd"])["lanes"] == .array([.string("x")]))
        for args in [
            ["add", "x"], ["done", "abcd"], ["edit", "abcd", "--title", "y"], ["rm", "abcd"], ["sites", "add", "https://a.example/"],
            ["recent", "add", "https://a.example/"], ["import", "-"]
        ] {
            let run = try tasks(args, stdin: Array(#"{"version":1,"tasks":[{"title":"i"}]}"#.utf8))
            #expect(run.status == 12, "\(args)")
            #expect(run.errorCode == "UNSUPPORTED_VERSION", "\(args): \(run.stderrText)")
            #expect(try run.error()["error"]?["message"]?.stringValue?.contains("version 2") == true)
        }
        #expect(String(decoding: try #require(fileBytes(workspacePath)), as: UTF8.self) == text)
        #expect(!FileManager.default.fileExists(atPath: workspacePath + ".bak"))
        let check = try tasks(["check"])
        #expect(check.status == 12)
        #expect(check.errorCode == "CHECK_FAILED")
    }

    @Test("unknown fields on every record and unknown top-level keys survive every kind of write")
    func unknownFieldsSurvive() throws {
        try writeWorkspace(
            """
            {"x-top":{"keep":[1,2]},"version":1,
             "tasks":[{"id":"abcd1111-0000-4000-8000-000000000001","title":"t","notes":"","tags":[],"due":null,"done":false,"doneAt":null,"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z","x-task":"kept"}],
             "websites":[{"id":"bbbb1111-0000-4000-8000-000000000001","url":"https://a.example/","normalizedUrl":"https://a.example/","title":null,"createdAt":"2026-01-01T00:00:00Z","x-site":1.5}],
             "recents":[{"url":"https://r.example/","title":null,"visits":1,"lastVisitedAt":"2026-01-01T00:00:00Z","x-recent":null}],
             "x-last":"end"}
            """)
        let writes: [[String]] = [
            ["add", "new"], ["edit", "abcd", "--title", "t2"], ["done", "abcd"], ["undo", "abcd"],
            ["sites", "add", "https://b.example/"], ["sites", "dedup"], ["recent", "add", "https://r.example"],
            ["recent", "add", "https://other.example/"], ["import", "-"]
        ]
        for args in writes {
            let run = try tasks(args, stdin: Array(#"{"version":1,"tasks":[{"title":"imported"}]}"#.utf8))
            #expect(run.status == 0, "\(args): \(run.stderrText)")
            let doc = try JSON.parse(try #require(fileBytes(workspacePath)))
            #expect(doc.objectValue?.map(\.0) == ["x-top", "version", "tasks", "websites", "recents", "x-last"], "\(args)")
            #expect(doc["x-top"]?["keep"] == .array([.int(1), .int(2)]), "\(args)")
            #expect(doc["x-last"]?.stringValue == "end", "\(args)")
            #expect(doc["tasks"]?[0]?["x-task"]?.stringValue == "kept", "\(args)")
            #expect(doc["websites"]?[0]?["x-site"] == .double(1.5), "\(args)")
            let recent = doc["recents"]?.arrayValue?.first { $0["url"]?.stringValue?.hasPrefix("https://r.example") == true }
            #expect(recent?.objectValue?.contains { $0.0 == "x-recent" } == true, "\(args)")
        }
        // Unknown fields are shown too, after the documented ones.
        let shown = try ok(["show", "abcd"])
        #expect(shown.objectValue?.map(\.0) == Self.keys + ["x-task"])
    }

    // MARK: sites

    @Test("sites add normalises for dedup, keeps the URL as given, and a duplicate returns the existing record")
    func sites() throws {
        let first = try ok(["sites", "add", "HTTPS://Example.COM:443/Docs/?utm_source=news&b=2&a=1#top", "--title", "Docs"])
        #expect(first["url"]?.stringValue == "HTTPS://Example.COM:443/Docs/?utm_source=news&b=2&a=1#top")
        #expect(first["normalizedUrl"]?.stringValue == "https://example.com/Docs?b=2&a=1")
        #expect(first["duplicate"] == .bool(false))
        #expect(first.objectValue?.map(\.0) == ["id", "url", "normalizedUrl", "title", "createdAt", "duplicate"])
        let dup = try tasks(["sites", "add", "https://example.com/Docs?b=2&fbclid=abc&a=1", "--title", "Other"])
        #expect(dup.status == 0)
        let dupRecord = try dup.json()
        #expect(dupRecord["duplicate"] == .bool(true))
        #expect(dupRecord["id"] == first["id"])
        #expect(dupRecord["title"]?.stringValue == "Docs")
        let different = try ok(["sites", "add", "https://example.com/Docs?a=1&b=2"])  // query order matters
        #expect(different["duplicate"] == .bool(false))
        let listed = try lines(["sites", "list"])
        #expect(listed.count == 2)
        let stored = String(decoding: try #require(fileBytes(workspacePath)), as: UTF8.self)
        #expect(!stored.contains("duplicate"), "an output-only marker was stored")

        let removedByURL = try ok(["sites", "rm", "https://EXAMPLE.com/Docs/?b=2&a=1"])
        #expect(removedByURL["id"] == first["id"])
        let id = try #require(different["id"]?.stringValue)
        #expect(try ok(["sites", "rm", String(id.prefix(5))])["id"]?.stringValue == id)
        #expect(try lines(["sites", "list"]).isEmpty)
        #expect(try tasks(["sites", "rm", "https://nowhere.example/"]).status == 6)
    }

    @Test("sites dedup --dry-run shows which records merge and changes nothing; dedup merges into the oldest")
    func dedup() throws {
        try writeWorkspace(
            """
            {"version":1,"tasks":[],"websites":[
            {"id":"aaaa0000-0000-4000-8000-000000000001","url":"https://a.example/x","normalizedUrl":"https://a.example/x","title":null,"createdAt":"2026-01-01T00:00:00Z"},
            {"id":"aaaa0000-0000-4000-8000-000000000002","url":"https://b.example/","normalizedUrl":"https://b.example/","title":"B","createdAt":"2026-01-02T00:00:00Z"},
            {"id":"aaaa0000-0000-4000-8000-000000000003","url":"https://A.example/x/?utm_medium=m","normalizedUrl":"old","title":"A title","createdAt":"2026-01-03T00:00:00Z"},
            {"id":"aaaa0000-0000-4000-8000-000000000004","url":"https://a.example/x#frag","normalizedUrl":"https://a.example/x","title":"Third","createdAt":"2026-01-04T00:00:00Z"}],
            "recents":[]}
            """)
        let check = try tasks(["check"])
        #expect(check.status == 12)
        #expect(check.errorCode == "CHECK_FAILED")
        #expect(try check.json()["duplicateSites"]?[0]?["ids"]?.arrayValue?.count == 3)

        let before = fileBytes(workspacePath)
        let dry = try ok(["sites", "dedup", "--dry-run"])
        #expect(dry["dryRun"] == .bool(true))
        #expect(dry["removed"]?.intValue == 2)
        let group = try #require(dry["groups"]?[0])
        #expect(group["normalizedUrl"]?.stringValue == "https://a.example/x")
        #expect(group["kept"]?["id"]?.stringValue == "aaaa0000-0000-4000-8000-000000000001")
        #expect(
            group["removed"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [
                "aaaa0000-0000-4000-8000-000000000003", "aaaa0000-0000-4000-8000-000000000004"
            ])
        #expect(fileBytes(workspacePath) == before)

        let real = try ok(["sites", "dedup"])
        #expect(real["dryRun"] == .bool(false))
        #expect(real["removed"]?.intValue == 2)
        let sites = try lines(["sites", "list"])
        #expect(
            sites.compactMap { $0["id"]?.stringValue } == ["aaaa0000-0000-4000-8000-000000000001", "aaaa0000-0000-4000-8000-000000000002"])
        #expect(sites[0]["title"]?.stringValue == "A title")
        #expect(try ok(["check"])["ok"] == .bool(true))
        #expect(try ok(["sites", "dedup"])["removed"]?.intValue == 0)
    }

    // MARK: recents

    @Test("recent visits: most recent first, a revisit moves to the top and counts, bounded, --since, clear")
    func recents() throws {
        for (i, url) in ["https://a.example/", "https://b.example/", "https://c.example/"].enumerated() {
            _ = try ok(["recent", "add", url, "--now", "2026-11-30T08:0\(i):00Z"])
        }
        let revisit = try ok(["recent", "add", "HTTPS://A.example", "--title", "A", "--now", "2026-11-30T09:00:00Z"])
        #expect(revisit.objectValue?.map(\.0) == ["url", "title", "visits", "lastVisitedAt"])
        #expect(revisit["visits"]?.intValue == 2)
        #expect(revisit["title"]?.stringValue == "A")
        #expect(revisit["url"]?.stringValue == "HTTPS://A.example")
        #expect(
            try lines(["recent", "list"]).compactMap { $0["url"]?.stringValue } == [
                "HTTPS://A.example", "https://c.example/", "https://b.example/"
            ])
        #expect(try lines(["recent", "list", "--since", "2026-11-30T08:02:00Z"]).count == 2)

        _ = try ok(["recent", "add", "https://d.example/", "--keep", "3", "--now", "2026-11-30T10:00:00Z"])
        #expect(
            try lines(["recent", "list"]).compactMap { $0["url"]?.stringValue } == [
                "https://d.example/", "HTTPS://A.example", "https://c.example/"
            ])

        for i in 0..<105 { _ = try ok(["recent", "add", "https://many.example/\(i)"]) }
        let bounded = try lines(["recent", "list"])
        #expect(bounded.count == 100)
        #expect(bounded.first?["url"]?.stringValue == "https://many.example/104")

        #expect(try ok(["recent", "clear"])["cleared"]?.intValue == 100)
        #expect(try lines(["recent", "list"]).isEmpty)
    }

    // MARK: import / export / check

    @Test("export json and import it into another home: the same records; importing again updates instead of duplicating")
    func jsonRoundTrip() throws {
        _ = try ok(["add", "a", "--due", "2026-12-01T10:00:00Z", "-t", "x", "--notes", "n"])
        let doneID = try #require(try ok(["add", "b"])["id"]?.stringValue)
        _ = try ok(["done", doneID])
        _ = try ok(["sites", "add", "https://example.com/a", "--title", "A"])
        _ = try ok(["recent", "add", "https://example.com/r"])
        let exported = try tasks(["export"])
        #expect(exported.status == 0)
        let other = TemporaryDirectory("sl-tasks-other")
        let first = try Tools.run("sl-tasks", ["import", "-"], stdin: exported.stdout, home: other.path)
        #expect(first.status == 0, "\(first.stderrText)")
        #expect(try first.json()["format"]?.stringValue == "json")
        #expect(try first.json()["tasks"]?["added"]?.intValue == 2)
        #expect(try first.json()["websites"]?["added"]?.intValue == 1)
        let second = try Tools.run("sl-tasks", ["import", "-", "--format", "json"], stdin: exported.stdout, home: other.path)
        // Nothing differs: unchanged, not updated (and nothing is written).
        #expect(try second.json()["tasks"]?["updated"]?.intValue == 0)
        #expect(try second.json()["tasks"]?["unchanged"]?.intValue == 2)
        #expect(try second.json()["websites"]?["duplicates"]?.intValue == 1)
        let theirs = try Tools.run("sl-tasks", ["export"], home: other.path)
        #expect(try theirs.json()["tasks"] == (try exported.json()["tasks"]))
        #expect(try theirs.json()["websites"] == (try exported.json()["websites"]))
        #expect(try theirs.json()["recents"] == (try exported.json()["recents"]))

        let file = home.file("export.json")
        let summary = try ok(["export", "-o", file])
        #expect(summary["tasks"]?.intValue == 2)
        #expect(mode(file) == 0o600)
        #expect(try JSON.parse(try #require(fileBytes(file)))["tasks"] == (try exported.json()["tasks"]))
    }

    @Test("Netscape bookmark HTML both ways; import goes through sites add, so normalised duplicates are not added twice")
    func netscape() throws {
        let html = """
            <!DOCTYPE NETSCAPE-Bookmark-file-1>
            <META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
            <TITLE>Bookmarks</TITLE>
            <H1>Bookmarks</H1>
            <DL><p>
                <DT><H3>Folder</H3>
                <DL><p>
                    <DT><A HREF="https://example.com/docs/?utm_source=a" ADD_DATE="1764489600">Docs &amp; more</A>
                    <DT><A HREF="https://EXAMPLE.com/docs#part">Docs again</A>
                </DL><p>
                <DT><A HREF="https://other.example/">Other</A>
                <DT><A HREF="javascript:void(0)">Bookmarklet</A>
            </DL><p>
            """
        try html.write(toFile: home.file("b.html"), atomically: false, encoding: .utf8)
        _ = try ok(["sites", "add", "https://other.example"])
        let summary = try ok(["import", home.file("b.html")])
        #expect(summary["format"]?.stringValue == "netscape")
        #expect(summary["websites"]?["added"]?.intValue == 1)
        #expect(summary["websites"]?["duplicates"]?.intValue == 2)
        #expect(summary["websites"]?["skipped"]?.intValue == 1)
        let sites = try lines(["sites", "list"])
        #expect(sites.count == 2)
        #expect(sites[1]["title"]?.stringValue == "Docs & more")
        #expect(sites[1]["createdAt"]?.stringValue == "2025-11-30T08:00:00Z")

        let exported = try tasks(["export", "--format", "netscape"])
        #expect(exported.stdoutText.hasPrefix("<!DOCTYPE NETSCAPE-Bookmark-file-1>"))
        let other = TemporaryDirectory("sl-tasks-other")
        let back = try Tools.run("sl-tasks", ["import", "-"], stdin: exported.stdout, home: other.path)
        #expect(try back.json()["websites"]?["added"]?.intValue == 2)
        let theirs = try Tools.run("sl-tasks", ["sites", "list", "--jsonl"], home: other.path).jsonLines()
        #expect(theirs.map { $0["url"] } == sites.map { $0["url"] })
        #expect(theirs.map { $0["createdAt"] } == sites.map { $0["createdAt"] })
    }

    @Test("import of a task export file: upsert by uuid, deleted removed, format detected; a bad file changes nothing")
    func taskwarriorFile() throws {
        let v1 = """
            [
            {"id":1,"description":"Call Bob","due":"20261203T170000Z","entry":"20261101T100000Z","modified":"20261101T100000Z","status":"pending","uuid":"c0ffee00-0000-4000-8000-000000000001","tags":["phone"],"project":"crm","urgency":5.2},
            {"id":0,"description":"Old","end":"20261102T100000Z","entry":"20261101T100000Z","modified":"20261102T100000Z","status":"completed","uuid":"c0ffee00-0000-4000-8000-000000000002"}
            ]
            """
        let first = try ok(["import", "-"], stdin: Array(v1.utf8))
        #expect(first["format"]?.stringValue == "taskwarrior")
        #expect(first["tasks"]?["added"]?.intValue == 2)
        let v2 = """
            {"description":"Call Bob about the contract","entry":"20261101T100000Z","modified":"20261105T100000Z","status":"pending","uuid":"c0ffee00-0000-4000-8000-000000000001","tags":["phone","work"],"project":"crm"}
            {"description":"Old","entry":"20261101T100000Z","modified":"20261106T100000Z","status":"deleted","uuid":"c0ffee00-0000-4000-8000-000000000002"}
            """
        let second = try ok(["import", "-"], stdin: Array(v2.utf8))
        #expect(second["tasks"]?["updated"]?.intValue == 1)
        #expect(second["tasks"]?["removed"]?.intValue == 1)
        let all = try lines(["list", "--all"])
        #expect(all.count == 1)
        #expect(all[0]["id"]?.stringValue == "c0ffee00-0000-4000-8000-000000000001")
        #expect(all[0]["title"]?.stringValue == "Call Bob about the contract")
        #expect(all[0]["due"] == .null)
        #expect(all[0]["tags"] == .array([.string("phone"), .string("work")]))
        #expect(all[0]["taskwarrior"]?["project"]?.stringValue == "crm")

        let before = fileBytes(workspacePath)
        let bad = try tasks(
            ["import", "-", "-f", "taskwarrior"],
            stdin: Array(#"[{"uuid":"c0ffee00-0000-4000-8000-000000000009","description":"x"},{"description":"no uuid"}]"#.utf8))
        #expect(bad.status == 12)
        #expect(fileBytes(workspacePath) == before)
        let unknown = try tasks(["import", "-"], stdin: Array("plain text".utf8))
        #expect(unknown.status == 12)
        #expect(try tasks(["import", home.file("missing.json")]).status == 6)
    }

    @Test("Taskwarrior round trip: task import accepts our export, and task export comes back by uuid")
    func taskwarriorRoundTrip() throws {
        try #require(
            Tools.available("task"), "Taskwarrior ('task') is not installed: run scripts/bootstrap, which installs the taskwarrior package")
        let twData = home.file("taskdata")
        try FileManager.default.createDirectory(atPath: twData, withIntermediateDirectories: true)
        let rc = home.file("taskrc")
        try "data.location=\(twData)\nconfirmation=off\nverbose=nothing\njson.array=on\nhooks=off\nnews.version=2.6.0\n".write(
            toFile: rc, atomically: false, encoding: .utf8)
        let twEnv = ["TASKRC": rc, "TASKDATA": twData]
        func task(_ args: String, stdin: [UInt8]? = nil) throws -> ToolRun {
            var env = twEnv
            env["HOME"] = home.path
            return try Tools.run(
                "/bin/sh", ["-c", "task rc.confirmation=off rc.hooks=off \(args)"], stdin: stdin, home: home.path, environment: env)
        }

        let a = try ok([
            "add", "Pay rent", "--due", "2026-12-01T09:00:00Z", "-t", "home,bills", "--notes", "by transfer", "--now",
            "2026-11-30T08:00:00Z"
        ])
        let b = try ok(["add", "No deadline", "--now", "2026-11-30T08:00:01Z"])
        let c = try ok(["add", "Finished", "--due", "2026-11-29T12:00:00Z", "--now", "2026-11-28T08:00:00Z"])
        _ = try ok(["done", try #require(c["id"]?.stringValue), "--now", "2026-11-29T10:00:00Z"])

        let exported = try tasks(["export", "--format", "taskwarrior"])
        #expect(exported.status == 0)
        let imported = try task("import -", stdin: exported.stdout)
        #expect(imported.status == 0, "task import failed: \(imported.stderrText) \(imported.stdoutText)")
        let twExport = try task("export")
        #expect(twExport.status == 0, "task export failed: \(twExport.stderrText)")
        let twTasks = try JSON.parse(twExport.stdout).arrayValue ?? []
        #expect(twTasks.count == 3)
        let twA = try #require(twTasks.first { $0["uuid"] == a["id"] })
        #expect(twA["description"]?.stringValue == "Pay rent")
        #expect(twA["due"]?.stringValue == "20261201T090000Z")
        #expect(Set(twA["tags"]?.arrayValue?.compactMap(\.stringValue) ?? []) == ["home", "bills"])
        #expect(twA["annotations"]?[0]?["description"]?.stringValue == "by transfer")
        #expect(twTasks.first { $0["uuid"] == c["id"] }?["status"]?.stringValue == "completed")

        // Into a fresh workspace: the same tasks.
        let other = TemporaryDirectory("sl-tasks-tw")
        let fresh = try Tools.run("sl-tasks", ["import", "-"], stdin: twExport.stdout, home: other.path)
        #expect(fresh.status == 0, "\(fresh.stderrText)")
        let back = try Tools.run("sl-tasks", ["list", "--all", "--jsonl"], home: other.path).jsonLines()
        let ours = try lines(["list", "--all"])
        #expect(back.count == 3)
        for mine in ours {
            let theirs = try #require(back.first { $0["id"] == mine["id"] })
            for key in ["title", "notes", "due", "done", "doneAt", "createdAt"] { #expect(theirs[key] == mine[key], "\(key)") }
            #expect(
                Set(theirs["tags"]?.arrayValue?.compactMap(\.stringValue) ?? [])
                    == Set(mine["tags"]?.arrayValue?.compactMap(\.stringValue) ?? []))
        }

        // Changed in Taskwarrior, imported back: updated by uuid, nothing duplicated.
        let bID = try #require(b["id"]?.stringValue)
        let modify = try task("\(bID) modify +later project:home due:2026-12-24")
        #expect(modify.status == 0, "task modify failed: \(modify.stderrText)")
        let again = try task("export")
        let update = try ok(["import", "-"], stdin: again.stdout)
        #expect(update["tasks"]?["added"]?.intValue == 0)
        // b changed; the others count as updated or, when Taskwarrior gives them back as they were, unchanged.
        #expect(update["tasks"]?["updated"]?.intValue ?? 0 >= 1)
        #expect((update["tasks"]?["updated"]?.intValue ?? 0) + (update["tasks"]?["unchanged"]?.intValue ?? 0) == 3)
        let changed = try ok(["show", bID])
        #expect(changed["tags"] == .array([.string("later")]))
        #expect(changed["due"] != .null)
        #expect(changed["taskwarrior"]?["project"]?.stringValue == "home")
        #expect(try lines(["list", "--all"]).count == 3)
        // And the kept Taskwarrior fields go back out.
        let reexport = try JSON.parse(try tasks(["export", "-f", "taskwarrior"]).stdout).arrayValue ?? []
        #expect(reexport.first { $0["uuid"]?.stringValue == bID }?["project"]?.stringValue == "home")
    }

    @Test("check: a clean file passes (exit 0); a missing file is fine; problems exit 12 with a list")
    func check() throws {
        let missing = try ok(["check"])
        #expect(missing["exists"] == .bool(false))
        #expect(missing["ok"] == .bool(true))
        _ = try ok(["add", "fine", "--due", "+1d"])
        _ = try ok(["sites", "add", "https://example.com/"])
        let clean = try ok(["check"])
        #expect(clean["ok"] == .bool(true))
        #expect(clean["tasks"]?.intValue == 1)
        try writeWorkspace(#"{"version":1,"tasks":[{"id":"nope","title":"x","due":"next week","done":false}],"websites":[],"recents":[]}"#)
        let bad = try tasks(["check"])
        #expect(bad.status == 12)
        #expect(bad.errorCode == "CHECK_FAILED")
        let problems = try bad.json()["problems"]?.arrayValue ?? []
        #expect(problems.contains { $0["field"]?.stringValue == "id" })
        #expect(problems.contains { $0["field"]?.stringValue == "due" })
        #expect(try bad.json()["ok"] == .bool(false))
    }

    // MARK: docs

    @Test func helpAndVersion() throws {
        let help = try tasks(["--help"])
        #expect(help.status == 0)
        #expect(help.stdoutText.contains("sites"))
        #expect(help.stdoutText.contains("--workspace"))
        let listHelp = try tasks(["list", "--help"])
        #expect(listHelp.stdoutText.contains("--due-within"))
        #expect(try tasks(["--version"]).stdoutText == "sl-tasks 0.1.0\n")
    }
}
