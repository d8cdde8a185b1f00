import StarlineCore

/// What `sites dedup` does to bookmarks whose URLs normalise alike: the oldest (first) record of each group is
/// kept and takes a title from a removed one when it has none; every `normalizedUrl` is brought up to date
/// (the stored one may come from an older rule set or a hand edit).
package struct SiteDeduplication: Sendable {
    package struct Group: Sendable {
        package var normalizedUrl: String
        /// The kept record as it is after the merge.
        package var kept: JSON
        package var removed: [JSON]
    }

    package var groups: [Group] = []
    /// True when the workspace differs from before: records merged, or a `normalizedUrl` corrected.
    package var changed = false

    package var removedCount: Int { groups.reduce(0) { $0 + $1.removed.count } }

    /// `{"dryRun","groups":[{"normalizedUrl","kept","removed":[…]}],"removed":N}`, records as printed.
    package func json(dryRun: Bool) -> JSON {
        .object([
            ("dryRun", .bool(dryRun)),
            (
                "groups",
                .array(
                    groups.map { g in
                        .object([
                            ("normalizedUrl", .string(g.normalizedUrl)), ("kept", SiteRecord.output(g.kept)),
                            ("removed", .array(g.removed.map(SiteRecord.output)))
                        ])
                    })
            ),
            ("removed", .int(removedCount))
        ])
    }
}

extension Workspace {
    /// Merges the duplicate bookmarks (apply it to a copy for a dry run) and says what was done.
    package mutating func deduplicateSites() -> SiteDeduplication {
        var plan = SiteDeduplication()
        var groups: [(key: String, indices: [Int])] = []
        var position: [String: Int] = [:]
        for (i, site) in websites.enumerated() {
            guard let key = SiteRecord.key(site) else { continue }
            if site["normalizedUrl"]?.stringValue != key {
                websites[i].set("normalizedUrl", .string(key))
                plan.changed = true
            }
            if let g = position[key] {
                groups[g].indices.append(i)
            } else {
                position[key] = groups.count
                groups.append((key, [i]))
            }
        }
        var drop = Set<Int>()
        for group in groups where group.indices.count > 1 {
            let keep = group.indices[0]
            let others = group.indices.dropFirst()
            if websites[keep]["title"]?.stringValue == nil {
                for other in others {
                    if let title = websites[other]["title"]?.stringValue {
                        websites[keep].set("title", .string(title))
                        break
                    }
                }
            }
            drop.formUnion(others)
            plan.groups.append(.init(normalizedUrl: group.key, kept: websites[keep], removed: others.map { websites[$0] }))
        }
        if !drop.isEmpty {
            websites = websites.enumerated().filter { !drop.contains($0.offset) }.map(\.element)
            plan.changed = true
        }
        return plan
    }
}
