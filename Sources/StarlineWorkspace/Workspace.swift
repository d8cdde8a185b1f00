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

    /// The index of the task whose id is `prefix` or uniquely starts with it.
    /// Not found → NOT_FOUND (exit 6); several → AMBIGUOUS_ID (exit 2) listing the candidates.
    public func taskIndex(_ prefix: String) throws -> Int {
        try Workspace.resolve(prefix, in: tasks, kind: "task", label: "title")
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
