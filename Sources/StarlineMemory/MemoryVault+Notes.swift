import StarlineCore
import StarlineSQLite

/// A note to add.
public struct NoteDraft: Sendable, Equatable {
    public var title: String
    public var body: String
    public var tags: [String]
    /// The note's times when it is imported; nil: now.
    public var createdAt: Timestamp?
    public var updatedAt: Timestamp?

    public init(title: String = "", body: String, tags: [String] = [], createdAt: Timestamp? = nil, updatedAt: Timestamp? = nil) {
        self.title = title
        self.body = body
        self.tags = tags
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

extension MemoryVault {
    /// Adds one note (version 1).
    @discardableResult
    public func add(_ draft: NoteDraft) throws -> MemoryNote {
        try add(contentsOf: [draft])[0]
    }

    /// Adds notes in one change (one transaction, one manifest rewrite): for imports and bulk adds.
    @discardableResult
    public func add(contentsOf drafts: [NoteDraft]) throws -> [MemoryNote] {
        let time = now()
        return try write("add a note to the memory vault") { change in
            try drafts.map { draft in
                let id = NoteID.make()
                let payload = NotePayload(
                    createdAt: draft.createdAt ?? time, updatedAt: draft.updatedAt ?? draft.createdAt ?? time, title: draft.title,
                    body: draft.body,
                    tags: Self.normalizedTags(draft.tags), attachments: [])
                try put(change, id: id, version: 1, payload)
                return payload.note(id: id, version: 1)
            }
        }
    }

    /// Every note without its body, oldest first. Decrypts every record.
    public func list() throws -> [MemoryNoteSummary] {
        try read { db, check in
            try db.query("SELECT \(Self.rowColumns) FROM records").map { row in
                let r = try decodeRow(row)
                return try payload(r, checkedBy: check).summary(id: r.id, version: r.version)
            }
            .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        }
    }

    /// The note whose id is `id` or starts with it.
    public func show(_ id: String) throws -> MemoryNote {
        try read { db, check in
            let row = try resolveRow(db, id)
            return try payload(row, checkedBy: check).note(id: row.id, version: row.version)
        }
    }

    /// Changes what is given (nil: kept); the version goes up by one. Nothing given, or nothing different:
    /// no change at all, and the note is returned as it is.
    @discardableResult
    public func edit(_ id: String, title: String? = nil, body: String? = nil, tags: [String]? = nil) throws -> MemoryNote {
        let time = now()
        return try write("edit a note in the memory vault") { change in
            let row = try resolveRow(change.db, id)
            var p = try payload(row, manifest: change.manifest)
            let before = (p.title, p.body, p.tags)
            if let title { p.title = title }
            if let body { p.body = body }
            if let tags { p.tags = Self.normalizedTags(tags) }
            guard (p.title, p.body, p.tags) != before else { return p.note(id: row.id, version: row.version) }
            p.updatedAt = time
            try put(change, id: row.id, version: row.version + 1, p)
            return p.note(id: row.id, version: row.version + 1)
        }
    }

    /// Removes the note and, once that committed, its attachment files. Returns its full id.
    @discardableResult
    public func remove(_ id: String) throws -> String {
        try write("remove a note from the memory vault") { change in
            let row = try resolveRow(change.db, id)
            // Opened first: a record that does not authenticate is reported, not silently dropped.
            let p = try payload(row, manifest: change.manifest)
            try delete(change, id: row.id)
            change.obsoleteFiles += p.attachments.map { location.blobPath($0.blobName) }
            return row.id
        }
    }

    /// The notes that contain every word of `query` (title, body, tags, attachment names; case-insensitive,
    /// whole words), oldest first. Only the records whose blind tokens match are read and decrypted.
    public func search(_ query: String) throws -> [MemoryNoteSummary] {
        let words = Set(SearchIndex.words(query))
        guard !words.isEmpty else {
            throw StarlineError(.usage, "the search query has no words", details: .object([("query", .string(query))]))
        }
        return try read { db, check in
            var candidates: Set<String>?
            // Rarest-first would read fewer rows; the index is small enough that the order does not matter.
            for word in words.sorted() {
                let tokens = keys.all.map { SearchIndex.token(word, keys: $0) }
                let marks = Array(repeating: "?", count: tokens.count).joined(separator: ", ")
                let ids = Set(
                    try db.query("SELECT record_id FROM search_tokens WHERE token IN (\(marks))", tokens.map { .blob($0) })
                        .compactMap { $0.string("record_id") })
                candidates = candidates.map { $0.intersection(ids) } ?? ids
                if candidates?.isEmpty == true { break }
            }
            var found: [MemoryNoteSummary] = []
            for id in candidates ?? [] {
                // A token row without its record (the index is not authenticated) matches nothing.
                guard let row = try loadRow(db, id) else { continue }
                let p = try payload(row, checkedBy: check)
                // The decrypted note decides: a forged index row cannot make a note match.
                guard words.isSubset(of: SearchIndex.words(of: p)) else { continue }
                found.append(p.summary(id: row.id, version: row.version))
            }
            return found.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        }
    }

    /// The full id of the one note whose id is `id` or starts with it (case-insensitive, like git).
    /// NOT_FOUND when none does, AMBIGUOUS_ID (with the candidates) when several do.
    public func resolve(_ id: String) throws -> String {
        try read { db, _ in try resolveRow(db, id).id }
    }

    func resolveRow(_ db: SQLiteDatabase, _ id: String) throws -> RecordRow {
        let wanted = id.lowercased()
        guard NoteID.isPlausiblePrefix(wanted) else { throw VaultErrors.noteNotFound(id) }
        if let exact = try loadRow(db, wanted) { return exact }
        let hits = try db.query("SELECT id FROM records WHERE id LIKE ? ORDER BY id LIMIT 11", [.text(wanted + "%")]).compactMap {
            $0.string("id")
        }
        switch hits.count {
        case 0: throw VaultErrors.noteNotFound(id)
        case 1: return try loadRow(db, hits[0])!
        default:
            throw StarlineError(
                .ambiguousID, "id prefix \(id) matches \(hits.count > 10 ? "more than 10" : "\(hits.count)") notes",
                details: .object([("id", .string(id)), ("candidates", .array(hits.prefix(10).map { .string($0) }))]))
        }
    }

    /// Tags as stored: trimmed of surrounding spaces, empty ones dropped, duplicates removed (first kept).
    static func normalizedTags(_ tags: [String]) -> [String] {
        var seen = Set<String>()
        return tags.map { $0.trimmingWhitespace() }.filter { !$0.isEmpty && seen.insert($0).inserted }
    }
}
