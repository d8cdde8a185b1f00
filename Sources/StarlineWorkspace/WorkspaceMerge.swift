import StarlineCore

/// A file to import, parsed and checked in full before the workspace is locked: a bad file changes nothing.
package struct WorkspaceImport: Sendable {
    enum Content: Sendable {
        case workspace(Workspace)
        case taskwarrior([JSON])
        case bookmarks([NetscapeBookmarks.Bookmark])
    }

    package let format: InterchangeFormat
    let content: Content

    /// What an import did, as printed:
    /// `{"format","tasks":{"added","updated","removed","skipped"},"websites":{"added","duplicates","skipped"},"recents":{"added","updated"}}`.
    package struct Counts: Sendable {
        package var tasksAdded = 0, tasksUpdated = 0, tasksRemoved = 0, tasksSkipped = 0
        package var sitesAdded = 0, sitesDuplicates = 0, sitesSkipped = 0
        package var recentsAdded = 0, recentsUpdated = 0

        /// True when the workspace has to be written.
        package var changed: Bool { tasksAdded + tasksUpdated + tasksRemoved + sitesAdded + recentsAdded + recentsUpdated > 0 }

        package func json(_ format: InterchangeFormat) -> JSON {
            .object([
                ("format", .string(format.rawValue)),
                ("tasks", .object([("added", .int(tasksAdded)), ("updated", .int(tasksUpdated)), ("removed", .int(tasksRemoved)), ("skipped", .int(tasksSkipped))])),
                ("websites", .object([("added", .int(sitesAdded)), ("duplicates", .int(sitesDuplicates)), ("skipped", .int(sitesSkipped))])),
                ("recents", .object([("added", .int(recentsAdded)), ("updated", .int(recentsUpdated))])),
            ])
        }
    }

    /// Parses `bytes` as `format`; `source` names the file in error messages (DATA_ERROR, exit 12).
    package init(_ bytes: [UInt8], format: InterchangeFormat, source: String) throws {
        self.format = format
        switch format {
        case .json:
            let doc: JSON
            do { doc = try JSON.parse(bytes) } catch let e as StarlineError {
                throw StarlineError(.data, "\(source) is not JSON: \(e.message)", details: e.details)
            }
            let incoming: Workspace
            do { incoming = try Workspace(json: doc) } catch {
                throw StarlineError(.data, "\(source) is not a workspace document: \(error.message)")
            }
            for (i, t) in incoming.tasks.enumerated() where t["title"]?.stringValue == nil {
                throw StarlineError(.data, "\(source): tasks[\(i)] has no title", details: .object([("index", .int(i))]))
            }
            content = .workspace(incoming)
        case .taskwarrior:
            content = .taskwarrior(try Taskwarrior.parse(bytes))
        case .netscape:
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw StarlineError(.data, "\(source) is not UTF-8 text")
            }
            content = .bookmarks(NetscapeBookmarks.parse(text))
        }
    }
}

extension Workspace {
    /// Merges an import into this workspace. Sites go through `insertSite`, as `sites add` does, so
    /// normalised duplicates are not added twice; `now` dates what the file leaves undated.
    package mutating func merge(_ file: WorkspaceImport, now: Timestamp) throws -> WorkspaceImport.Counts {
        var n = WorkspaceImport.Counts()
        switch file.content {
        case .workspace(let incoming):
            mergeTasks(incoming.tasks, &n, now: now)
            for site in incoming.websites {
                guard let url = site["url"]?.stringValue, let key = SiteURL(url) else { n.sitesSkipped += 1; continue }
                let r = insertSite(key, title: site["title"]?.stringValue, createdAt: timestamp(site["createdAt"]) ?? now,
                                   id: site["id"]?.stringValue)
                if r.duplicate { n.sitesDuplicates += 1 } else {
                    // Keep the imported record's unknown fields.
                    if case .object(let members) = site, let i = websites.indices.last {
                        for (k, v) in members where !["id", "url", "normalizedUrl", "title", "createdAt"].contains(k) { websites[i].set(k, v) }
                    }
                    n.sitesAdded += 1
                }
            }
            mergeRecents(incoming.recents, &n)
        case .taskwarrior(let twTasks):
            for (index, tw) in twTasks.enumerated() {
                let uuid = tw["uuid"]?.stringValue?.lowercased()
                let existing = uuid.flatMap { u in tasks.firstIndex { $0["id"]?.stringValue?.lowercased() == u } }
                switch try Taskwarrior.importTask(tw, existing: existing.map { tasks[$0] }, now: now, index: index) {
                case .upsert(let task):
                    if let existing { tasks[existing] = task; n.tasksUpdated += 1 } else { tasks.append(task); n.tasksAdded += 1 }
                case .delete:
                    if let existing { tasks.remove(at: existing); n.tasksRemoved += 1 } else { n.tasksSkipped += 1 }
                case .skip:
                    n.tasksSkipped += 1
                }
            }
        case .bookmarks(let bookmarks):
            for b in bookmarks {
                guard let key = SiteURL(b.url) else { n.sitesSkipped += 1; continue }
                let r = insertSite(key, title: b.title, createdAt: b.added ?? now)
                if r.duplicate { n.sitesDuplicates += 1 } else { n.sitesAdded += 1 }
            }
        }
        return n
    }

    /// Our JSON: tasks upserted by id; an imported record's fields replace ours, others are kept.
    mutating func mergeTasks(_ incomingTasks: [JSON], _ n: inout WorkspaceImport.Counts, now: Timestamp) {
        var index: [String: Int] = [:]
        for (i, t) in tasks.enumerated() { if let id = t["id"]?.stringValue?.lowercased() { index[id] = i } }
        for incoming in incomingTasks {
            var task = incoming
            if let id = task["id"]?.stringValue?.lowercased(), RandomUUID.isValid(id), let i = index[id] {
                var merged = tasks[i]
                if case .object(let members) = task { for (k, v) in members where k != "id" { merged.set(k, v) } }
                tasks[i] = merged
                n.tasksUpdated += 1
                continue
            }
            if !(task["id"]?.stringValue.map(RandomUUID.isValid) ?? false) { task.set("id", .string(RandomUUID.make())) }
            // Fill documented fields the file left out.
            let defaults: [(String, JSON)] = [("notes", .string("")), ("tags", .array([])), ("due", .null), ("done", .bool(false)),
                                             ("doneAt", .null), ("createdAt", .string(now.rfc3339)), ("updatedAt", .string(now.rfc3339))]
            for (k, v) in defaults where task[k] == nil { task.set(k, v) }
            tasks.append(task)
            if let id = task["id"]?.stringValue?.lowercased() { index[id] = tasks.count - 1 }
            n.tasksAdded += 1
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
                r.set("visits", .int(max(r["visits"]?.intValue ?? 1, incoming["visits"]?.intValue ?? 1)))
                recents[i] = r
                n.recentsUpdated += 1
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
