import Foundation
import StarlineCore
@testable import StarlineWorkspace
import StarlineTestSupport
import Testing

/// The workspace file on disk: atomic rewrites, backups, refusal of corrupt and newer files.
@Suite struct StoreTests {
    let dir = TemporaryDirectory("sl-tasks-store")

    func store() -> WorkspaceStore { WorkspaceStore(path: dir.file("data/workspace.json")) }

    func bytes(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { Array($0) } }

    /// A write, kept out of `#expect(throws:)` bodies (no nested closures there: Swift 6.3.1 miscompiles them).
    func clearTasks(_ s: WorkspaceStore) throws {
        try s.update { ws in
            ws.tasks = []; return ((), true)
        }
    }

    func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? nil
    }

    @Test("W1 workspace.json is private (0600 in a 0700 directory) and a missing file reads as empty")
    func privateFile() throws {
        let s = store()
        #expect(try s.read().tasks.isEmpty)
        try s.update { ws in
            ws.tasks.append(TaskRecord.make(title: "one", notes: "", tags: [], due: nil, now: Timestamp(seconds: 0)))
            return ((), true)
        }
        #expect(mode(s.path) == 0o600)
        #expect(mode(dir.file("data")) == 0o700)
        #expect(try s.read().tasks.count == 1)
    }

    @Test("each successful write makes the previous file the .bak; an update that changes nothing writes nothing")
    func backupRotation() throws {
        let s = store()
        try s.update { ws in
            ws.tasks.append(.object([("id", .string("a"))])); return ((), true)
        }
        #expect(bytes(s.backupPath) == nil)
        let first = try #require(bytes(s.path))
        try s.update { ws in
            ws.tasks.append(.object([("id", .string("b"))])); return ((), true)
        }
        #expect(bytes(s.backupPath) == first)
        let second = try #require(bytes(s.path))
        #expect(second != first)
        try s.update { _ in ((), false) }
        #expect(bytes(s.path) == second)
        #expect(bytes(s.backupPath) == first)
        #expect(mode(s.backupPath) == 0o600)
    }

    @Test("W1 a writer killed between its backup rotation and its rename leaves no temporary file behind the next write")
    func backupAlreadyTheCurrentFile() throws {
        let s = store()
        try s.update { ws in
            ws.tasks.append(.object([("id", .string("a"))])); return ((), true)
        }
        try s.update { ws in
            ws.tasks.append(.object([("id", .string("b"))])); return ((), true)
        }
        // The state such a kill leaves: the .bak is a hard link of workspace.json (same inode).
        unlink(s.backupPath)
        #expect(link(s.path, s.backupPath) == 0)
        let current = try #require(bytes(s.path))
        try s.update { ws in
            ws.tasks.append(.object([("id", .string("c"))])); return ((), true)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.file("data")).sorted()
        #expect(names == ["workspace.json", "workspace.json.bak", "workspace.json.lock"])
        #expect(bytes(s.backupPath) == current)
    }

    @Test("unknown top-level keys, unknown record fields and key order survive a rewrite")
    func unknownFieldsSurvive() throws {
        let s = store()
        try FileManager.default.createDirectory(atPath: dir.file("data"), withIntermediateDirectories: true)
        let original = """
            {"x-sync":{"peer":"laptop"},"version":1,"tasks":[{"priority":"high","id":"aaaa1111-0000-4000-8000-000000000001","title":"t","notes":"","tags":[],"due":null,"done":false,"doneAt":null,"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z","x":[1,2.5,{"deep":true}]}],"websites":[{"favicon":"data:x","id":"bbbb1111-0000-4000-8000-000000000001","url":"https://a.example/","normalizedUrl":"https://a.example/","title":null,"createdAt":"2026-01-01T00:00:00Z"}],"recents":[],"zz-last":null}
            """
        try original.write(toFile: s.path, atomically: false, encoding: .utf8)
        try s.update { ws in
            ws.tasks[0].set("title", .string("changed"))
            return ((), true)
        }
        let after = try JSON.parse(try #require(bytes(s.path)))
        #expect(after.objectValue?.map(\.0) == ["x-sync", "version", "tasks", "websites", "recents", "zz-last"])
        #expect(after["x-sync"]?["peer"]?.stringValue == "laptop")
        let task = try #require(after["tasks"]?[0])
        #expect(task.objectValue?.first?.0 == "priority")
        #expect(task["title"]?.stringValue == "changed")
        #expect(task["x"] == .array([.int(1), .double(2.5), .object([("deep", .bool(true))])]))
        #expect(after["websites"]?[0]?["favicon"]?.stringValue == "data:x")
    }

    @Test("corrupt, truncated and empty files are refused with CORRUPT_FILE naming the backup, and left untouched")
    func corruptFiles() throws {
        let s = store()
        try s.update { ws in
            ws.tasks.append(TaskRecord.make(title: "good", notes: "", tags: [], due: nil, now: .now())); return ((), true)
        }
        try s.update { ws in
            ws.tasks.append(TaskRecord.make(title: "good 2", notes: "", tags: [], due: nil, now: .now())); return ((), true)
        }
        let good = try #require(bytes(s.path))
        for bad in [
            Array(good.prefix(good.count / 2)), [], Array("{\"version\":1,\"tasks\":{}}".utf8), Array("[1,2]".utf8),
            Array("{\"tasks\":[]}".utf8), Array("\u{1}garbage".utf8)
        ] {
            try Data(bad).write(to: URL(fileURLWithPath: s.path))
            let readError = #expect(throws: StarlineError.self) { try s.read() }
            #expect(readError?.code == .corruptFile)
            #expect(readError?.exitStatus == .data)
            #expect(readError?.message.contains(s.backupPath) == true)
            #expect(readError?.details?["backup"]?.stringValue == s.backupPath)
            let writeError = #expect(throws: StarlineError.self) { try clearTasks(s) }
            #expect(writeError?.code == .corruptFile)
            #expect(bytes(s.path) == bad)
            #expect(try JSON.parse(try #require(bytes(s.backupPath)))["tasks"]?.arrayValue?.count == 1)
        }
    }

    @Test("a newer format version is readable but every write is refused with UNSUPPORTED_VERSION")
    func newerVersion() throws {
        let s = store()
        try FileManager.default.createDirectory(atPath: dir.file("data"), withIntermediateDirectories: true)
        let text =
            #"{"version":2,"tasks":[{"id":"aaaa1111-0000-4000-8000-000000000001","title":"from the future","shape":"new"}],"websites":[],"recents":[]}"#
        try text.write(toFile: s.path, atomically: false, encoding: .utf8)
        let ws = try s.read()
        #expect(ws.version == 2)
        #expect(ws.tasks[0]["title"]?.stringValue == "from the future")
        let error = #expect(throws: StarlineError.self) { try clearTasks(s) }
        #expect(error?.code == .unsupportedVersion)
        #expect(error?.exitStatus == .data)
        #expect(error?.message.contains("version 2") == true)
        #expect(String(decoding: try #require(bytes(s.path)), as: UTF8.self) == text)
        #expect(bytes(s.backupPath) == nil)
    }

    @Test("prefix lookups: NOT_FOUND (exit 6) and AMBIGUOUS_ID (exit 2) listing the candidates")
    func lookups() throws {
        var ws = Workspace()
        ws.tasks = [
            TaskRecord.make(title: "first", notes: "", tags: [], due: nil, now: .now(), id: "aaaa1111-0000-4000-8000-000000000001"),
            TaskRecord.make(title: "second", notes: "", tags: [], due: nil, now: .now(), id: "aaaa2222-0000-4000-8000-000000000002")
        ]
        #expect(try ws.taskIndex("aaaa2") == 1)
        let missing = #expect(throws: StarlineError.self) { try ws.taskIndex("ffff") }
        #expect(missing?.exitStatus == .notFound)
        let ambiguous = #expect(throws: StarlineError.self) { try ws.taskIndex("aaaa") }
        #expect(ambiguous?.code == .ambiguousID)
        #expect(ambiguous?.exitStatus == .usage)
        let candidates = ambiguous?.details?["candidates"]?.arrayValue ?? []
        #expect(
            candidates.compactMap { $0["id"]?.stringValue } == [
                "aaaa1111-0000-4000-8000-000000000001", "aaaa2222-0000-4000-8000-000000000002"
            ])
        #expect(candidates.compactMap { $0["title"]?.stringValue } == ["first", "second"])
    }
}

@Suite struct FilterTests {
    // Hour-based spans and absolute bounds do not depend on the local zone; the local-day filters are
    // tested end to end with TZ set per process.
    let now = Timestamp(rfc3339: "2026-11-30T08:00:00Z")!

    func task(_ title: String, due: Timestamp?, done: Bool = false, tags: [String] = []) -> JSON {
        var t = TaskRecord.make(title: title, notes: "", tags: tags, due: due, now: now)
        if done { t.set("done", .bool(true)); t.set("doneAt", .string(now.rfc3339)) }
        return t
    }

    func titles(_ filter: TaskFilter, _ tasks: [JSON]) -> [String] { filter.apply(tasks).compactMap { $0.task["title"]?.stringValue } }

    @Test("overdue is due < now: a task due exactly now is not overdue, one without a due date never is")
    func overdue() {
        var f = TaskFilter(now: now)
        f.overdue = true
        let tasks = [task("at now", due: now), task("1s before", due: now - 1), task("no due", due: nil), task("1s after", due: now + 1)]
        #expect(titles(f, tasks) == ["1s before"])
    }

    @Test("due-within D is now ≤ due ≤ now + D, both ends included")
    func dueWithin() {
        var f = TaskFilter(now: now)
        f.dueWithin = TimeSpan(seconds: 36 * 3600)
        let end = now + 36 * 3600
        let tasks = [
            task("end+1", due: end + 1), task("end", due: end), task("now", due: now), task("now-1", due: now - 1), task("none", due: nil)
        ]
        #expect(titles(f, tasks) == ["now", "end"])
    }

    @Test("due-before is strict (<), due-after is strict (>)")
    func beforeAfter() {
        let t = now + 3600
        let tasks = [task("t-1", due: t - 1), task("t", due: t), task("t+1", due: t + 1), task("none", due: nil)]
        var before = TaskFilter(now: now)
        before.dueBefore = t
        #expect(titles(before, tasks) == ["t-1"])
        var after = TaskFilter(now: now)
        after.dueAfter = t
        #expect(titles(after, tasks) == ["t+1"])
    }

    @Test("done tasks only with --done or --all; --no-due; tags must all match; sorted by due then file order")
    func stateAndTags() {
        let tasks = [
            task("open late", due: now + 100, tags: ["a"]), task("done", due: now - 5, done: true, tags: ["a", "b"]),
            task("open none", due: nil, tags: ["a", "b"]), task("open early", due: now - 100)
        ]
        var f = TaskFilter(now: now)
        #expect(titles(f, tasks) == ["open early", "open late", "open none"])
        f.done = .only
        #expect(titles(f, tasks) == ["done"])
        f.done = .all
        #expect(titles(f, tasks) == ["open early", "done", "open late", "open none"])
        f.tags = ["a", "b"]
        #expect(titles(f, tasks) == ["done", "open none"])
        var noDue = TaskFilter(now: now)
        noDue.noDue = true
        #expect(titles(noDue, tasks) == ["open none"])
    }
}
