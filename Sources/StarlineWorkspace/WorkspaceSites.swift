import StarlineCore

/// A URL as given and its normalised form, the dedup key of sites and recent visits (`URLNormalizer`).
package struct SiteURL: Sendable, Equatable {
    package let url: String
    package let normalized: String

    /// Nil when `url` is not an absolute URL.
    package init?(_ url: String) {
        guard let normalized = URLNormalizer.normalize(url) else { return nil }
        self.url = url
        self.normalized = normalized
    }

    /// INVALID_URL (exit 2) when `url` is not an absolute URL.
    package init(validating url: String) throws {
        guard let site = SiteURL(url) else {
            throw StarlineError(.invalidURL, "'\(url)' is not an absolute URL (scheme://host/…)", details: .object([("url", .string(url))]))
        }
        self = site
    }
}

/// How `sites rm` names a bookmark: a URL (anything with `://`) matched by its normalised form, else an id
/// or a unique prefix of one.
package enum SiteTarget: Sendable, Equatable {
    case url(SiteURL)
    case id(String)

    package init(_ text: String) throws {
        self = text.contains("://") ? .url(try SiteURL(validating: text)) : .id(text)
    }
}

/// Bookmarks: one record per normalised URL.
extension Workspace {
    /// Adds a site unless one with the same normalised URL exists; the one path of `sites add` and `import`.
    /// An imported `id` is kept when it is a UUID not used yet. Returns the stored record and whether it was a
    /// duplicate (then nothing changed).
    @discardableResult
    package mutating func insertSite(_ site: SiteURL, title: String?, createdAt: Timestamp, id: String? = nil, tags: [String] = []) -> (
        record: JSON, duplicate: Bool
    ) {
        var index = SiteIndex(websites)
        return insertSite(site, title: title, createdAt: createdAt, id: id, tags: tags, index: &index)
    }

    /// `insertSite` with the keys and ids of the stored sites computed once (`import` of a 20,000-bookmark
    /// file normalised every stored URL for every bookmark: quadratic, minutes instead of milliseconds).
    package mutating func insertSite(
        _ site: SiteURL, title: String?, createdAt: Timestamp, id: String?, tags: [String] = [],
        index: inout SiteIndex
    ) -> (record: JSON, duplicate: Bool) {
        if let existing = index.byKey[site.normalized] { return (websites[existing], true) }
        var newID = RandomUUID.make()
        if let id, RandomUUID.isValid(id), !index.ids.contains(id.lowercased()) { newID = id.lowercased() }
        let record = SiteRecord.make(url: site.url, normalized: site.normalized, title: title, now: createdAt, id: newID, tags: tags)
        websites.append(record)
        index.byKey[site.normalized] = websites.count - 1
        index.ids.insert(newID)
        return (record, false)
    }

    /// Adds `tag` to the site at `index` unless it has it; true when the site changed. A hand-edited `tags` that is
    /// not an array is left alone.
    package mutating func addSiteTag(_ tag: String, at index: Int) -> Bool {
        let current = websites[index]["tags"]
        var tags: [JSON]
        switch current {
        case nil, .null?: tags = []
        case .array(let list)?: tags = list
        default: return false
        }
        if tags.contains(.string(tag)) { return false }
        tags.append(.string(tag))
        websites[index].set("tags", .array(tags))
        return true
    }

    /// Removes the bookmark and returns what was removed; NOT_FOUND when no bookmark matches.
    package mutating func removeSite(_ target: SiteTarget) throws -> JSON {
        switch target {
        case .id(let prefix):
            return websites.remove(at: try siteIndex(prefix))
        case .url(let site):
            guard let i = websites.firstIndex(where: { SiteRecord.key($0) == site.normalized }) else {
                throw StarlineError(
                    .notFound, "no site with the URL \(site.url) (normalised: \(site.normalized))",
                    details: .object([("url", .string(site.url)), ("normalizedUrl", .string(site.normalized))]))
            }
            return websites.remove(at: i)
        }
    }
}

/// The dedup keys (first site of each) and the lowercased ids of a workspace's sites.
package struct SiteIndex {
    var byKey: [String: Int] = [:]
    var ids: Set<String> = []

    package init(_ websites: [JSON]) {
        for (i, site) in websites.enumerated() {
            if let key = SiteRecord.key(site), byKey[key] == nil { byKey[key] = i }
            if let id = site["id"]?.stringValue { ids.insert(id.lowercased()) }
        }
    }
}
