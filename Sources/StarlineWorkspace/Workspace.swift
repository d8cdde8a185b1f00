import StarlineCore

/// The decoded snapshot of `workspace.json` (W1): `{"version":1,"tasks":[…],"websites":[…],"recents":[…]}`.
///
/// Records stay `JSON` objects: commands set only the fields they own, so unknown fields on records,
/// unknown top-level keys and key order survive every rewrite.
public struct Workspace: Sendable {
    /// The format this build reads and writes.
    public static let currentVersion: Int64 = 1

    public var version: Int64
    /// Top-level members in file order; the three arrays are taken out and put back in place.
    var members: [(String, JSON)]
    public var tasks: [JSON]
    public var websites: [JSON]
    public var recents: [JSON]

    /// An empty workspace of the current version.
    public init() {
        version = Workspace.currentVersion
        members = [("version", .int(Workspace.currentVersion)), ("tasks", .array([])), ("websites", .array([])), ("recents", .array([]))]
        tasks = []
        websites = []
        recents = []
    }

    /// Validates the shape: an object with an integer `version` ≥ 1 and, when present, arrays of
    /// objects under `tasks`, `websites` and `recents`. Throws a description of the first problem.
    public init(json: JSON) throws(ShapeError) {
        guard case .object(let members) = json else { throw ShapeError("the top level is not a JSON object") }
        guard let versionValue = json["version"] else { throw ShapeError("no \"version\" member") }
        guard case .int(let version) = versionValue, version >= 1 else {
            throw ShapeError("\"version\" is not a positive integer")
        }
        self.version = version
        self.members = members
        func records(_ key: String) throws(ShapeError) -> [JSON] {
            guard let value = json[key] else { return [] }
            guard case .array(let items) = value else { throw ShapeError("\"\(key)\" is not an array") }
            for (i, item) in items.enumerated() {
                guard case .object = item else { throw ShapeError("\"\(key)\"[\(i)] is not an object") }
            }
            return items
        }
        tasks = try records("tasks")
        websites = try records("websites")
        recents = try records("recents")
    }

    public struct ShapeError: Error {
        public var message: String
        init(_ message: String) { self.message = message }
    }

    /// The document to write: top-level members in their original order, arrays replaced.
    public var json: JSON {
        var out = JSON.object(members)
        out.set("version", .int(version))
        out.set("tasks", .array(tasks))
        out.set("websites", .array(websites))
        out.set("recents", .array(recents))
        return out
    }

    // MARK: lookup by id prefix

    /// The index of the task named by `prefix`: a working-set number (1…n, Taskwarrior's habit: the open
    /// tasks in file order, as `list` prints them in `number`), or an id or a unique prefix of one. A number
    /// is one to seven decimal digits; an id prefix made only of digits needs eight or more.
    /// Not found → NOT_FOUND (exit 6); several → AMBIGUOUS_ID (exit 2) listing the candidates.
    public func taskIndex(_ prefix: String) throws -> Int {
        if let number = Workspace.workingSetNumber(parsing: prefix) {
            var seen = 0
            for (i, task) in tasks.enumerated() where !TaskRecord.isDone(task) {
                seen += 1
                if seen == number { return i }
            }
            throw StarlineError(
                .notFound,
                seen == 0
                    ? "no open task numbered \(number): there are no open tasks"
                    : "no open task numbered \(number): the open tasks are numbered 1 to \(seen) (sl-tasks list shows them)",
                details: .object([("number", .int(Int64(number))), ("open", .int(Int64(seen)))]))
        }
        return try Workspace.resolve(prefix, in: tasks, kind: "task", label: "title")
    }

    /// `text` as a working-set number: one to seven decimal digits, not zero.
    static func workingSetNumber(parsing text: String) -> Int? {
        guard (1...7).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let n = Int(text), n > 0 else {
            return nil
        }
        return n
    }

    /// The working-set number of the task at `index`: its place among the open tasks in file order; nil
    /// for a done task. Adding a task keeps every number; finishing or removing one renumbers those after it
    /// (Taskwarrior renumbers the same way).
    public func workingSetNumber(of index: Int) -> Int? {
        guard tasks.indices.contains(index), !TaskRecord.isDone(tasks[index]) else { return nil }
        return tasks[...index].reduce(0) { $0 + (TaskRecord.isDone($1) ? 0 : 1) }
    }

    public func siteIndex(_ prefix: String) throws -> Int {
        try Workspace.resolve(prefix, in: websites, kind: "site", label: "url")
    }

    static func resolve(_ prefix: String, in records: [JSON], kind: String, label: String) throws -> Int {
        switch IDPrefix.match(prefix, in: records.map { $0["id"]?.stringValue }) {
        case .found(let i): return i
        case .none:
            throw StarlineError(
                .notFound, "no \(kind) with an id starting with '\(prefix)'",
                details: .object([("id", .string(prefix))]))
        case .ambiguous(let hits):
            let candidates = hits.map { i -> JSON in
                .object([("id", records[i]["id"] ?? .null), (label, records[i][label] ?? .null)])
            }
            throw StarlineError(
                .ambiguousID, "the id prefix '\(prefix)' matches \(hits.count) \(kind)s; give more characters",
                details: .object([("prefix", .string(prefix)), ("candidates", .array(candidates))]))
        }
    }
}
