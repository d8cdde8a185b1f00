import StarlineCore

/// Times as stored and printed: RFC 3339 UTC. A value that is already `…Z` with whole seconds is
/// passed through untouched (the common case, and the fast one); other RFC 3339 forms are converted;
/// anything else is left as it is (`check` reports it).
func outputTime(_ value: JSON?) -> JSON {
    guard let value else { return .null }
    guard case .string(let s) = value else { return value }
    if s.utf8.count == 20, s.utf8.last == UInt8(ascii: "Z") { return value }
    if let t = Timestamp(rfc3339: s) { return .string(t.rfc3339) }
    return value
}

package func timestamp(_ value: JSON?) -> Timestamp? {
    guard case .string(var s)? = value else { return nil }
    return s.withUTF8 { Timestamp.parseRFC3339($0) }.map(Timestamp.init(seconds:))
}

/// Builds an output record: the documented fields first, in their documented order, then every other
/// field of the stored record (unknown fields are shown as they are stored).
func ordered(_ record: JSON, _ documented: [(String, JSON)]) -> JSON {
    guard case .object(let members) = record else { return .object(documented) }
    var out = documented
    out.reserveCapacity(documented.count + members.count)
    for member in members where !documented.contains(where: { $0.0 == member.0 }) { out.append(member) }
    return .object(out)
}

/// A task: `{id, title, notes, tags, due, done, doneAt, createdAt, updatedAt}`, and, only when set, the fields
/// kept from Taskwarrior for the way back (W1): `wait`, `scheduled`, `until` (RFC 3339), `recur` (a string) and
/// `annotations` ([{entry, description}]). Of these sl-tasks acts on `recur` (and `until`, which ends a
/// recurrence: `Recurrence`); it shows and exports the others.
public enum TaskRecord {
    public static func make(title: String, notes: String, tags: [String], due: Timestamp?, now: Timestamp, id: String = RandomUUID.make())
        -> JSON
    {
        .object([
            ("id", .string(id)),
            ("title", .string(title)),
            ("notes", .string(notes)),
            ("tags", .array(tags.map(JSON.string))),
            ("due", due.map { .string($0.rfc3339) } ?? .null),
            ("done", .bool(false)),
            ("doneAt", .null),
            ("createdAt", .string(now.rfc3339)),
            ("updatedAt", .string(now.rfc3339))
        ])
    }

    public static func due(_ task: JSON) -> Timestamp? { timestamp(task["due"]) }
    public static func isDone(_ task: JSON) -> Bool { task["done"]?.boolValue ?? false }
    public static func tags(_ task: JSON) -> [String] { task["tags"]?.arrayValue?.compactMap(\.stringValue) ?? [] }

    /// The Taskwarrior dates kept on a task, in the order they are printed.
    public static let keptDates = ["wait", "scheduled", "until"]
    /// Every kept field, in the order they are printed after the documented ones.
    static let keptFields = keptDates + ["recur", "annotations"]

    /// A kept date (`wait`, `scheduled`, `until`). A task imported by an sl-tasks from before these fields has
    /// it in Taskwarrior's form under `"taskwarrior"`; that is read too, so nothing kept then is lost now.
    public static func keptDate(_ task: JSON, _ field: String) -> Timestamp? {
        if let value = task[field], !value.isNull { return timestamp(value) }
        guard let legacy = task["taskwarrior"]?[field]?.stringValue else { return nil }
        return Timestamp(taskwarrior: legacy)
    }

    /// The next instance of a recurring `task` (`Recurrence`): the same title, notes, tags, period and every
    /// other field, a new id, open, due `due`, created now; `wait` and `scheduled` move with the due date;
    /// Taskwarrior's instance links (`parent`, `imask`, the legacy `taskwarrior` object) stay with the old one.
    public static func nextInstance(of task: JSON, due: Timestamp, now: Timestamp) -> JSON {
        var next = task
        let shift = TaskRecord.due(task).map { due.seconds - $0.seconds } ?? 0
        for field in ["wait", "scheduled"] {
            if let t = keptDate(task, field), let moved = Timestamp(checkedSeconds: t.seconds &+ shift) {
                next.set(field, .string(moved.rfc3339))
            }
        }
        if let recur = recur(task) { next.set("recur", .string(recur)) }
        if let until = keptDate(task, "until") { next.set("until", .string(until.rfc3339)) }
        for field in ["parent", "imask", "taskwarrior"] { next.remove(field) }
        next.set("id", .string(RandomUUID.make()))
        next.set("due", .string(due.rfc3339))
        next.set("done", .bool(false))
        next.set("doneAt", .null)
        next.set("createdAt", .string(now.rfc3339))
        next.set("updatedAt", .string(now.rfc3339))
        return next
    }

    /// `recur` (Taskwarrior's period, such as `weekly`), or the one an earlier sl-tasks kept under `"taskwarrior"`.
    public static func recur(_ task: JSON) -> String? {
        if let value = task["recur"], !value.isNull { return value.stringValue.flatMap { $0.isEmpty ? nil : $0 } }
        return task["taskwarrior"]?["recur"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
    }

    public struct Annotation: Equatable, Sendable {
        public var entry: Timestamp?
        public var description: String
    }

    static func annotation(entry: Timestamp, description: String) -> JSON {
        .object([("entry", .string(entry.rfc3339)), ("description", .string(description))])
    }

    /// The stored annotations, while `notes` is still what they join to (descriptions, one per line). Notes
    /// changed since — by `edit --notes` of an older sl-tasks, or by hand — win: nil, and export writes the notes
    /// as one annotation, as it does for a task made here.
    public static func annotations(_ task: JSON) -> [Annotation]? {
        guard let items = task["annotations"]?.arrayValue, !items.isEmpty else { return nil }
        var result: [Annotation] = []
        result.reserveCapacity(items.count)
        for item in items {
            guard let description = item["description"]?.stringValue else { return nil }
            result.append(Annotation(entry: timestamp(item["entry"]), description: description))
        }
        guard result.map(\.description).joined(separator: "\n") == (task["notes"]?.stringValue ?? "") else { return nil }
        return result
    }

    /// The record as printed: every documented field present, times in UTC; then the kept Taskwarrior fields,
    /// only those that are set; then every other stored field as it is. `number`: the task's working-set
    /// number (`Workspace.workingSetNumber`), printed after the id — null for a done task — when the command
    /// knows it; an export, which is a file and not a view, has none.
    public static func output(_ task: JSON, number: Int?? = nil) -> JSON {
        var fields: [(String, JSON)] = [("id", task["id"] ?? .null)]
        if let number { fields.append(("number", number.map { .int(Int64($0)) } ?? .null)) }
        fields += [
            ("title", task["title"] ?? .string("")),
            ("notes", task["notes"] ?? .string("")),
            ("tags", task["tags"] ?? .array([])),
            ("due", outputTime(task["due"])),
            ("done", task["done"] ?? .bool(false)),
            ("doneAt", outputTime(task["doneAt"])),
            ("createdAt", outputTime(task["createdAt"])),
            ("updatedAt", outputTime(task["updatedAt"]))
        ]
        // Most tasks have none of them: one look at the keys decides.
        guard case .object(let members) = task, members.contains(where: { keptFields.contains($0.0) || $0.0 == "taskwarrior" }) else {
            return ordered(task, fields)
        }
        for field in keptDates {
            if let value = task[field], !value.isNull {
                fields.append((field, outputTime(value)))
            } else if let t = keptDate(task, field) {
                fields.append((field, .string(t.rfc3339)))
            }
        }
        if let value = task["recur"], !value.isNull {
            fields.append(("recur", value))
        } else if let recur = recur(task) {
            fields.append(("recur", .string(recur)))
        }
        if case .array(let items)? = task["annotations"], !items.isEmpty {
            fields.append(
                (
                    "annotations",
                    .array(
                        items.map { item in
                            guard case .object = item, let entry = item["entry"] else { return item }
                            var shown = item
                            shown.set("entry", outputTime(entry))
                            return shown
                        })
                ))
        }
        var out = ordered(task, fields)
        // Stored as null or empty: not set, so not shown.
        for field in keptFields where fields.allSatisfy({ $0.0 != field }) { out.remove(field) }
        return out
    }

    /// A tag is one word: no whitespace, no comma (Taskwarrior tags are words too).
    public static func validateTag(_ tag: String) throws {
        guard !tag.isEmpty, !tag.contains(where: { $0.isWhitespace || $0 == "," }) else {
            throw StarlineError(
                .usage, "invalid tag '\(tag)': a tag is one word without spaces or commas",
                details: .object([("tag", .string(tag))]))
        }
    }
}

/// A bookmark: `{id, url, normalizedUrl, title, createdAt}`; `url` is kept exactly as given. `tags`, only when
/// there are any, are the paths of the bookmark folders it was imported from (`NetscapeBookmarks.FolderPath`).
public enum SiteRecord {
    public static func make(
        url: String, normalized: String, title: String?, now: Timestamp, id: String = RandomUUID.make(),
        tags: [String] = []
    ) -> JSON {
        var members: [(String, JSON)] = [
            ("id", .string(id)),
            ("url", .string(url)),
            ("normalizedUrl", .string(normalized)),
            ("title", JSON.optional(title)),
            ("createdAt", .string(now.rfc3339))
        ]
        if !tags.isEmpty { members.append(("tags", .array(tags.map(JSON.string)))) }
        return .object(members)
    }

    /// The folder tags of a site: its string tags, in order.
    public static func tags(_ site: JSON) -> [String] { site["tags"]?.arrayValue?.compactMap(\.stringValue) ?? [] }

    public static func output(_ site: JSON) -> JSON {
        ordered(
            site,
            [
                ("id", site["id"] ?? .null),
                ("url", site["url"] ?? .null),
                (
                    "normalizedUrl",
                    site["normalizedUrl"] ?? site["url"]?.stringValue.flatMap(URLNormalizer.normalize).map(JSON.string) ?? .null
                ),
                ("title", site["title"] ?? .null),
                ("createdAt", outputTime(site["createdAt"]))
            ])
    }

    /// The dedup key of a stored site: its URL normalised now (the stored `normalizedUrl` may come from
    /// an older rule set or a hand edit), falling back to the stored key.
    public static func key(_ site: JSON) -> String? {
        site["url"]?.stringValue.flatMap(URLNormalizer.normalize) ?? site["normalizedUrl"]?.stringValue
    }
}

/// A recent visit: `{url, title, visits, lastVisitedAt}`, most recent first.
public enum RecentRecord {
    public static let defaultLimit = 100

    public static func output(_ recent: JSON) -> JSON {
        ordered(
            recent,
            [
                ("url", recent["url"] ?? .null),
                ("title", recent["title"] ?? .null),
                ("visits", recent["visits"] ?? .int(1)),
                ("lastVisitedAt", outputTime(recent["lastVisitedAt"]))
            ])
    }

    public static func key(_ recent: JSON) -> String? {
        guard let url = recent["url"]?.stringValue else { return nil }
        return URLNormalizer.normalize(url) ?? url
    }
}
