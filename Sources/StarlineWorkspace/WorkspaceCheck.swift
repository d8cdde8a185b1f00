import StarlineCore

/// What `sl-tasks check` finds in a workspace that parses: records with missing or malformed fields,
/// duplicate ids, and sites or recent visits whose URLs normalise alike.
public enum WorkspaceCheck {
    public struct Report {
        public var problems: [JSON] = []
        public var duplicateSites: [JSON] = []
    }

    public static func run(_ ws: Workspace) -> Report {
        var report = Report()
        func problem(_ record: String, _ id: JSON?, _ field: String?, _ message: String) {
            report.problems.append(
                .object([
                    ("record", .string(record)), ("id", id ?? .null),
                    ("field", JSON.optional(field)), ("message", .string(message))
                ]))
        }
        if ws.version > Workspace.currentVersion {
            problem(
                "workspace", nil, "version",
                "format version \(ws.version) is newer than this sl-tasks understands (\(Workspace.currentVersion)); records were not checked"
            )
            return report
        }
        func time(_ r: JSON, _ field: String, _ name: String, nullable: Bool) {
            guard let v = r[field] else {
                problem(name, r["id"], field, "missing")
                return
            }
            if v.isNull {
                if !nullable { problem(name, r["id"], field, "is null") }
                return
            }
            if timestamp(v) == nil { problem(name, r["id"], field, "is not an RFC 3339 date-time") }
        }
        func ids(_ records: [JSON], _ kind: String) {
            var seen: [String: Int] = [:]
            for (i, r) in records.enumerated() {
                let name = "\(kind)[\(i)]"
                guard let id = r["id"]?.stringValue, RandomUUID.isValid(id) else {
                    problem(name, r["id"], "id", "missing or not a UUID")
                    continue
                }
                if let first = seen[id.lowercased()] {
                    problem(name, r["id"], "id", "the same id as \(kind)[\(first)]")
                } else {
                    seen[id.lowercased()] = i
                }
            }
        }

        ids(ws.tasks, "tasks")
        for (i, t) in ws.tasks.enumerated() {
            let name = "tasks[\(i)]"
            if t["title"]?.stringValue?.isEmpty != false { problem(name, t["id"], "title", "missing or empty") }
            if let n = t["notes"], n.stringValue == nil { problem(name, t["id"], "notes", "is not a string") }
            if let tags = t["tags"] {
                if tags.arrayValue?.allSatisfy({ $0.stringValue != nil }) != true {
                    problem(name, t["id"], "tags", "is not an array of strings")
                }
            }
            time(t, "due", name, nullable: true)
            if t["done"]?.boolValue == nil { problem(name, t["id"], "done", "missing or not a boolean") }
            time(t, "doneAt", name, nullable: true)
            if t["done"]?.boolValue == true, t["doneAt"]?.isNull ?? true { problem(name, t["id"], "doneAt", "a done task has no doneAt") }
            time(t, "createdAt", name, nullable: false)
            time(t, "updatedAt", name, nullable: false)
        }

        ids(ws.websites, "websites")
        var groups: [String: [JSON]] = [:]
        var order: [String] = []
        for (i, s) in ws.websites.enumerated() {
            let name = "websites[\(i)]"
            guard let url = s["url"]?.stringValue else { problem(name, s["id"], "url", "missing"); continue }
            guard let key = URLNormalizer.normalize(url) else { problem(name, s["id"], "url", "not an absolute URL"); continue }
            if s["normalizedUrl"]?.stringValue != key {
                problem(name, s["id"], "normalizedUrl", "is not the normalised url (\(key)); sites dedup updates it")
            }
            time(s, "createdAt", name, nullable: false)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(s["id"] ?? .null)
        }
        for key in order where groups[key]!.count > 1 {
            report.duplicateSites.append(.object([("normalizedUrl", .string(key)), ("ids", .array(groups[key]!))]))
        }

        var seenRecents: [String: Int] = [:]
        for (i, r) in ws.recents.enumerated() {
            let name = "recents[\(i)]"
            guard let url = r["url"]?.stringValue else { problem(name, nil, "url", "missing"); continue }
            let key = URLNormalizer.normalize(url) ?? url
            if let first = seenRecents[key] {
                problem(name, nil, "url", "the same page as recents[\(first)]")
            } else {
                seenRecents[key] = i
            }
            if (r["visits"]?.intValue ?? 0) < 1 { problem(name, nil, "visits", "missing or not a positive integer") }
            time(r, "lastVisitedAt", name, nullable: false)
        }
        return report
    }
}
