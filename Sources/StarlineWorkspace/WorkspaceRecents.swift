import StarlineCore

/// Recent visits: one record per normalised URL, most recent first, at most a given number.
extension Workspace {
    /// Records a visit at `time`: a revisit moves the page to the top, counts it and takes the URL as given
    /// now (and the title, when one is given); the oldest pages beyond `keep` are dropped. Returns the record.
    /// A stored `visits` that cannot be counted on (INT64_MAX, or a number beyond 64 bits) is DATA_ERROR
    /// (exit 12) naming the record: never a trap, never a silent reset.
    package mutating func recordVisit(_ page: SiteURL, title: String?, at time: Timestamp, keep: Int) throws -> JSON {
        var record: JSON
        if let i = recents.firstIndex(where: { RecentRecord.key($0) == page.normalized }) {
            let stored = recents[i]["visits"]
            let (visits, overflow) = (stored?.intValue ?? 1).addingReportingOverflow(1)
            if overflow || (stored?.intValue == nil && stored?.doubleValue != nil) {
                throw StarlineError(
                    .data, "recents[\(i)].visits (\(stored!.serialized())) cannot count another visit: it is not an integer below 2^63-1",
                    details: .object([("record", .string("recents[\(i)]")), ("field", .string("visits"))]))
            }
            record = recents.remove(at: i)
            record.set("url", .string(page.url))
            if let title { record.set("title", .string(title)) }
            record.set("visits", .int(visits))
            record.set("lastVisitedAt", .string(time.rfc3339))
        } else {
            record = .object([
                ("url", .string(page.url)), ("title", JSON.optional(title)), ("visits", .int(1)),
                ("lastVisitedAt", .string(time.rfc3339))
            ])
        }
        recents.insert(record, at: 0)
        if recents.count > keep { recents.removeLast(recents.count - keep) }
        return record
    }

    /// The visits at or after `since` (all of them when nil); a visit without a readable time is left out
    /// of a bounded listing.
    package func recents(since: Timestamp?) -> [JSON] {
        guard let since else { return recents }
        return recents.filter { r in timestamp(r["lastVisitedAt"]).map { $0 >= since } ?? false }
    }

    /// Forgets every visit; returns how many there were.
    package mutating func clearRecents() -> Int {
        defer { recents = [] }
        return recents.count
    }
}
