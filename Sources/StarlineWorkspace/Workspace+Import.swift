import StarlineCore

extension Workspace {
    static let notAbsoluteReason = "not an absolute URL (scheme://host/…)"

    /// Merges an import into this workspace. Sites go through `insertSite`, as `sites add` does, so
    /// normalised duplicates are not added twice; `now` dates what the file leaves undated.
    package mutating func merge(_ file: WorkspaceImport, now: Timestamp) throws -> WorkspaceImport.Counts {
        var n = WorkspaceImport.Counts()
        var sites = SiteIndex(websites)
        switch file.content {
        case .workspace(let incoming):
            mergeTasks(incoming.tasks, &n, now: now)
            for site in incoming.websites {
                guard let url = site["url"]?.stringValue else { n.skipSite(nil, "no url"); continue }
                guard let key = SiteURL(url) else { n.skipSite(url, Workspace.notAbsoluteReason); continue }
                let r = insertSite(
                    key, title: site["title"]?.stringValue, createdAt: timestamp(site["createdAt"]) ?? now,
                    id: site["id"]?.stringValue, index: &sites)
                if r.duplicate {
                    n.sitesDuplicates += 1
                } else {
                    // Keep the imported record's unknown fields.
                    if case .object(let members) = site, let i = websites.indices.last {
                        for (k, v) in members where !["id", "url", "normalizedUrl", "title", "createdAt"].contains(k) {
                            websites[i].set(k, v)
                        }
                    }
                    n.sitesAdded += 1
                }
            }
            mergeRecents(incoming.recents, &n)
        case .taskwarrior(let twTasks):
            // By id, built once (a lookup per task was quadratic on big files); removals shift what follows.
            var byID: [String: Int] = [:]
            func reindex() {
                byID = [:]
                for (i, t) in tasks.enumerated() { if let id = t["id"]?.stringValue?.lowercased(), byID[id] == nil { byID[id] = i } }
            }
            reindex()
            for (index, tw) in twTasks.enumerated() {
                let uuid = tw["uuid"]?.stringValue?.lowercased()
                let existing = uuid.flatMap { byID[$0] }
                switch try Taskwarrior.importTask(tw, existing: existing.map { tasks[$0] }, now: now, index: index) {
                case .upsert(let task):
                    if let existing {
                        if tasks[existing] == task { n.tasksUnchanged += 1 } else { tasks[existing] = task; n.tasksUpdated += 1 }
                    } else {
                        tasks.append(task)
                        if let uuid { byID[uuid] = tasks.count - 1 }
                        n.tasksAdded += 1
                    }
                case .delete:
                    if let existing {
                        tasks.remove(at: existing); reindex(); n.tasksRemoved += 1
                    } else {
                        n.skipTask(uuid ?? "", Taskwarrior.deletedSkipReason)
                    }
                case .skip(let id, let reason):
                    n.skipTask(id, reason)
                }
            }
        case .bookmarks(let bookmarks):
            for b in bookmarks {
                guard let key = SiteURL(b.url) else { n.skipSite(b.url, Workspace.notAbsoluteReason); continue }
                let folders = b.folder.map { [$0] } ?? []
                let r = insertSite(key, title: b.title, createdAt: b.added ?? now, id: nil, tags: folders, index: &sites)
                if !r.duplicate { n.sitesAdded += 1; continue }
                // The same page in another folder: one site, one folder tag more (W1). Import adds, never removes.
                if let folder = b.folder, let i = sites.byKey[key.normalized], addSiteTag(folder, at: i) {
                    n.sitesUpdated += 1
                } else {
                    n.sitesDuplicates += 1
                }
            }
        }
        return n
    }

    /// Our JSON: tasks upserted by id; an imported record's fields replace ours, others are kept.
    /// An id that is not a UUID (another program's `"42"` or `7`) is mapped to its name-based UUID, so every
    /// re-import finds the task it added; only a task without any id gets a random one.
    mutating func mergeTasks(_ incomingTasks: [JSON], _ n: inout WorkspaceImport.Counts, now: Timestamp) {
        var index: [String: Int] = [:]
        for (i, t) in tasks.enumerated() { if let id = t["id"]?.stringValue?.lowercased() { index[id] = i } }
        for incoming in incomingTasks {
            var task = incoming
            let id = Workspace.importedID(task["id"])
            task.set("id", .string(id))
            if let i = index[id] {
                var merged = tasks[i]
                if case .object(let members) = task { for (k, v) in members where k != "id" { merged.set(k, v) } }
                if merged == tasks[i] { n.tasksUnchanged += 1 } else { tasks[i] = merged; n.tasksUpdated += 1 }
                continue
            }
            // Fill documented fields the file left out.
            let defaults: [(String, JSON)] = [
                ("notes", .string("")), ("tags", .array([])), ("due", .null), ("done", .bool(false)),
                ("doneAt", .null), ("createdAt", .string(now.rfc3339)), ("updatedAt", .string(now.rfc3339))
            ]
            for (k, v) in defaults where task[k] == nil { task.set(k, v) }
            tasks.append(task)
            if let id = task["id"]?.stringValue?.lowercased() { index[id] = tasks.count - 1 }
            n.tasksAdded += 1
        }
    }

    /// The id an imported task is stored under: its UUID (lowercased), the name-based UUID of any other id,
    /// or a new random one when it has none.
    static func importedID(_ value: JSON?) -> String {
        switch value {
        case nil, .null?: return RandomUUID.make()
        case .string(let s)? where RandomUUID.isValid(s): return s.lowercased()
        case .string(let s)?: return RandomUUID.derived(fromForeignID: s)
        case let other?: return RandomUUID.derived(fromForeignID: other.serialized())
        }
    }

    /// Our JSON: recents merged by normalised URL (latest visit and highest count win), most recent first.
    mutating func mergeRecents(_ incomingRecents: [JSON], _ n: inout WorkspaceImport.Counts) {
        for incoming in incomingRecents {
            guard let key = RecentRecord.key(incoming) else { continue }
            if let i = recents.firstIndex(where: { RecentRecord.key($0) == key }) {
                var r = recents[i]
                let theirs = timestamp(incoming["lastVisitedAt"]), ours = timestamp(r["lastVisitedAt"])
                if let theirs, ours == nil || theirs > ours! {
                    r.set("lastVisitedAt", .string(theirs.rfc3339))
                    if let t = incoming["title"], !t.isNull { r.set("title", t) }
                }
                let visits = max(r["visits"]?.intValue ?? 1, incoming["visits"]?.intValue ?? 1)
                if r["visits"]?.intValue != visits { r.set("visits", .int(visits)) }
                if r == recents[i] { n.recentsUnchanged += 1 } else { recents[i] = r; n.recentsUpdated += 1 }
            } else {
                recents.append(incoming)
                n.recentsAdded += 1
            }
        }
        // Stable: most recent first.
        let keyed = recents.enumerated().map { (t: timestamp($0.element["lastVisitedAt"])?.seconds ?? .min, i: $0.offset, r: $0.element) }
        recents = keyed.sorted { $0.t != $1.t ? $0.t > $1.t : $0.i < $1.i }.map(\.r)
    }
}
