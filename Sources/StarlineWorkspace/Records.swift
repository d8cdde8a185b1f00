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

/// A task: `{id, title, notes, tags, due, done, doneAt, createdAt, updatedAt}`.
public enum TaskRecord {
    public static func make(title: String, notes: String, tags: [String], due: Timestamp?, now: Timestamp, id: String = RandomUUID.make()) -> JSON {
        .object([
            ("id", .string(id)),
            ("title", .string(title)),
            ("notes", .string(notes)),
            ("tags", .array(tags.map(JSON.string))),
            ("due", due.map { .string($0.rfc3339) } ?? .null),
            ("done", .bool(false)),
            ("doneAt", .null),
            ("createdAt", .string(now.rfc3339)),
            ("updatedAt", .string(now.rfc3339)),
        ])
    }

    public static func due(_ task: JSON) -> Timestamp? { timestamp(task["due"]) }
    public static func isDone(_ task: JSON) -> Bool { task["done"]?.boolValue ?? false }
    public static func tags(_ task: JSON) -> [String] { task["tags"]?.arrayValue?.compactMap(\.stringValue) ?? [] }

    /// The record as printed: every documented field present, times in UTC.
    public static func output(_ task: JSON) -> JSON {
        ordered(task, [
            ("id", task["id"] ?? .null),
            ("title", task["title"] ?? .string("")),
            ("notes", task["notes"] ?? .string("")),
            ("tags", task["tags"] ?? .array([])),
            ("due", outputTime(task["due"])),
            ("done", task["done"] ?? .bool(false)),
            ("doneAt", outputTime(task["doneAt"])),
            ("createdAt", outputTime(task["createdAt"])),
            ("updatedAt", outputTime(task["updatedAt"])),
        ])
    }

    /// A tag is one word: no whitespace, no comma (Taskwarrior tags are words too).
    public static func validateTag(_ tag: String) throws {
        guard !tag.isEmpty, !tag.contains(where: { $0.isWhitespace || $0 == "," }) else {
            throw StarlineError(.usage, "invalid tag '\(tag)': a tag is one word without spaces or commas",
                                details: .object([("tag", .string(tag))]))
        }
    }
}

/// A bookmark: `{id, url, normalizedUrl, title, createdAt}`; `url` is kept exactly as given.
public enum SiteRecord {
    public static func make(url: String, normalized: String, title: String?, now: Timestamp, id: String = RandomUUID.make()) -> JSON {
        .object([
            ("id", .string(id)),
            ("url", .string(url)),
            ("normalizedUrl", .string(normalized)),
            ("title", JSON.optional(title)),
            ("createdAt", .string(now.rfc3339)),
        ])
    }

    public static func output(_ site: JSON) -> JSON {
        ordered(site, [
            ("id", site["id"] ?? .null),
            ("url", site["url"] ?? .null),
            ("normalizedUrl", site["normalizedUrl"] ?? site["url"]?.stringValue.flatMap(URLNormalizer.normalize).map(JSON.string) ?? .null),
            ("title", site["title"] ?? .null),
            ("createdAt", outputTime(site["createdAt"])),
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
        ordered(recent, [
            ("url", recent["url"] ?? .null),
            ("title", recent["title"] ?? .null),
            ("visits", recent["visits"] ?? .int(1)),
            ("lastVisitedAt", outputTime(recent["lastVisitedAt"])),
        ])
    }

    public static func key(_ recent: JSON) -> String? {
        guard let url = recent["url"]?.stringValue else { return nil }
        return URLNormalizer.normalize(url) ?? url
    }
}
