import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// W1: what an import cannot act on is kept and given back; what it skips is reported with a reason; hostile
/// input (bad kept dates, bookmark folders nested without end) is a clear DATA_ERROR (exit 12) that changes
/// nothing. sl-tasks in-process (`runTasks`); SLTasksKeptFieldsTests runs the binary against the real `task`.
@Suite struct KeptFieldsTests {
    let home = TemporaryDirectory("sl-tasks-kept-inprocess")
    var workspacePath: String { home.path + "/starline/data/workspace.json" }

    func run(_ words: [String], stdin: String = "") -> (status: StarlineCore.ExitStatus, stdout: String, stderr: String) {
        runTasks(words, home: home, stdin: Array(stdin.utf8), now: Timestamp(rfc3339: "2030-06-01T08:00:00Z"))
    }

    func ok(_ words: [String], stdin: String = "") throws -> JSON {
        let r = run(words, stdin: stdin)
        try #require(r.status == .ok, "sl-tasks \(words.joined(separator: " ")): \(r.stderr)")
        return try JSON.parse(r.stdout)
    }

    func lines(_ words: [String]) throws -> [JSON] {
        let r = run(words + ["--jsonl"])
        try #require(r.status == .ok, "\(r.stderr)")
        return try r.stdout.split(separator: "\n").map { try JSON.parse(String($0)) }
    }

    static let uuid1 = "c0ffee00-0000-4000-8000-00000000000a"

    /// One Taskwarrior task as `task export` writes it, with `extra` members spliced in.
    static func twTask(_ extra: String, uuid: String = uuid1, status: String = "pending") -> String {
        #"{"description":"Plan trip","entry":"20310101T100000Z","modified":"20310102T100000Z","status":"\#(status)","uuid":"\#(uuid)"\#(extra.isEmpty ? "" : "," + extra)}"#
    }

    @Test(
        """
        W1 kept fields: shown only when set, given back by export; a field Taskwarrior drops goes; edit --notes \
        replaces annotations
        """)
    func keptFieldsLifecycle() throws {
        let full = Self.twTask(
            #""wait":"20310201T000000Z","scheduled":"20310203T120000Z","until":"20310301T000000Z","recur":"monthly","parent":"c0ffee00-0000-4000-8000-0000000000ff","imask":3,"annotations":[{"entry":"20310101T100000Z","description":"one"},{"entry":"20310101T110000Z","description":"two"}]"#
        )
        _ = try ok(["import", "-"], stdin: "[\(full)]")
        let shown = try ok(["show", Self.uuid1])
        let keys = shown.objectValue?.map(\.0) ?? []
        #expect(
            Array(keys.prefix(15)) == [
                "id", "number", "title", "notes", "tags", "due", "done", "doneAt", "createdAt", "updatedAt",
                "wait", "scheduled", "until", "recur", "annotations"
            ])
        #expect(shown["scheduled"]?.stringValue == "2031-02-03T12:00:00Z")
        #expect(shown["recur"]?.stringValue == "monthly")
        #expect(
            shown["annotations"]
                == .array([
                    .object([("entry", .string("2031-01-01T10:00:00Z")), ("description", .string("one"))]),
                    .object([("entry", .string("2031-01-01T11:00:00Z")), ("description", .string("two"))])
                ]))
        #expect(shown["notes"]?.stringValue == "one\ntwo")
        // The kept Taskwarrior-only members stay under "taskwarrior", imask included (an instance's index).
        #expect(shown["taskwarrior"]?["imask"]?.intValue == 3)
        #expect(shown["taskwarrior"]?["wait"] == nil)

        let exported = try #require(try JSON.parse(run(["export", "-f", "taskwarrior"]).stdout).arrayValue?.first)
        #expect(exported["wait"]?.stringValue == "20310201T000000Z")
        #expect(exported["scheduled"]?.stringValue == "20310203T120000Z")
        #expect(exported["until"]?.stringValue == "20310301T000000Z")
        #expect(exported["recur"]?.stringValue == "monthly")
        #expect(exported["imask"]?.intValue == 3)
        #expect(exported["annotations"]?.arrayValue?.map { $0["description"]?.stringValue } == ["one", "two"])
        #expect(exported["annotations"]?.arrayValue?.map { $0["entry"]?.stringValue } == ["20310101T100000Z", "20310101T110000Z"])

        // Taskwarrior no longer has wait and recur: they go; the other fields stay.
        let fewer = Self.twTask(
            #""scheduled":"20310203T120000Z","until":"20310301T000000Z","annotations":[{"entry":"20310101T100000Z","description":"one"},{"entry":"20310101T110000Z","description":"two"}]"#
        )
        let summary = try ok(["import", "-"], stdin: fewer)
        #expect(summary["tasks"]?["updated"]?.intValue == 1)
        let after = try ok(["show", Self.uuid1])
        #expect(after["wait"] == nil && after["recur"] == nil)
        #expect(after["scheduled"]?.stringValue == "2031-02-03T12:00:00Z")

        // New notes replace the annotations: export writes the notes as one annotation dated at the edit.
        _ = try ok(["edit", Self.uuid1, "--notes", "rewritten"])
        #expect(try ok(["show", Self.uuid1])["annotations"] == nil)
        let edited = try #require(try JSON.parse(run(["export", "-f", "taskwarrior"]).stdout).arrayValue?.first)
        #expect(edited["annotations"] == .array([.object([("entry", .string("20300601T080000Z")), ("description", .string("rewritten"))])]))
        // One annotation, dated when the task was last modified (what `task annotate` leaves): kept and shown too.
        let single = Self.twTask(
            #""annotations":[{"entry":"20310102T100000Z","description":"only"}]"#, uuid: "c0ffee00-0000-4000-8000-0000000000d1")
        _ = try ok(["import", "-"], stdin: single)
        #expect(try ok(["show", "c0ffee00-0000-4000-8000-0000000000d1"])["annotations"]?.arrayValue?.count == 1)
        #expect(try ok(["import", "-"], stdin: single)["tasks"]?["unchanged"]?.intValue == 1)
        // A task made here has none of the kept fields: its record is as it always was.
        let plain = try ok(["add", "plain", "--notes", "n"])
        #expect(
            plain.objectValue?.map(\.0) == ["id", "number", "title", "notes", "tags", "due", "done", "doneAt", "createdAt", "updatedAt"])
    }

    @Test("W1 a task imported by an earlier sl-tasks (wait, recur under \"taskwarrior\") shows and exports them as fields")
    func earlierImportsStillCount() throws {
        try FileManager.default.createDirectory(atPath: home.path + "/starline/data", withIntermediateDirectories: true)
        try
            #"{"version":1,"tasks":[{"id":"\#(Self.uuid1)","title":"old","notes":"","tags":[],"due":null,"done":false,"doneAt":null,"createdAt":"2031-01-01T00:00:00Z","updatedAt":"2031-01-01T00:00:00Z","taskwarrior":{"project":"p","wait":"20310201T000000Z","recur":"weekly"}}],"websites":[],"recents":[]}"#
            .write(toFile: workspacePath, atomically: false, encoding: .utf8)
        let shown = try ok(["show", Self.uuid1])
        #expect(shown["wait"]?.stringValue == "2031-02-01T00:00:00Z")
        #expect(shown["recur"]?.stringValue == "weekly")
        let listed = try lines(["list"])
        #expect(listed.first?["wait"]?.stringValue == "2031-02-01T00:00:00Z")
        let exported = try #require(try JSON.parse(run(["export", "-f", "taskwarrior"]).stdout).arrayValue?.first)
        #expect(exported["wait"]?.stringValue == "20310201T000000Z")
        #expect(exported["recur"]?.stringValue == "weekly")
        #expect(exported["project"]?.stringValue == "p")
    }

    @Test("W1 every skipped record is listed with its uuid or URL and why, and counted")
    func skippedRecordsSayWhy() throws {
        let template = Self.twTask(
            #""recur":"weekly","due":"20310106T090000Z","mask":"-""#, uuid: "c0ffee00-0000-4000-8000-0000000000b1", status: "recurring")
        let gone = Self.twTask("", uuid: "c0ffee00-0000-4000-8000-0000000000b2", status: "deleted")
        let summary = try ok(["import", "-"], stdin: "\(template)\n\(gone)\n\(Self.twTask(""))\n")
        #expect(summary["tasks"]?["added"]?.intValue == 1)
        #expect(summary["tasks"]?["skipped"]?.intValue == 2)
        let skipped = summary["skipped"]?.arrayValue ?? []
        #expect(skipped.map { $0["uuid"]?.stringValue } == ["c0ffee00-0000-4000-8000-0000000000b1", "c0ffee00-0000-4000-8000-0000000000b2"])
        #expect(skipped.first?["skipped"]?.stringValue?.hasPrefix("recurrence template: sl-tasks does not expand recurrences") == true)
        #expect(skipped.last?["skipped"]?.stringValue == "deleted in Taskwarrior, and not in the workspace")
        // A deleted task that is here is removed, as before, and is no skip.
        let removed = try ok(["import", "-"], stdin: Self.twTask("", status: "deleted"))
        #expect(removed["tasks"]?["removed"]?.intValue == 1)
        #expect(removed["skipped"] == .array([]))

        let html = """
            <DL><p>
            <DT><A HREF="javascript:void(0)">Bookmarklet</A>
            <DT><A HREF="place:sort=8">Recent</A>
            <DT><A HREF="https://a.example/">A</A>
            </DL><p>
            """
        let sites = try ok(["import", "-"], stdin: html)
        #expect(sites["websites"]?["skipped"]?.intValue == 2)
        #expect(sites["skipped"]?.arrayValue?.map { $0["url"]?.stringValue } == ["javascript:void(0)", "place:sort=8"])
        #expect(sites["skipped"]?.arrayValue?.allSatisfy { $0["skipped"]?.stringValue?.hasPrefix("not an absolute URL") == true } == true)
        let json = try ok(["import", "-", "-f", "json"], stdin: #"{"version":1,"websites":[{"title":"no url"},{"url":"nope"}]}"#)
        #expect(json["skipped"]?.arrayValue?.map { $0["skipped"]?.stringValue?.prefix(6) } == ["no url", "not an"])
    }

    @Test(
        """
        W1 bad kept fields in a Taskwarrior file are DATA_ERROR (exit 12) naming the task, the message bounded, \
        nothing written
        """,
        arguments: [
            #""wait":"99999999T999999Z""#, #""scheduled":"20311340T000000Z""#, #""until":1e400"#,
            #""wait":"\#(String(repeating: "9", count: 1_000_000))""#,
            #""recur":7"#, #""annotations":"call Bob""#, #""annotations":[{"entry":"20310101T000000Z"}]"#,
            #""annotations":[{"entry":"100000101T000000Z","description":"x"}]"#, #""annotations":[1]"#
        ])
    func badKeptFields(extra: String) throws {
        _ = try ok(["add", "already here"])
        let before = FileManager.default.contents(atPath: workspacePath)
        let r = run(
            ["import", "-", "-f", "taskwarrior"],
            stdin: "[\(Self.twTask("")),\(Self.twTask(extra, uuid: "c0ffee00-0000-4000-8000-0000000000c2"))]")
        #expect(r.status == .data)
        #expect(r.stdout.isEmpty)
        let error = try firstError(r.stderr)
        #expect(error["code"]?.stringValue == "DATA_ERROR")
        #expect(error["message"]?.stringValue?.hasPrefix("Taskwarrior task 2: ") == true, "\(r.stderr.prefix(300))")
        #expect(r.stderr.utf8.count < 2000)
        #expect(FileManager.default.contents(atPath: workspacePath) == before)
    }

    @Test(
        "W1 kept fields in our own JSON are checked like the other times: exit 12 naming the record and field",
        arguments: [
            (#""wait":"tomorrow""#, "tasks[0].wait"), (#""until":"0000-01-01T00:00:00Z""#, "tasks[0].until"),
            (#""recur":["weekly"]"#, "tasks[0].recur"), (#""annotations":{"a":1}"#, "tasks[0].annotations"),
            (#""annotations":[{"entry":"soon","description":"x"}]"#, "tasks[0].annotations[0].entry")
        ])
    func badKeptFieldsInJSON(extra: String, field: String) throws {
        let r = run(["import", "-"], stdin: #"{"version":1,"tasks":[{"id":"\#(Self.uuid1)","title":"t",\#(extra)}]}"#)
        #expect(r.status == .data)
        let message = try firstError(r.stderr)["message"]?.stringValue ?? ""
        #expect(message.contains(field), "\(message)")
        #expect(!FileManager.default.fileExists(atPath: workspacePath))
    }

    /// `depth` folders, each `name` (with its index), one bookmark in the innermost.
    static func nested(_ depth: Int, name: String) -> String {
        var html = "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<H1>Bookmarks</H1>\n<DL><p>\n"
        for i in 0..<depth { html += "<DT><H3>\(name)\(i)</H3>\n<DL><p>\n" }
        html += "<DT><A HREF=\"https://deep.example/\">Deep</A>\n"
        for _ in 0..<depth { html += "</DL><p>\n" }
        return html + "</DL><p>\n"
    }

    @Test(
        """
        W1 bookmark folders nested without end, or a folder path too long, are DATA_ERROR (exit 12) at once; nothing \
        written
        """)
    func hostileFolders() throws {
        // 98 folders deep (99 lists with the top one) is read; 100 folders is too deep.
        let fine = try ok(["import", "-"], stdin: Self.nested(98, name: "f"))
        #expect(fine["websites"]?["added"]?.intValue == 1)
        let deepTag = try lines(["sites", "list"]).first?["tags"]?.arrayValue?.first?.stringValue ?? ""
        #expect(deepTag.split(separator: "/").count == 98 && deepTag.hasPrefix("f0/f1/"))
        let before = FileManager.default.contents(atPath: workspacePath)

        let started = Date()
        for html in [
            Self.nested(100, name: "f"), String(repeating: "<DL><p>", count: 1_000_000) + "<DT><A HREF=\"https://x.example/\">x</A>"
        ] {
            let r = run(["import", "-", "-f", "netscape"], stdin: html)
            #expect(r.status == .data)
            let error = try firstError(r.stderr)
            #expect(error["message"]?.stringValue?.contains("nested more than 100 deep") == true, "\(r.stderr.prefix(300))")
            #expect(error["details"]?["limit"]?.intValue == 100)
        }
        // 20 names of 60 bytes: a 1,219-byte path.
        let long = run(["import", "-"], stdin: Self.nested(20, name: String(repeating: "n", count: 58)))
        #expect(long.status == .data)
        #expect(try firstError(long.stderr)["message"]?.stringValue?.contains("folder path is longer than 1024 bytes") == true)
        #expect(FileManager.default.contents(atPath: workspacePath) == before)
        #expect(Date().timeIntervalSince(started) < 60)  // finished at all, not a timing
    }

    @Test(
        """
        W1 folder names: references decoded, whitespace collapsed, / and \\ escaped in the tag; export writes the \
        names back
        """)
    func folderNames() throws {
        let html = """
            <!DOCTYPE NETSCAPE-Bookmark-file-1>
            <DL><p>
                <DT><H3 ADD_DATE="1" FOLDED>  Caf&eacute;
                     &amp; Bar  </H3>
                <DL><p>
                    <DT><H3>a/b\\c</H3>
                    <DL><p>
                        <DT><A HREF="https://cafe.example/">Caf&eacute;</A>
                    </DL><p>
                </DL><p>
                <DT><H3>Empty folder, then a bookmark outside it</H3>
                <DT><A HREF="https://top.example/">Top</A>
            </DL><p>
            """
        _ = try ok(["import", "-"], stdin: html)
        let sites = try lines(["sites", "list"])
        #expect(sites.first?["tags"] == .array([.string(#"Café & Bar/a\/b\\c"#)]))
        #expect(sites.last?["tags"] == nil)
        let exported = run(["export", "-f", "netscape"]).stdout
        #expect(exported.contains("<DT><H3>Café &amp; Bar</H3>"))
        #expect(exported.contains("<DT><H3>a/b\\c</H3>"))
        // A site that gains a folder on a later import is updated, not a duplicate; tags are never removed.
        let again = try ok(
            ["import", "-"], stdin: "<DL><p><DT><H3>Later</H3><DL><p><DT><A HREF=\"https://top.example\">Top</A></DL><p></DL><p>")
        #expect(again["websites"]?["updated"]?.intValue == 1)
        #expect(again["websites"]?["duplicates"]?.intValue == 0)
        #expect(try lines(["sites", "list"]).last?["tags"] == .array([.string("Later")]))
        let same = try ok(["import", "-"], stdin: "<DL><p><DT><A HREF=\"https://top.example\">Top</A></DL><p>")
        #expect(same["websites"]?["duplicates"]?.intValue == 1)
        #expect(try lines(["sites", "list"]).last?["tags"] == .array([.string("Later")]))
    }
}
