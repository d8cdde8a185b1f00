import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// W1: imports keep what sl-tasks does not act on. Taskwarrior's `wait`, `scheduled`, `until`, `recur` and
/// `annotations` go through the built `sl-tasks` and back into the real `task`; skipped records say why;
/// bookmark folders become folder-path tags and come back out as folders.
@Suite struct SLTasksKeptFieldsTests {
    let home = TemporaryDirectory("sl-tasks-kept")

    func tasks(_ arguments: [String], stdin: [UInt8]? = nil) throws -> ToolRun {
        try Tools.run("sl-tasks", arguments, stdin: stdin, home: home.path)
    }

    func ok(_ arguments: [String], stdin: [UInt8]? = nil) throws -> JSON {
        let run = try tasks(arguments, stdin: stdin)
        try #require(run.status == 0, "sl-tasks \(arguments.joined(separator: " ")) exited \(run.status): \(run.stderrText)")
        return try run.json()
    }

    /// A Taskwarrior database of its own (TASKDATA, TASKRC in the test's directory; no hooks, no questions).
    struct Taskwarrior {
        let home: TemporaryDirectory
        let name: String

        init(home: TemporaryDirectory, name: String) throws {
            self.home = home
            self.name = name
            try FileManager.default.createDirectory(atPath: home.file(name), withIntermediateDirectories: true)
            try "data.location=\(home.file(name))\nconfirmation=off\nverbose=nothing\njson.array=on\nhooks=off\nnews.version=2.6.0\n"
                .write(toFile: home.file(name + ".rc"), atomically: false, encoding: .utf8)
        }

        @discardableResult
        func run(_ args: String, stdin: [UInt8]? = nil) throws -> ToolRun {
            let env = ["TASKRC": home.file(name + ".rc"), "TASKDATA": home.file(name), "HOME": home.path]
            let run = try Tools.run(
                "/bin/sh", ["-c", "task rc.confirmation=off rc.hooks=off \(args)"], stdin: stdin, home: home.path, environment: env)
            try #require(run.status == 0, "task \(args) exited \(run.status): \(run.stderrText) \(run.stdoutText)")
            return run
        }

        func export() throws -> [JSON] { try JSON.parse(try run("export").stdout).arrayValue ?? [] }
    }

    @Test(
        """
        W1 a real task export keeps wait, scheduled, until, recur and annotations through sl-tasks and back into \
        task; skipped records say why
        """)
    func taskwarriorKeepsFields() throws {
        try #require(
            Tools.available("task"), "Taskwarrior ('task') is not installed: run scripts/bootstrap, which installs the taskwarrior package")
        let tw = try Taskwarrior(home: home, name: "tw")
        try tw.run("add Weekly review due:2031-01-06T09:00 recur:weekly until:2031-06-01")
        try tw.run(
            """
            add Plan trip due:2031-02-10 wait:2031-02-01 scheduled:2031-02-03 until:2031-03-01 project:home priority:H \
            +travel
            """)
        let planUUID = try #require(tw.export().first { $0["description"]?.stringValue == "Plan trip" }?["uuid"]?.stringValue)
        try tw.run("\(planUUID) annotate 'book the train'")
        try tw.run("\(planUUID) annotate 'ask Ann about dates'")
        try tw.run("add Forget this")
        let goneUUID = try #require(tw.export().first { $0["description"]?.stringValue == "Forget this" }?["uuid"]?.stringValue)
        try tw.run("\(goneUUID) delete")
        let original = try tw.export()
        let template = try #require(original.first { $0["status"]?.stringValue == "recurring" })
        let instance = try #require(original.first { $0["parent"] != nil })
        let plan = try #require(original.first { $0["uuid"]?.stringValue == planUUID })
        try #require(plan["annotations"]?.arrayValue?.count == 2)

        // Into sl-tasks: the template and the deleted task are skipped, each with its uuid and a reason.
        let summary = try ok(["import", "-"], stdin: Array(JSON.array(original).serialized(.compact).utf8))
        #expect(summary["tasks"]?["added"]?.intValue == 2)
        #expect(summary["tasks"]?["skipped"]?.intValue == 2)
        let skipped = summary["skipped"]?.arrayValue ?? []
        #expect(skipped.count == 2)
        let templateSkip = skipped.first { $0["uuid"] == template["uuid"] }
        #expect(templateSkip?["skipped"]?.stringValue?.hasPrefix("recurrence template") == true, "\(skipped)")
        let deletedSkip = skipped.first { $0["uuid"]?.stringValue == goneUUID }
        #expect(deletedSkip?["skipped"]?.stringValue?.contains("deleted") == true, "\(skipped)")

        // show and list print the kept fields, as RFC 3339 UTC, annotations in order; notes as before.
        let shown = try ok(["show", planUUID])
        #expect(shown["wait"]?.stringValue == "2031-02-01T00:00:00Z")
        #expect(shown["scheduled"]?.stringValue == "2031-02-03T00:00:00Z")
        #expect(shown["until"]?.stringValue == "2031-03-01T00:00:00Z")
        #expect(shown["notes"]?.stringValue == "book the train\nask Ann about dates")
        let annotations = shown["annotations"]?.arrayValue ?? []
        #expect(annotations.map { $0["description"]?.stringValue } == ["book the train", "ask Ann about dates"])
        #expect(
            annotations.map { $0["entry"]?.stringValue }
                == (plan["annotations"]?.arrayValue ?? []).map { $0["entry"]?.stringValue.flatMap(Timestamp.init(taskwarrior:))?.rfc3339 })
        let listed = try tasks(["list", "--jsonl"]).jsonLines()
        let listedInstance = try #require(listed.first { $0["id"] == instance["uuid"] })
        #expect(listedInstance["recur"]?.stringValue == "weekly")
        #expect(listedInstance["until"]?.stringValue == "2031-06-01T00:00:00Z")
        #expect(listedInstance["wait"] == nil && listedInstance["annotations"] == nil)  // only when set

        // Back out into a fresh Taskwarrior: task import takes it, and task export gives the fields back.
        let exported = try tasks(["export", "--format", "taskwarrior"])
        try #require(exported.status == 0, "\(exported.stderrText)")
        let fresh = try Taskwarrior(home: home, name: "fresh")
        try fresh.run("import -", stdin: exported.stdout)
        let back = try fresh.export()
        #expect(back.count == 2)
        let plan2 = try #require(back.first { $0["uuid"]?.stringValue == planUUID })
        for key in ["description", "wait", "scheduled", "until", "due", "entry", "project", "priority", "tags", "annotations"] {
            #expect(plan2[key] == plan[key], "\(key): \(plan2[key]?.serialized() ?? "nil") != \(plan[key]?.serialized() ?? "nil")")
        }
        let instance2 = try #require(back.first { $0["uuid"] == instance["uuid"] })
        for key in ["description", "recur", "until", "due", "parent", "imask"] {
            #expect(
                instance2[key] == instance[key],
                "\(key): \(instance2[key]?.serialized() ?? "nil") != \(instance[key]?.serialized() ?? "nil")")
        }
        #expect(instance2["status"]?.stringValue == "pending")

        // And into the Taskwarrior it came from: the tasks are updated in place, nothing added, fields intact.
        try tw.run("import -", stdin: exported.stdout)
        let again = try tw.export()
        #expect(again.count == original.count)
        let plan3 = try #require(again.first { $0["uuid"]?.stringValue == planUUID })
        for key in ["wait", "scheduled", "until", "annotations", "project"] { #expect(plan3[key] == plan[key], "\(key)") }

        // Re-importing the same export into sl-tasks changes nothing and writes nothing.
        let before = FileManager.default.contents(atPath: home.path + "/starline/data/workspace.json")
        let same = try ok(["import", "-"], stdin: Array(JSON.array(original).serialized(.compact).utf8))
        #expect(same["tasks"]?["unchanged"]?.intValue == 2)
        #expect(same["tasks"]?["skipped"]?.intValue == 2)
        #expect(FileManager.default.contents(atPath: home.path + "/starline/data/workspace.json") == before)
    }

    /// A Firefox export: the menu's entries at the top, the toolbar and other bookmarks as folders,
    /// `&amp;` and `&lt;` in a folder name, a separator, folders nested three deep, and a Firefox tag list.
    static let firefox = """
        <!DOCTYPE NETSCAPE-Bookmark-file-1>
        <!-- This is an automatically generated file.
             It will be read and overwritten.
             DO NOT EDIT! -->
        <META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
        <meta http-equiv="Content-Security-Policy"
              content="default-src 'self'; script-src 'none'; img-src data: *; object-src 'none'"></meta>
        <TITLE>Bookmarks</TITLE>
        <H1>Bookmarks Menu</H1>

        <DL><p>
            <DT><A HREF="https://menu.example/" ADD_DATE="1700000000" LAST_MODIFIED="1700000001">In the menu</A>
            <HR>    <DT><H3 ADD_DATE="1700000000" LAST_MODIFIED="1700000002">R&amp;D &lt;lab&gt;</H3>
            <DL><p>
                <DT><A HREF="https://lab.example/notes" ADD_DATE="1700000010" LAST_MODIFIED="1700000011" TAGS="science">Lab notes</A>
                <DT><H3 ADD_DATE="1700000000" LAST_MODIFIED="1700000003">Papers</H3>
                <DL><p>
                    <DT><H3 ADD_DATE="1700000000" LAST_MODIFIED="1700000004">2024</H3>
                    <DL><p>
                        <DT><A HREF="https://arxiv.example/abs/1" ADD_DATE="1700000020">Paper one</A>
                    </DL><p>
                    <DT><A HREF="https://arxiv.example/list" ADD_DATE="1700000030">Listing</A>
                </DL><p>
            </DL><p>
            <DT><H3 ADD_DATE="1700000000" LAST_MODIFIED="1700000005" PERSONAL_TOOLBAR_FOLDER="true">Bookmarks Toolbar</H3>
            <DL><p>
                <DT><A HREF="https://toolbar.example/" ADD_DATE="1700000040">Toolbar site</A>
                <DT><A HREF="https://lab.example/notes#top" ADD_DATE="1700000041">Lab notes again</A>
            </DL><p>
            <DT><H3 ADD_DATE="1700000000" LAST_MODIFIED="1700000006" UNFILED_BOOKMARKS_FOLDER="true">Other Bookmarks</H3>
            <DL><p>
                <DT><H3>AC/DC</H3>
                <DL><p>
                    <DT><A HREF="https://band.example/" ADD_DATE="1700000050">Band</A>
                </DL><p>
            </DL><p>
        </DL>
        """

    /// A Chromium export: everything under "Bookmarks bar" and "Other bookmarks".
    static let chromium = """
        <!DOCTYPE NETSCAPE-Bookmark-file-1>
        <!-- This is an automatically generated file.
             It will be read and overwritten.
             DO NOT EDIT! -->
        <META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
        <TITLE>Bookmarks</TITLE>
        <H1>Bookmarks</H1>
        <DL><p>
            <DT><H3 ADD_DATE="1700000000" LAST_MODIFIED="1700000100" PERSONAL_TOOLBAR_FOLDER="true">Bookmarks bar</H3>
            <DL><p>
                <DT><A HREF="https://bar.example/" ADD_DATE="1700000101" ICON="data:image/png;base64,iVBORw0KGgo=">Bar</A>
                <DT><H3 ADD_DATE="1700000000" LAST_MODIFIED="1700000102">Work</H3>
                <DL><p>
                    <DT><H3 ADD_DATE="1700000000" LAST_MODIFIED="1700000103">Projects</H3>
                    <DL><p>
                        <DT><A HREF="https://project.example/" ADD_DATE="1700000104">Project</A>
                    </DL><p>
                </DL><p>
            </DL><p>
            <DT><H3 ADD_DATE="1700000000" LAST_MODIFIED="1700000200">Other bookmarks</H3>
            <DL><p>
                <DT><A HREF="https://other.example/" ADD_DATE="1700000201">Other</A>
            </DL><p>
        </DL><p>
        """

    func sitesByURL(home: TemporaryDirectory) throws -> [String: JSON] {
        let list = try Tools.run("sl-tasks", ["sites", "list", "--jsonl"], home: home.path).jsonLines()
        var byURL: [String: JSON] = [:]
        for site in list { if let url = site["url"]?.stringValue { byURL[url] = site } }
        return byURL
    }

    func tags(_ site: JSON?) -> [String] { site?["tags"]?.arrayValue?.compactMap(\.stringValue) ?? [] }

    @Test(
        "W1 bookmark folders become folder-path tags, and export writes them back as folders that import again the same",
        arguments: ["firefox", "chromium"])
    func bookmarkFolders(browser: String) throws {
        let html = browser == "firefox" ? Self.firefox : Self.chromium
        try html.write(toFile: home.file("bookmarks.html"), atomically: false, encoding: .utf8)
        _ = try ok(["import", home.file("bookmarks.html")])
        let sites = try sitesByURL(home: home)
        if browser == "firefox" {
            #expect(sites["https://menu.example/"] != nil && sites["https://menu.example/"]?["tags"] == nil)
            #expect(tags(sites["https://lab.example/notes"]) == ["R&D <lab>", "Bookmarks Toolbar"])  // in two folders: one site, two tags
            #expect(tags(sites["https://arxiv.example/abs/1"]) == ["R&D <lab>/Papers/2024"])
            #expect(tags(sites["https://arxiv.example/list"]) == ["R&D <lab>/Papers"])
            #expect(tags(sites["https://toolbar.example/"]) == ["Bookmarks Toolbar"])
            #expect(tags(sites["https://band.example/"]) == ["Other Bookmarks/AC\\/DC"])  // a slash in a name is escaped
        } else {
            #expect(tags(sites["https://bar.example/"]) == ["Bookmarks bar"])
            #expect(tags(sites["https://project.example/"]) == ["Bookmarks bar/Work/Projects"])
            #expect(tags(sites["https://other.example/"]) == ["Other bookmarks"])
        }

        // Exported: folders as <H3>, names escaped; imported into an empty workspace: the same sites and tags.
        let exported = try tasks(["export", "--format", "netscape"])
        try #require(exported.status == 0)
        let text = exported.stdoutText
        if browser == "firefox" {
            #expect(text.contains("<DT><H3>R&amp;D &lt;lab&gt;</H3>"))
            #expect(text.contains("<DT><H3>AC/DC</H3>"))
        } else {
            #expect(text.contains("<DT><H3>Projects</H3>"))
        }
        let other = TemporaryDirectory("sl-tasks-kept-other")
        let imported = try Tools.run("sl-tasks", ["import", "-"], stdin: exported.stdout, home: other.path)
        #expect(imported.status == 0, "\(imported.stderrText)")
        let again = try sitesByURL(home: other)
        #expect(again.count == sites.count)
        for (url, site) in sites {
            #expect(tags(again[url]) == tags(site), "\(url)")
            #expect(again[url]?["title"] == site["title"], "\(url)")
            #expect(again[url]?["createdAt"] == site["createdAt"], "\(url)")
        }
        // And the export of that import is the same file.
        let second = try Tools.run("sl-tasks", ["export", "--format", "netscape"], home: other.path)
        #expect(second.stdoutText == text)
    }
}
