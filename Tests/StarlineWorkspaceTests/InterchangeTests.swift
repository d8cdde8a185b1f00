import Foundation
import StarlineCore
@testable import StarlineWorkspace
import StarlineTestSupport
import Testing

@Suite struct InterchangeTests {
    let now = Timestamp(rfc3339: "2026-11-30T08:00:00Z")!

    @Test("format detection: HTML, our document, a Taskwarrior array or JSON Lines")
    func detection() {
        #expect(InterchangeFormat.detect(Array("  <!DOCTYPE NETSCAPE-Bookmark-file-1>".utf8)) == .netscape)
        #expect(InterchangeFormat.detect(Array(#"{"version":1,"tasks":[]}"#.utf8)) == .json)
        #expect(InterchangeFormat.detect(Array(#"{"websites":[]}"#.utf8)) == .json)
        #expect(InterchangeFormat.detect(Array("\n[{\"uuid\":\"x\"}]".utf8)) == .taskwarrior)
        #expect(
            InterchangeFormat.detect(Array("{\"uuid\":\"a\",\"description\":\"x\"}\n{\"uuid\":\"b\",\"description\":\"y\"}\n".utf8))
                == .taskwarrior)
        #expect(InterchangeFormat.detect(Array("hello".utf8)) == nil)
        #expect(InterchangeFormat.detect([]) == nil)
    }

    @Test("Taskwarrior export: status, dates in task's format, tags, notes as an annotation, kept fields")
    func taskwarriorExport() throws {
        var task = TaskRecord.make(
            title: "Pay rent", notes: "by transfer", tags: ["home"], due: now + 86400, now: now,
            id: "aaaa1111-0000-4000-8000-000000000001")
        task.set("done", .bool(true))
        task.set("doneAt", .string("2026-11-30T09:00:00Z"))
        task.set("taskwarrior", .object([("project", .string("house")), ("urgency", .double(3.2))]))
        let tw = Taskwarrior.export(task)
        #expect(tw["uuid"]?.stringValue == "aaaa1111-0000-4000-8000-000000000001")
        #expect(tw["description"]?.stringValue == "Pay rent")
        #expect(tw["status"]?.stringValue == "completed")
        #expect(tw["entry"]?.stringValue == "20261130T080000Z")
        #expect(tw["due"]?.stringValue == "20261201T080000Z")
        #expect(tw["end"]?.stringValue == "20261130T090000Z")
        #expect(tw["tags"] == .array([.string("home")]))
        #expect(tw["annotations"]?[0]?["description"]?.stringValue == "by transfer")
        #expect(tw["project"]?.stringValue == "house")
        #expect(tw["urgency"] == nil)
    }

    @Test("Taskwarrior import: mapping, upsert keeps our unknown fields, deleted and recurring handled, bad input refused")
    func taskwarriorImport() throws {
        let line =
            #"{"id":3,"uuid":"BBBB1111-0000-4000-8000-000000000002","description":"Call Bob","status":"pending","entry":"20261101T100000Z","modified":"20261102T100000Z","due":"20261203T170000Z","tags":["phone","work"],"annotations":[{"entry":"20261101T100000Z","description":"number in contacts"},{"entry":"20261102T100000Z","description":"after 5"}],"project":"crm","priority":"H","urgency":7.1}"#
        let tw = try JSON.parse(line)
        guard case .upsert(let task) = try Taskwarrior.importTask(tw, existing: nil, now: now, index: 0) else {
            Issue.record("expected an upsert")
            return
        }
        #expect(task["id"]?.stringValue == "bbbb1111-0000-4000-8000-000000000002")
        #expect(task["title"]?.stringValue == "Call Bob")
        #expect(task["due"]?.stringValue == "2026-12-03T17:00:00Z")
        #expect(task["createdAt"]?.stringValue == "2026-11-01T10:00:00Z")
        #expect(task["updatedAt"]?.stringValue == "2026-11-02T10:00:00Z")
        #expect(task["notes"]?.stringValue == "number in contacts\nafter 5")
        #expect(TaskRecord.tags(task) == ["phone", "work"])
        #expect(task["done"]?.boolValue == false)
        #expect(task["taskwarrior"]?["project"]?.stringValue == "crm")
        #expect(task["taskwarrior"]?["priority"]?.stringValue == "H")
        #expect(task["taskwarrior"]?["urgency"] == nil)
        #expect(task["taskwarrior"]?["id"] == nil)

        var existing = task
        existing.set("x-mine", .string("kept"))
        var completed = tw
        completed.set("status", .string("completed"))
        completed.set("end", .string("20261204T080000Z"))
        guard case .upsert(let updated) = try Taskwarrior.importTask(completed, existing: existing, now: now, index: 0) else {
            Issue.record("expected an upsert")
            return
        }
        #expect(updated["x-mine"]?.stringValue == "kept")
        #expect(updated["done"]?.boolValue == true)
        #expect(updated["doneAt"]?.stringValue == "2026-12-04T08:00:00Z")

        var deleted = tw
        deleted.set("status", .string("deleted"))
        guard case .delete(let id) = try Taskwarrior.importTask(deleted, existing: nil, now: now, index: 0) else {
            Issue.record("expected a delete")
            return
        }
        #expect(id == "bbbb1111-0000-4000-8000-000000000002")
        var template = tw
        template.set("status", .string("recurring"))
        guard case .skip = try Taskwarrior.importTask(template, existing: nil, now: now, index: 0) else {
            Issue.record("expected a skip")
            return
        }

        var badDate = tw
        badDate.set("due", .string("someday"))
        let e1 = #expect(throws: StarlineError.self) { try Taskwarrior.importTask(badDate, existing: nil, now: now, index: 4) }
        #expect(e1?.exitStatus == .data)
        #expect(e1?.message.contains("task 5") == true)
        let e2 = #expect(throws: StarlineError.self) {
            try Taskwarrior.importTask(.object([("description", .string("x"))]), existing: nil, now: now, index: 0)
        }
        #expect(e2?.message.contains("uuid") == true)
    }

    @Test("Taskwarrior files: a JSON array, or JSON Lines with trailing commas")
    func taskwarriorFiles() throws {
        let array = try Taskwarrior.parse(Array("[\n{\"uuid\":\"a\"},\n{\"uuid\":\"b\"}\n]\n".utf8))
        #expect(array.count == 2)
        let lines = try Taskwarrior.parse(Array("{\"uuid\":\"a\"}\n\n{\"uuid\":\"b\"},\r\n{\"uuid\":\"c\"}".utf8))
        #expect(lines.compactMap { $0["uuid"]?.stringValue } == ["a", "b", "c"])
        let bad = #expect(throws: StarlineError.self) { try Taskwarrior.parse(Array("{\"uuid\":\"a\"}\n{oops}\n".utf8)) }
        #expect(bad?.message.contains("line 2") == true)
    }

    @Test("Netscape bookmarks: a browser's export is read (folders flattened, entities decoded, attributes in any case)")
    func netscapeParse() throws {
        let html = """
            <!DOCTYPE NETSCAPE-Bookmark-file-1>
            <META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
            <TITLE>Bookmarks</TITLE>
            <H1>Bookmarks Menu</H1>
            <DL><p>
                <DT><H3 ADD_DATE="1700000000" LAST_MODIFIED="1700000001">Work &amp; Play</H3>
                <DL><p>
                    <DT><A HREF="https://example.com/a?x=1&amp;y=2" ADD_DATE="1700000100" ICON="data:image/png;base64,AAA">Example &lt;A&gt; &#8211; &#x661F;</A>
                    <DT><a href='https://example.org/' add_date=1700000200>  Org  </a>
                </DL><p>
                <DT><A HREF="place:sort=8&maxResults=10">Recent Tags</A>
                <DT><A HREF="https://no-title.example/"></A>
                <DT><A ADD_DATE="1">no href</A>
            </DL><p>
            """
        let marks = try NetscapeBookmarks.parse(html)
        #expect(
            marks.map(\.url) == [
                "https://example.com/a?x=1&y=2", "https://example.org/", "place:sort=8&maxResults=10", "https://no-title.example/"
            ])
        #expect(marks[0].title == "Example <A> – 星")
        #expect(marks[0].added == Timestamp(seconds: 1_700_000_100))
        #expect(marks[1].title == "Org")
        #expect(marks[1].added == Timestamp(seconds: 1_700_000_200))
        #expect(marks[3].title == nil)
    }

    @Test("Netscape bookmarks written by us read back to the same URLs, titles and dates")
    func netscapeRoundTrip() throws {
        let sites = [
            SiteRecord.make(url: "https://example.com/?a=1&b=\"2\"", normalized: "x", title: "A <b> & \"c\"", now: now),
            SiteRecord.make(url: "https://example.org/星", normalized: "y", title: nil, now: now + 5)
        ]
        let marks = try NetscapeBookmarks.parse(NetscapeBookmarks.render(sites))
        #expect(marks.map(\.url) == ["https://example.com/?a=1&b=\"2\"", "https://example.org/星"])
        #expect(marks.map(\.title) == ["A <b> & \"c\"", "https://example.org/星"])
        #expect(marks.map(\.added) == [now, now + 5])
    }

    @Test("check reports malformed fields, duplicate ids, stale keys and duplicate sites")
    func checkFindsProblems() throws {
        let doc = try JSON.parse(
            """
            {"version":1,
             "tasks":[{"id":"aaaa1111-0000-4000-8000-000000000001","title":"ok","notes":"","tags":[],"due":null,"done":false,"doneAt":null,"createdAt":"2026-11-30T08:00:00Z","updatedAt":"2026-11-30T08:00:00Z"},
                      {"id":"aaaa1111-0000-4000-8000-000000000001","title":"","tags":[1],"due":"next week","done":"no","createdAt":"2026-11-30T08:00:00Z","updatedAt":"2026-11-30T08:00:00Z"}],
             "websites":[{"id":"bbbb1111-0000-4000-8000-000000000001","url":"https://a.example/x/","normalizedUrl":"https://a.example/x","title":null,"createdAt":"2026-11-30T08:00:00Z"},
                         {"id":"bbbb1111-0000-4000-8000-000000000002","url":"HTTPS://A.example/x#f","normalizedUrl":"stale","title":null,"createdAt":"2026-11-30T08:00:00Z"},
                         {"id":"bbbb1111-0000-4000-8000-000000000003","url":"not a url","createdAt":"2026-11-30T08:00:00Z"}],
             "recents":[{"url":"https://r.example/","title":null,"visits":0,"lastVisitedAt":"2026-11-30T08:00:00Z"}]}
            """)
        let report = WorkspaceCheck.run(try Workspace(json: doc))
        let fields = report.problems.compactMap { p -> String? in
            guard let r = p["record"]?.stringValue, let f = p["field"]?.stringValue else { return nil }
            return r + "." + f
        }
        for expected in [
            "tasks[1].id", "tasks[1].title", "tasks[1].tags", "tasks[1].due", "tasks[1].done", "tasks[1].doneAt",
            "websites[1].normalizedUrl", "websites[2].url", "recents[0].visits"
        ] {
            #expect(fields.contains(expected), "missing \(expected) in \(fields)")
        }
        #expect(!fields.contains { $0.hasPrefix("tasks[0]") })
        #expect(report.duplicateSites.count == 1)
        #expect(report.duplicateSites.first?["normalizedUrl"]?.stringValue == "https://a.example/x")
        #expect(report.duplicateSites.first?["ids"]?.arrayValue?.count == 2)
    }
}

@Suite struct ScannerTests {
    let dir = TemporaryDirectory("sl-tasks-scan")

    @Test("add's byte splice gives the same document as decoding, appending and re-encoding")
    func spliceMatchesDecode() throws {
        let docs = [
            "{\"version\":1,\"tasks\":[],\"websites\":[]}",
            "{\"x\":{\"a\":[1,{\"b\":\"\\u00e9\\ud83d\\ude00\"}]},\"version\":1,\"tasks\":[{\"id\":\"1\",\"t\":\"é\"}],\"recents\":[]}\n",
            "\u{FEFF}{ \"tasks\" : [ {\"id\":\"1\"} , {\"id\":\"2\"} ] , \"version\" : 1 }"
        ]
        let task = TaskRecord.make(title: "new \"one\"\n", notes: "n", tags: ["a"], due: nil, now: .now())
        for doc in docs {
            let bytes = Array(doc.utf8)
            let scan = try #require(WorkspaceScanner.scan(bytes), "scan refused \(doc)")
            let spliced = try JSON.parse(WorkspaceScanner.appending(task, to: bytes, at: scan))
            var expected = try Workspace(json: try JSON.parse(bytes))
            expected.tasks.append(task)
            #expect(try Workspace(json: spliced).json == expected.json)
            #expect(spliced["tasks"]?.arrayValue?.last == task)
        }
    }

    @Test(
        "the scanner refuses what the parser refuses, and shapes it cannot splice",
        arguments: [
            "", "{}", "[]", "{\"version\":1}", "{\"version\":1,\"tasks\":[1]}", "{\"version\":1,\"tasks\":{}}",
            "{\"version\":1.0,\"tasks\":[]}", "{\"version\":\"1\",\"tasks\":[]}", "{\"version\":1,\"tasks\":[]",
            "{\"version\":1,\"tasks\":[]}x",
            "{\"version\":1,\"tasks\":[{\"a\":01}]}", "{\"version\":1,\"tasks\":[{\"a\":\"\\x\"}]}",
            "{\"version\":1,\"tasks\":[{\"a\":\"\\ud800\"}]}",
            "{\"version\":1,\"tasks\":[{\"a\":tru}]}", "{\"version\":1,\"tasks\":[],\"tasks\":[]}", "{\"vers\\u0069on\":1,\"tasks\":[]}",
            "{\"version\":1,\"tasks\":[{\"a\":\"\t\"}]}", "{\"version\":1,\"tasks\":[{\"a\":[1,]}]}"
        ])
    func refuses(doc: String) {
        #expect(WorkspaceScanner.scan(Array(doc.utf8)) == nil)
    }

    @Test("listing from the file's bytes gives exactly what decoding everything gives, odd records included")
    func fastListMatchesFullDecode() throws {
        let doc = """
            {"version":1,"tasks":[
             {"id":"1","title":"past","due":"2026-11-30T07:59:59Z","done":false,"tags":["a"]},
             {"id":"2","title":"at now","due":"2026-11-30T08:00:00Z","done":false},
             {"id":"3","title":"future","due":"2026-12-01T08:00:00Z","done":false,"tags":["a","b"]},
             {"id":"4","title":"done past","due":"2026-11-29T08:00:00Z","done":true},
             {"id":"5","title":"no due","due":null,"done":false},
             {"id":"6","title":"absent due"},
             {"id":"7","title":"escaped due","due":"2026-11-29T08:00:00\\u005a","done":false},
             {"id":"8","title":"offset due","due":"2026-11-30T08:30:00+01:00","done":false},
             {"id":"9","title":"escaped key","d\\u0075e":"2026-11-29T08:00:00Z","done":false},
             {"id":"10","title":"string done","due":"2026-11-29T08:00:00Z","done":"yes"},
             {"id":"11","title":"twice","due":"2026-12-05T08:00:00Z","due":"2026-11-29T08:00:00Z","done":false},
             {"id":"12","title":"numeric due","due":5,"done":false},
             {"id":"13","title":"bad due","due":"next week","done":false},
             {"id":"14","title":"done null","due":"2026-11-29T09:00:00Z","done":null}
            ],"websites":[]}
            """
        let bytes = Array(doc.utf8)
        let scan = try #require(WorkspaceScanner.scan(bytes, collectTasks: true))
        #expect(scan.tasks.count == 14)
        let tasks = try Workspace(json: try JSON.parse(bytes)).tasks
        let now = Timestamp(rfc3339: "2026-11-30T08:00:00Z")!
        let filters = TaskFilter.samples(now: now, dueWithin: TimeSpan(seconds: 86400)) { range in
            range.dueAfter = now - 86400
            range.dueBefore = now + 3600
            range.tags = ["a"]
        }
        for f in filters {
            // The same tasks with the same working-set numbers, whichever path lists them.
            let full = f.apply(tasks).map { "\($0.task["title"]?.stringValue ?? "?")#\($0.number.map(String.init) ?? "done")" }
            let fast = try f.apply(bytes: bytes, slices: scan.tasks).map {
                "\($0.task["title"]?.stringValue ?? "?")#\($0.number.map(String.init) ?? "done")"
            }
            #expect(fast == full)
        }
        var overdue = TaskFilter(now: now)
        overdue.overdue = true
        // Sorted by due date; escaped keys and values, duplicate keys and non-boolean `done` as the decoder reads them.
        #expect(
            try overdue.apply(bytes: bytes, slices: scan.tasks).compactMap { $0.task["title"]?.stringValue }
                == ["escaped due", "escaped key", "string done", "twice", "done null", "offset due", "past"])
    }

    @Test("invalid UTF-8 is refused by the scanner, and add then reports the file as corrupt without touching it")
    func invalidUTF8() throws {
        let bytes = Array("{\"version\":1,\"tasks\":[{\"t\":\"".utf8) + [0xC3, 0x28] + Array("\"}]}".utf8)
        #expect(WorkspaceScanner.scan(bytes) == nil)
        #expect(WorkspaceScanner.scan(Array("{\"version\":1,\"tasks\":[{\"t\":\"".utf8) + [0xED, 0xA0, 0x80] + Array("\"}]}".utf8)) == nil)
        let store = WorkspaceStore(path: dir.file("ws.json"))
        try Data(bytes).write(to: URL(fileURLWithPath: store.path))
        let task = TaskRecord.make(title: "x", notes: "", tags: [], due: nil, now: .now())
        let error = #expect(throws: StarlineError.self) { try store.appendTask(task) }
        #expect(error?.code == .corruptFile)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: store.path))) == bytes)
    }
}
