#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineWorkspace

/// `sl-tasks`: the workbench (W1) — tasks, website bookmarks and recent visits in `workspace.json`.
/// Local only: nothing here touches the network (W1), and its data lives in this one store (W9).
public enum TasksTool {
    public static func main() -> Never {
        ToolMain.run(spec) { invocation in
            // Local dates follow TZ; read it once before any local-time computation.
            tzset()
            return try run(invocation)
        }
    }

    /// What every command needs: the store, the clock and the output.
    struct Context {
        let invocation: CommandContext
        let store: WorkspaceStore
        let now: Timestamp
        var args: ParsedArguments { invocation.arguments }
        var output: Output { invocation.output }

        init(_ invocation: CommandContext) throws {
            self.invocation = invocation
            store = WorkspaceStore(invocation: invocation)
            if let text = invocation.arguments.value("now") {
                now = try DateInput.parse(text, now: .now(), option: "now")
            } else {
                now = .now()
            }
        }

        func date(_ option: String) throws -> Timestamp? {
            try args.value(option).map { try DateInput.parse($0, now: now, option: option) }
        }

        /// Prints a list: one JSON array, or one line per record with --jsonl.
        func emitList(_ records: [JSON]) {
            var w = JSONWriter(capacity: records.count * 320 + 16)
            if output.mode == .jsonLines {
                for r in records {
                    w.write(r, pretty: false)
                    w.bytes.append(0x0A)
                }
            } else {
                w.write(.array(records), pretty: output.mode == .pretty)
                w.bytes.append(0x0A)
            }
            output.writeBytes(w.bytes)
        }
    }

    static func run(_ invocation: CommandContext) throws -> ExitStatus {
        let c = try Context(invocation)
        switch invocation.arguments.path {
        case ["add"]: try add(c)
        case ["list"]: try list(c)
        case ["show"]: try show(c)
        case ["edit"]: try edit(c)
        case ["done"]: try setDone(c, true)
        case ["undo"]: try setDone(c, false)
        case ["rm"]: try removeTask(c)
        case ["sites", "add"]: try addSite(c)
        case ["sites", "list"]: c.emitList(try c.store.read().websites.map(SiteRecord.output))
        case ["sites", "rm"]: try removeSite(c)
        case ["sites", "dedup"]: try dedupSites(c)
        case ["recent", "add"]: try addRecent(c)
        case ["recent", "list"]: try listRecents(c)
        case ["recent", "clear"]: try clearRecents(c)
        case ["export"]: try export(c)
        case ["import"]: try importFile(c)
        case ["check"]: return try check(c)
        default: throw StarlineError(.internalError, "unhandled command \(invocation.arguments.path)")
        }
        return .ok
    }

    // MARK: - tasks

    static func tags(_ c: Context, _ option: String) throws -> [String] {
        var result: [String] = []
        for value in c.args.values(option) {
            for tag in value.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
                try TaskRecord.validateTag(tag)
                if !result.contains(tag) { result.append(tag) }
            }
        }
        return result
    }

    static func notes(_ c: Context) throws -> String? {
        guard let value = c.args.value("notes") else { return nil }
        guard value == "-" else { return value }
        let bytes = try c.invocation.readStandardInput()
        guard var text = String(validating: bytes, as: UTF8.self) else {
            throw StarlineError(.data, "the notes on standard input are not UTF-8 text")
        }
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    static func add(_ c: Context) throws {
        let title = c.args.positionals.joined(separator: " ").trimmingSpaces
        guard !title.isEmpty else { throw StarlineError(.usage, "the task title is empty") }
        let due = try c.date("due")
        let tags = try tags(c, "tag")
        let notes = try notes(c) ?? ""
        let task = TaskRecord.make(title: title, notes: notes, tags: tags, due: due, now: c.now)
        try c.store.appendTask(task)
        c.output.emit(TaskRecord.output(task))
    }

    static func list(_ c: Context) throws {
        var filter = TaskFilter(now: c.now)
        filter.overdue = c.args.flag("overdue")
        filter.today = c.args.flag("today")
        filter.noDue = c.args.flag("no-due")
        filter.dueBefore = try c.date("due-before")
        filter.dueAfter = try c.date("due-after")
        if let text = c.args.value("due-within") {
            guard let span = TimeSpan(parsing: text) else {
                throw StarlineError(.usage, "invalid duration '\(text)' for --due-within; use a number and a unit: 1d, 36h, 2w, 90m, 1d12h",
                                    details: .object([("option", .string("due-within")), ("value", .string(text))]))
            }
            filter.dueWithin = span
        }
        filter.done = c.args.flag("all") ? .all : c.args.flag("done") ? .only : .open
        filter.tags = try tags(c, "tag")
        // The common case decodes only the tasks that may match (WorkspaceScanner); anything unusual,
        // including every error, goes through the full decoder.
        if let bytes = try AtomicFile.read(c.store.path), let scan = WorkspaceScanner.scan(bytes, collectTasks: true) {
            c.emitList(try filter.apply(bytes: bytes, slices: scan.tasks).map(TaskRecord.output))
            return
        }
        let workspace = try c.store.read()
        c.emitList(filter.apply(workspace.tasks).map(TaskRecord.output))
    }

    static func show(_ c: Context) throws {
        let ws = try c.store.read()
        c.output.emit(TaskRecord.output(ws.tasks[try ws.taskIndex(c.args.positionals[0])]))
    }

    static func edit(_ c: Context) throws {
        let title = c.args.value("title").map(\.trimmingSpaces)
        if let title, title.isEmpty { throw StarlineError(.usage, "the task title is empty") }
        if c.args.flag("no-due"), c.args.value("due") != nil {
            throw StarlineError(.usage, "--due and --no-due cannot be used together")
        }
        let due = try c.date("due")
        let clearDue = c.args.flag("no-due")
        let notes = try notes(c)
        let added = try tags(c, "tag")
        let removed = try tags(c, "untag")
        guard title != nil || due != nil || clearDue || notes != nil || !added.isEmpty || !removed.isEmpty else {
            throw StarlineError(.usage, "nothing to change: give --title, --due, --no-due, --notes, --tag or --untag")
        }
        let task = try c.store.update { ws in
            let i = try ws.taskIndex(c.args.positionals[0])
            var task = ws.tasks[i]
            if let title { task.set("title", .string(title)) }
            if let due { task.set("due", .string(due.rfc3339)) }
            if clearDue { task.set("due", .null) }
            if let notes { task.set("notes", .string(notes)) }
            if !added.isEmpty || !removed.isEmpty {
                var tags = TaskRecord.tags(task)
                for t in added where !tags.contains(t) { tags.append(t) }
                tags.removeAll { removed.contains($0) }
                task.set("tags", .array(tags.map(JSON.string)))
            }
            task.set("updatedAt", .string(c.now.rfc3339))
            ws.tasks[i] = task
            return (task, true)
        }
        c.output.emit(TaskRecord.output(task))
    }

    /// `done` / `undo`; doing what is already so changes nothing and still succeeds.
    static func setDone(_ c: Context, _ done: Bool) throws {
        let task = try c.store.update { ws in
            let i = try ws.taskIndex(c.args.positionals[0])
            var task = ws.tasks[i]
            if TaskRecord.isDone(task) == done { return (task, false) }
            task.set("done", .bool(done))
            task.set("doneAt", done ? .string(c.now.rfc3339) : .null)
            task.set("updatedAt", .string(c.now.rfc3339))
            ws.tasks[i] = task
            return (task, true)
        }
        c.output.emit(TaskRecord.output(task))
    }

    static func removeTask(_ c: Context) throws {
        let task = try c.store.update { ws in
            let i = try ws.taskIndex(c.args.positionals[0])
            return (ws.tasks.remove(at: i), true)
        }
        c.output.emit(TaskRecord.output(task))
    }

    // MARK: - sites

    static func normalized(_ url: String) throws -> String {
        guard let n = URLNormalizer.normalize(url) else {
            throw StarlineError(.invalidURL, "'\(url)' is not an absolute URL (scheme://host/…)", details: .object([("url", .string(url))]))
        }
        return n
    }

    /// Adds a site unless one with the same normalised URL exists; the path shared by `sites add` and
    /// `import`. Returns the stored record and whether it was a duplicate.
    static func insertSite(_ ws: inout Workspace, url: String, normalized: String, title: String?, createdAt: Timestamp,
                           id: String? = nil) -> (record: JSON, duplicate: Bool) {
        if let existing = ws.websites.first(where: { SiteRecord.key($0) == normalized }) { return (existing, true) }
        var newID = RandomUUID.make()
        if let id, RandomUUID.isValid(id), !ws.websites.contains(where: { $0["id"]?.stringValue?.lowercased() == id.lowercased() }) {
            newID = id.lowercased()
        }
        let record = SiteRecord.make(url: url, normalized: normalized, title: title, now: createdAt, id: newID)
        ws.websites.append(record)
        return (record, false)
    }

    static func addSite(_ c: Context) throws {
        let url = c.args.positionals[0]
        let key = try normalized(url)
        let title = c.args.value("title")
        let (record, duplicate) = try c.store.update { ws in
            let r = insertSite(&ws, url: url, normalized: key, title: title, createdAt: c.now)
            return (r, !r.duplicate)
        }
        var out = SiteRecord.output(record)
        out.set("duplicate", .bool(duplicate))  // output only, never stored
        c.output.emit(out)
    }

    static func removeSite(_ c: Context) throws {
        let target = c.args.positionals[0]
        let site = try c.store.update { ws in
            let i: Int
            if target.contains("://") {
                let key = try normalized(target)
                guard let hit = ws.websites.firstIndex(where: { SiteRecord.key($0) == key }) else {
                    throw StarlineError(.notFound, "no site with the URL \(target) (normalised: \(key))",
                                        details: .object([("url", .string(target)), ("normalizedUrl", .string(key))]))
                }
                i = hit
            } else {
                i = try ws.siteIndex(target)
            }
            return (ws.websites.remove(at: i), true)
        }
        c.output.emit(SiteRecord.output(site))
    }

    static func dedupSites(_ c: Context) throws {
        let dryRun = c.args.flag("dry-run")
        func plan(_ ws: inout Workspace) -> (JSON, Bool) {
            var groups: [(key: String, indices: [Int])] = []
            var position: [String: Int] = [:]
            var changed = false
            for (i, site) in ws.websites.enumerated() {
                guard let key = SiteRecord.key(site) else { continue }
                if site["normalizedUrl"]?.stringValue != key {
                    ws.websites[i].set("normalizedUrl", .string(key))
                    changed = true
                }
                if let g = position[key] { groups[g].indices.append(i) } else {
                    position[key] = groups.count
                    groups.append((key, [i]))
                }
            }
            var report: [JSON] = []
            var drop = Set<Int>()
            for group in groups where group.indices.count > 1 {
                let keep = group.indices[0]
                if ws.websites[keep]["title"]?.stringValue == nil {
                    for other in group.indices.dropFirst() {
                        if let title = ws.websites[other]["title"]?.stringValue {
                            ws.websites[keep].set("title", .string(title))
                            break
                        }
                    }
                }
                drop.formUnion(group.indices.dropFirst())
                report.append(.object([
                    ("normalizedUrl", .string(group.key)),
                    ("kept", SiteRecord.output(ws.websites[keep])),
                    ("removed", .array(group.indices.dropFirst().map { SiteRecord.output(ws.websites[$0]) })),
                ]))
            }
            ws.websites = ws.websites.enumerated().filter { !drop.contains($0.offset) }.map(\.element)
            let result = JSON.object([("dryRun", .bool(dryRun)), ("groups", .array(report)), ("removed", .int(drop.count))])
            return (result, changed || !drop.isEmpty)
        }
        let result: JSON
        if dryRun {
            var ws = try c.store.read()
            result = plan(&ws).0
        } else {
            result = try c.store.update { ws in plan(&ws) }
        }
        c.output.emit(result)
    }

    // MARK: - recents

    static func addRecent(_ c: Context) throws {
        let url = c.args.positionals[0]
        let key = try normalized(url)
        let title = c.args.value("title")
        let keep = try c.args.int("keep", in: 1...100_000) ?? RecentRecord.defaultLimit
        let record = try c.store.update { ws in
            var record: JSON
            if let i = ws.recents.firstIndex(where: { RecentRecord.key($0) == key }) {
                record = ws.recents.remove(at: i)
                record.set("url", .string(url))
                if let title { record.set("title", .string(title)) }
                record.set("visits", .int((record["visits"]?.intValue ?? 1) + 1))
                record.set("lastVisitedAt", .string(c.now.rfc3339))
            } else {
                record = .object([("url", .string(url)), ("title", JSON.optional(title)), ("visits", .int(1)),
                                  ("lastVisitedAt", .string(c.now.rfc3339))])
            }
            ws.recents.insert(record, at: 0)
            if ws.recents.count > keep { ws.recents.removeLast(ws.recents.count - keep) }
            return (record, true)
        }
        c.output.emit(RecentRecord.output(record))
    }

    static func listRecents(_ c: Context) throws {
        let since = try c.date("since")
        let recents = try c.store.read().recents.filter { r in
            guard let since else { return true }
            guard let t = timestamp(r["lastVisitedAt"]) else { return false }
            return t >= since
        }
        c.emitList(recents.map(RecentRecord.output))
    }

    static func clearRecents(_ c: Context) throws {
        let count = try c.store.update { ws in
            let n = ws.recents.count
            ws.recents = []
            return (n, n > 0)
        }
        c.output.emit(.object([("cleared", .int(count))]))
    }

    // MARK: - export / import

    static func export(_ c: Context) throws {
        let format = InterchangeFormat(rawValue: c.args.value("format") ?? "json") ?? .json
        let ws = try c.store.read()
        let file = c.args.value("output").flatMap { $0 == "-" ? nil : $0 }
        let text: String
        switch format {
        case .json:
            let pretty = file != nil || c.output.mode == .pretty
            text = String(decoding: JSONWriter.document(ws.json, pretty: pretty), as: UTF8.self)
        case .taskwarrior:
            let tasks = ws.tasks.map(Taskwarrior.export)
            if c.output.mode == .jsonLines && file == nil {
                text = tasks.map { $0.serialized(.compact) + "\n" }.joined()
            } else {
                // One task per line inside the array: what `task export` writes, and friendly to diff.
                text = "[\n" + tasks.map { $0.serialized(.compact) }.joined(separator: ",\n") + (tasks.isEmpty ? "]\n" : "\n]\n")
            }
        case .netscape:
            text = NetscapeBookmarks.render(ws.websites)
        }
        guard let file else {
            c.output.write(text)
            return
        }
        try AtomicFile.write(Array(text.utf8), to: file, mode: 0o600)
        c.output.emit(.object([("file", .string(file)), ("format", .string(format.rawValue)),
                               ("tasks", .int(format == .netscape ? 0 : ws.tasks.count)),
                               ("websites", .int(format == .taskwarrior ? 0 : ws.websites.count)),
                               ("recents", .int(format == .json ? ws.recents.count : 0))]))
    }

    struct ImportCounts {
        var tasksAdded = 0, tasksUpdated = 0, tasksRemoved = 0, tasksSkipped = 0
        var sitesAdded = 0, sitesDuplicates = 0, sitesSkipped = 0
        var recentsAdded = 0, recentsUpdated = 0

        func json(_ format: InterchangeFormat) -> JSON {
            .object([
                ("format", .string(format.rawValue)),
                ("tasks", .object([("added", .int(tasksAdded)), ("updated", .int(tasksUpdated)), ("removed", .int(tasksRemoved)), ("skipped", .int(tasksSkipped))])),
                ("websites", .object([("added", .int(sitesAdded)), ("duplicates", .int(sitesDuplicates)), ("skipped", .int(sitesSkipped))])),
                ("recents", .object([("added", .int(recentsAdded)), ("updated", .int(recentsUpdated))])),
            ])
        }
    }

    static func importFile(_ c: Context) throws {
        let source = c.args.positionals[0]
        let bytes: [UInt8]
        if source == "-" {
            bytes = try c.invocation.readStandardInput()
        } else {
            guard let b = try FileBytes.read(source) else {
                throw StarlineError(.notFound, "\(source): no such file", details: .object([("path", .string(source))]))
            }
            bytes = b
        }
        let format: InterchangeFormat
        if let given = c.args.value("format").flatMap(InterchangeFormat.init(rawValue:)) {
            format = given
        } else {
            guard let detected = InterchangeFormat.detect(bytes) else {
                throw StarlineError(.data, "cannot tell the format of \(source); give --format json|taskwarrior|netscape",
                                    details: .object([("path", .string(source))]))
            }
            format = detected
        }

        // Parse everything before taking the lock: a bad file changes nothing.
        var incoming = Workspace()
        var twTasks: [JSON] = []
        var bookmarks: [NetscapeBookmarks.Bookmark] = []
        switch format {
        case .json:
            let doc: JSON
            do { doc = try JSON.parse(bytes) } catch let e as StarlineError {
                throw StarlineError(.data, "\(source) is not JSON: \(e.message)", details: e.details)
            }
            do { incoming = try Workspace(json: doc) } catch {
                throw StarlineError(.data, "\(source) is not a workspace document: \(error.message)")
            }
            for (i, t) in incoming.tasks.enumerated() where t["title"]?.stringValue == nil {
                throw StarlineError(.data, "\(source): tasks[\(i)] has no title", details: .object([("index", .int(i))]))
            }
        case .taskwarrior:
            twTasks = try Taskwarrior.parse(bytes)
        case .netscape:
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw StarlineError(.data, "\(source) is not UTF-8 text")
            }
            bookmarks = NetscapeBookmarks.parse(text)
        }

        let counts = try c.store.update { ws -> (ImportCounts, Bool) in
            var n = ImportCounts()
            switch format {
            case .json:
                mergeTasks(&ws, incoming.tasks, &n, now: c.now)
                for site in incoming.websites {
                    guard let url = site["url"]?.stringValue, let key = URLNormalizer.normalize(url) else { n.sitesSkipped += 1; continue }
                    let r = insertSite(&ws, url: url, normalized: key, title: site["title"]?.stringValue,
                                       createdAt: timestamp(site["createdAt"]) ?? c.now, id: site["id"]?.stringValue)
                    if r.duplicate { n.sitesDuplicates += 1 } else {
                        // Keep the imported record's unknown fields.
                        if case .object(let members) = site, let i = ws.websites.indices.last {
                            for (k, v) in members where !["id", "url", "normalizedUrl", "title", "createdAt"].contains(k) { ws.websites[i].set(k, v) }
                        }
                        n.sitesAdded += 1
                    }
                }
                mergeRecents(&ws, incoming.recents, &n)
            case .taskwarrior:
                for (index, tw) in twTasks.enumerated() {
                    let uuid = tw["uuid"]?.stringValue?.lowercased()
                    let existing = uuid.flatMap { u in ws.tasks.firstIndex { $0["id"]?.stringValue?.lowercased() == u } }
                    switch try Taskwarrior.importTask(tw, existing: existing.map { ws.tasks[$0] }, now: c.now, index: index) {
                    case .upsert(let task):
                        if let existing { ws.tasks[existing] = task; n.tasksUpdated += 1 } else { ws.tasks.append(task); n.tasksAdded += 1 }
                    case .delete:
                        if let existing { ws.tasks.remove(at: existing); n.tasksRemoved += 1 } else { n.tasksSkipped += 1 }
                    case .skip:
                        n.tasksSkipped += 1
                    }
                }
            case .netscape:
                for b in bookmarks {
                    guard let key = URLNormalizer.normalize(b.url) else { n.sitesSkipped += 1; continue }
                    let r = insertSite(&ws, url: b.url, normalized: key, title: b.title, createdAt: b.added ?? c.now)
                    if r.duplicate { n.sitesDuplicates += 1 } else { n.sitesAdded += 1 }
                }
            }
            let changed = n.tasksAdded + n.tasksUpdated + n.tasksRemoved + n.sitesAdded + n.recentsAdded + n.recentsUpdated > 0
            return (n, changed)
        }
        c.output.emit(counts.json(format))
    }

    /// Our JSON: tasks upserted by id; an imported record's fields replace ours, others are kept.
    static func mergeTasks(_ ws: inout Workspace, _ tasks: [JSON], _ n: inout ImportCounts, now: Timestamp) {
        var index: [String: Int] = [:]
        for (i, t) in ws.tasks.enumerated() { if let id = t["id"]?.stringValue?.lowercased() { index[id] = i } }
        for incoming in tasks {
            var task = incoming
            if let id = task["id"]?.stringValue?.lowercased(), RandomUUID.isValid(id), let i = index[id] {
                var merged = ws.tasks[i]
                if case .object(let members) = task { for (k, v) in members where k != "id" { merged.set(k, v) } }
                ws.tasks[i] = merged
                n.tasksUpdated += 1
                continue
            }
            if !(task["id"]?.stringValue.map(RandomUUID.isValid) ?? false) { task.set("id", .string(RandomUUID.make())) }
            // Fill documented fields the file left out.
            let defaults: [(String, JSON)] = [("notes", .string("")), ("tags", .array([])), ("due", .null), ("done", .bool(false)),
                                             ("doneAt", .null), ("createdAt", .string(now.rfc3339)), ("updatedAt", .string(now.rfc3339))]
            for (k, v) in defaults where task[k] == nil { task.set(k, v) }
            ws.tasks.append(task)
            if let id = task["id"]?.stringValue?.lowercased() { index[id] = ws.tasks.count - 1 }
            n.tasksAdded += 1
        }
    }

    /// Our JSON: recents merged by normalised URL (latest visit and highest count win), most recent first.
    static func mergeRecents(_ ws: inout Workspace, _ recents: [JSON], _ n: inout ImportCounts) {
        for incoming in recents {
            guard let key = RecentRecord.key(incoming) else { continue }
            if let i = ws.recents.firstIndex(where: { RecentRecord.key($0) == key }) {
                var r = ws.recents[i]
                let theirs = timestamp(incoming["lastVisitedAt"]), ours = timestamp(r["lastVisitedAt"])
                if let theirs, ours == nil || theirs > ours! {
                    r.set("lastVisitedAt", .string(theirs.rfc3339))
                    if let t = incoming["title"], !t.isNull { r.set("title", t) }
                }
                r.set("visits", .int(max(r["visits"]?.intValue ?? 1, incoming["visits"]?.intValue ?? 1)))
                ws.recents[i] = r
                n.recentsUpdated += 1
            } else {
                ws.recents.append(incoming)
                n.recentsAdded += 1
            }
        }
        // Stable: most recent first.
        let keyed = ws.recents.enumerated().map { (t: timestamp($0.element["lastVisitedAt"])?.seconds ?? .min, i: $0.offset, r: $0.element) }
        ws.recents = keyed.sorted { $0.t != $1.t ? $0.t > $1.t : $0.i < $1.i }.map(\.r)
    }

    // MARK: - check

    static func check(_ c: Context) throws -> ExitStatus {
        let store = c.store
        guard let bytes = try AtomicFile.read(store.path) else {
            c.output.emit(.object([("file", .string(store.path)), ("exists", .bool(false)), ("version", .int(Workspace.currentVersion)),
                                   ("tasks", .int(0)), ("websites", .int(0)), ("recents", .int(0)),
                                   ("duplicateSites", .array([])), ("problems", .array([])), ("ok", .bool(true))]))
            return .ok
        }
        let ws = try store.decode(bytes)
        let report = WorkspaceCheck.run(ws)
        let ok = report.problems.isEmpty && report.duplicateSites.isEmpty
        c.output.emit(.object([
            ("file", .string(store.path)), ("exists", .bool(true)), ("version", .int(ws.version)),
            ("tasks", .int(ws.tasks.count)), ("websites", .int(ws.websites.count)), ("recents", .int(ws.recents.count)),
            ("duplicateSites", .array(report.duplicateSites)), ("problems", .array(report.problems)), ("ok", .bool(ok)),
        ]))
        guard ok else {
            throw StarlineError(.checkFailed, "\(store.path): \(report.problems.count) problem(s), \(report.duplicateSites.count) group(s) of duplicate sites",
                                details: .object([("problems", .int(report.problems.count)), ("duplicateSites", .int(report.duplicateSites.count))]))
        }
        return .ok
    }
}
