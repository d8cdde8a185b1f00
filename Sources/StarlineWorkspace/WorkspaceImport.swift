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
    /// `{"format","tasks":{"added","updated","unchanged","removed","skipped"},"websites":{"added","duplicates","skipped","updated"},
    /// "recents":{"added","updated","unchanged"},"skipped":[{"uuid"|"url","skipped":REASON}]}`. A record the file holds
    /// exactly as we do is `unchanged`, not `updated`: re-importing one's own export changes nothing and writes nothing.
    /// Every skipped record is listed with why (W1): nothing is left out without a word.
    package struct Counts: Sendable {
        package var tasksAdded = 0, tasksUpdated = 0, tasksUnchanged = 0, tasksRemoved = 0, tasksSkipped = 0
        package var sitesAdded = 0, sitesDuplicates = 0, sitesSkipped = 0, sitesUpdated = 0
        package var recentsAdded = 0, recentsUpdated = 0, recentsUnchanged = 0
        /// The skipped records, in file order: `{"uuid","skipped"}` for a task, `{"url","skipped"}` for a site.
        package var skipped: [JSON] = []

        /// True when the workspace has to be written.
        package var changed: Bool {
            tasksAdded + tasksUpdated + tasksRemoved + sitesAdded + sitesUpdated + recentsAdded + recentsUpdated > 0
        }

        mutating func skipTask(_ uuid: String, _ reason: String) {
            tasksSkipped += 1
            skipped.append(.object([("uuid", .string(uuid)), ("skipped", .string(reason))]))
        }

        mutating func skipSite(_ url: String?, _ reason: String) {
            sitesSkipped += 1
            skipped.append(.object([("url", JSON.optional(url)), ("skipped", .string(reason))]))
        }

        package func json(_ format: InterchangeFormat) -> JSON {
            .object([
                ("format", .string(format.rawValue)),
                (
                    "tasks",
                    .object([
                        ("added", .int(tasksAdded)), ("updated", .int(tasksUpdated)), ("unchanged", .int(tasksUnchanged)),
                        ("removed", .int(tasksRemoved)), ("skipped", .int(tasksSkipped))
                    ])
                ),
                (
                    "websites",
                    .object([
                        ("added", .int(sitesAdded)), ("duplicates", .int(sitesDuplicates)), ("skipped", .int(sitesSkipped)),
                        ("updated", .int(sitesUpdated))
                    ])
                ),
                (
                    "recents",
                    .object([("added", .int(recentsAdded)), ("updated", .int(recentsUpdated)), ("unchanged", .int(recentsUnchanged))])
                ),
                ("skipped", .array(skipped))
            ])
        }
    }

    /// Parses `bytes` as `format`; `source` names the file in error messages (DATA_ERROR, exit 12).
    /// Invalid UTF-8 is refused up front, whatever the format and wherever it is (a title, a URL, a tag, an
    /// unknown field): one rule and one message with the byte offset, instead of one per parser.
    package init(_ bytes: [UInt8], format: InterchangeFormat, source: String) throws {
        self.format = format
        if let offset = WorkspaceImport.invalidUTF8Offset(bytes) {
            throw StarlineError(
                .data, "\(source) is not UTF-8 text: invalid byte sequence at byte \(offset)",
                details: .object([("path", .string(source)), ("offset", .int(offset))]))
        }
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
            // A newer document may mean its fields differently: refused, as a newer workspace.json is for writing.
            if incoming.version > Workspace.currentVersion {
                throw StarlineError(
                    .unsupportedVersion,
                    "\(source) has format version \(incoming.version), newer than this sl-tasks (version \(Workspace.currentVersion)): upgrade sl-tasks to import it",
                    details: .object([
                        ("path", .string(source)), ("version", .int(incoming.version)),
                        ("supported", .int(Workspace.currentVersion))
                    ]))
            }
            for (i, t) in incoming.tasks.enumerated() where t["title"]?.stringValue == nil {
                throw StarlineError(.data, "\(source): tasks[\(i)] has no title", details: .object([("index", .int(i))]))
            }
            // A time that is there must be one, within 0001–9999: an import never brings in a date that
            // would be printed wrapped or silently replaced.
            let times: [(String, [JSON], [String])] = [
                ("tasks", incoming.tasks, ["due", "doneAt", "createdAt", "updatedAt"] + TaskRecord.keptDates),
                ("websites", incoming.websites, ["createdAt"]),
                ("recents", incoming.recents, ["lastVisitedAt"])
            ]
            for (kind, records, fields) in times {
                for (i, record) in records.enumerated() {
                    for field in fields {
                        guard let value = record[field], !value.isNull, timestamp(value) == nil else { continue }
                        throw StarlineError(
                            .data,
                            "\(source): \(kind)[\(i)].\(field) \(value.serialized().prefix(80)) is not an RFC 3339 date-time within the years 0001–9999",
                            details: .object([("record", .string("\(kind)[\(i)]")), ("field", .string(field))]))
                    }
                }
            }
            for (i, task) in incoming.tasks.enumerated() {
                try WorkspaceImport.checkKeptFields(task, record: "tasks[\(i)]", source: source)
            }
            content = .workspace(incoming)
        case .taskwarrior:
            content = .taskwarrior(try Taskwarrior.parse(bytes))
        case .netscape:
            content = .bookmarks(try NetscapeBookmarks.parse(String(decoding: bytes, as: UTF8.self)))
        }
    }

    /// The kept Taskwarrior fields of an imported task (W1), when present: `recur` a string, `annotations` an array
    /// of `{entry, description}` with a string description and an RFC 3339 entry within 0001–9999.
    static func checkKeptFields(_ task: JSON, record: String, source: String) throws {
        func fail(_ field: String, _ why: String) -> StarlineError {
            StarlineError(
                .data, "\(source): \(record).\(field) \(why)", details: .object([("record", .string(record)), ("field", .string(field))]))
        }
        if let recur = task["recur"], !recur.isNull, recur.stringValue == nil { throw fail("recur", "is not a string") }
        guard let annotations = task["annotations"], !annotations.isNull else { return }
        guard let items = annotations.arrayValue else { throw fail("annotations", "is not an array of {entry, description}") }
        for (k, item) in items.enumerated() {
            guard case .object = item, item["description"]?.stringValue != nil else {
                throw fail("annotations[\(k)]", "is not an object with a description string")
            }
            if let entry = item["entry"], !entry.isNull, timestamp(entry) == nil {
                throw fail(
                    "annotations[\(k)].entry", "\(entry.serialized().prefix(80)) is not an RFC 3339 date-time within the years 0001–9999")
            }
        }
    }

    /// The offset of the first byte that is not part of a well-formed UTF-8 sequence; nil when all are.
    static func invalidUTF8Offset(_ bytes: [UInt8]) -> Int? {
        if String(validating: bytes, as: UTF8.self) != nil { return nil }
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .error: return offset
            case .emptyInput: return nil
            }
        }
    }
}

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
