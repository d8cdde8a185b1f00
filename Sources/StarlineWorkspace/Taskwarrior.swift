import StarlineCore

/// Taskwarrior's JSON task format (https://taskwarrior.org/docs/design/task/): `uuid`, `description`,
/// `status` (pending, completed, deleted, waiting, recurring), `entry`, `modified`, `due`, `end`,
/// `wait`, `scheduled`, `until`, `recur`, `tags`, `annotations` [{entry, description}], dates as
/// `20261130T080000Z`.
public enum Taskwarrior {
    /// Fields of a Taskwarrior task that we map to our own; every other field (project, priority, parent,
    /// imask, …) is kept on our task under `"taskwarrior"` and given back on export. `id`, `urgency` and the
    /// template's `mask` are computed by Taskwarrior and dropped.
    static let mapped: Set<String> = [
        "uuid", "description", "status", "entry", "modified", "due", "end", "tags", "annotations",
        "wait", "scheduled", "until", "recur"
    ]
    static let computed: Set<String> = ["id", "urgency", "mask"]

    /// Our task as a Taskwarrior task (what `task import` accepts).
    public static func export(_ task: JSON) -> JSON {
        var out: [(String, JSON)] = []
        let created = timestamp(task["createdAt"])
        let updated = timestamp(task["updatedAt"]) ?? created
        out.append(("uuid", task["id"] ?? .null))
        out.append(("description", task["title"] ?? .string("")))
        out.append(("status", .string(TaskRecord.isDone(task) ? "completed" : "pending")))
        if let created { out.append(("entry", .string(created.taskwarrior))) }
        if let updated { out.append(("modified", .string(updated.taskwarrior))) }
        if let due = TaskRecord.due(task) { out.append(("due", .string(due.taskwarrior))) }
        if TaskRecord.isDone(task), let end = timestamp(task["doneAt"]) ?? updated { out.append(("end", .string(end.taskwarrior))) }
        for field in TaskRecord.keptDates {
            if let t = TaskRecord.keptDate(task, field) { out.append((field, .string(t.taskwarrior))) }
        }
        if let recur = TaskRecord.recur(task) { out.append(("recur", .string(recur))) }
        let tags = TaskRecord.tags(task)
        if !tags.isEmpty { out.append(("tags", .array(tags.map(JSON.string)))) }
        let fallbackEntry = updated ?? created ?? Timestamp(seconds: 0)
        if let annotations = TaskRecord.annotations(task) {
            // The ones imported, as they were, while the notes are still what they joined to.
            out.append(
                (
                    "annotations",
                    .array(
                        annotations.map { a in
                            .object([("entry", .string((a.entry ?? fallbackEntry).taskwarrior)), ("description", .string(a.description))])
                        })
                ))
        } else if let notes = task["notes"]?.stringValue, !notes.isEmpty {
            out.append(
                (
                    "annotations",
                    .array([
                        .object([
                            ("entry", .string(fallbackEntry.taskwarrior)),
                            ("description", .string(notes))
                        ])
                    ])
                ))
        }
        if case .object(let extra)? = task["taskwarrior"] {
            for (k, v) in extra where !mapped.contains(k) && !computed.contains(k) { out.append((k, v)) }
        }
        return .object(out)
    }

    /// The tasks of a `task export` file: a JSON array, or one JSON object per line.
    public static func parse(_ bytes: [UInt8]) throws -> [JSON] {
        if let doc = try? JSON.parse(bytes) {
            switch doc {
            case .array(let items): return items
            case .object: return [doc]
            default: break
            }
        }
        var items: [JSON] = []
        var lineNumber = 0
        for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            lineNumber += 1
            var slice = line[...]
            while let l = slice.last, l == 0x0D || l == 0x20 || l == 0x2C { slice = slice.dropLast() }  // CR, trailing comma
            while let f = slice.first, f == 0x20 || f == 0x09 { slice = slice.dropFirst() }
            if slice.isEmpty || slice == [UInt8(ascii: "[")] || slice == [UInt8(ascii: "]")] { continue }
            do {
                items.append(try JSON.parse(Array(slice)))
            } catch let e as StarlineError {
                throw StarlineError(
                    .data, "not Taskwarrior JSON: line \(lineNumber): \(e.message)", details: .object([("line", .int(lineNumber))]))
            }
        }
        return items
    }

    /// What to do with one Taskwarrior record: store it, remove our task of that uuid, or skip it — with the
    /// reason the import reports beside the uuid.
    public enum Action { case upsert(JSON), delete(String), skip(String, reason: String) }

    /// Why a recurrence template is not imported (its instances are: each is a pending task of its own).
    public static let templateSkipReason =
        "recurrence template: sl-tasks does not expand recurrences (its pending instances are imported as tasks)"
    /// Why a deleted task that is not in the workspace is skipped (one that is, is removed).
    public static let deletedSkipReason = "deleted in Taskwarrior, and not in the workspace"

    /// `tags`: an array of words, or the comma-separated string of Taskwarrior's own data files. A tag that
    /// is not one word (spaces, a comma, empty) or is not a string fails the import naming the task and the
    /// tag — neither stored as it is nor dropped without a word.
    static func importedTags(_ value: JSON?, fail: (String) -> StarlineError) throws -> [String] {
        let items: [JSON]
        switch value {
        case nil, .null?: return []
        case .array(let list)?: items = list
        case .string(let text)?: items = text.split(separator: ",", omittingEmptySubsequences: false).map { .string(String($0)) }
        case let other?: throw fail("tags \(other.serialized()) is not an array of strings")
        }
        var tags: [String] = []
        for item in items {
            guard let tag = item.stringValue else { throw fail("tag \(item.serialized()) is not a string") }
            guard (try? TaskRecord.validateTag(tag)) != nil else {
                throw fail("tag \(item.serialized()) is not one word (a tag has no spaces or commas)")
            }
            if !tags.contains(tag) { tags.append(tag) }
        }
        return tags
    }

    /// `annotations`: an array of `{entry, description}` in Taskwarrior's order. A description must be a string
    /// and an entry a date within 0001–9999 (a missing one is the task's `entry`); anything else fails the import
    /// naming the task, rather than dropping a note without a word.
    static func importedAnnotations(
        _ value: JSON?, taskEntry: Timestamp,
        fail: (String) -> StarlineError
    ) throws -> [TaskRecord.Annotation] {
        let items: [JSON]
        switch value {
        case nil, .null?: return []
        case .array(let list)?: items = list
        case let other?: throw fail("annotations \(other.serialized().prefix(80)) is not an array of {entry, description}")
        }
        var result: [TaskRecord.Annotation] = []
        result.reserveCapacity(items.count)
        for (i, item) in items.enumerated() {
            guard case .object = item, let description = item["description"]?.stringValue else {
                throw fail("annotation \(i + 1) is not an object with a description string")
            }
            var entry: Timestamp?
            if let v = item["entry"], !v.isNull {
                guard let s = v.stringValue, let t = Timestamp(taskwarrior: s) else {
                    throw fail(
                        "annotation \(i + 1): unreadable entry date \(v.serialized().prefix(80)) (a date in years 0001–9999 such as 20261130T080000Z)"
                    )
                }
                entry = t
            }
            result.append(TaskRecord.Annotation(entry: entry ?? taskEntry, description: description))
        }
        return result
    }

    /// Maps one Taskwarrior task onto our task `existing` (nil for a new one). Throws DATA_ERROR for a
    /// task without a valid uuid or description, or with an unreadable date.
    public static func importTask(_ tw: JSON, existing: JSON?, now: Timestamp, index: Int) throws -> Action {
        func fail(_ why: String) -> StarlineError {
            StarlineError(.data, "Taskwarrior task \(index + 1): \(why)", details: .object([("index", .int(index))]))
        }
        guard case .object(let members) = tw else { throw fail("not a JSON object") }
        guard let uuid = tw["uuid"]?.stringValue, RandomUUID.isValid(uuid) else { throw fail("no valid uuid") }
        let id = uuid.lowercased()
        let status = tw["status"]?.stringValue ?? "pending"
        switch status {
        case "deleted": return .delete(id)
        case "recurring": return .skip(id, reason: templateSkipReason)  // a recurrence template, not a task to do
        case "pending", "waiting", "completed": break
        default: throw fail("unknown status '\(status)'")
        }
        guard let title = tw["description"]?.stringValue else { throw fail("no description") }
        func date(_ key: String) throws -> Timestamp? {
            guard let v = tw[key], !v.isNull else { return nil }
            guard let s = v.stringValue, let t = Timestamp(taskwarrior: s) else {
                throw fail("unreadable \(key) date \(v.serialized().prefix(80)) (a date in years 0001–9999 such as 20261130T080000Z)")
            }
            return t
        }
        let entry = try date("entry") ?? now
        let modified = try date("modified") ?? entry
        let due = try date("due")
        let end = try date("end")
        let tags = try importedTags(tw["tags"], fail: fail)
        let annotations = try importedAnnotations(tw["annotations"], taskEntry: entry, fail: fail)
        let notes = annotations.map(\.description).joined(separator: "\n")
        var recur: String?
        switch tw["recur"] {
        case nil, .null?: break
        case .string(let text)?: recur = text.isEmpty ? nil : text
        case let other?: throw fail("recur \(other.serialized()) is not a string (a period such as weekly or 2wk)")
        }
        let done = status == "completed"

        var task = existing ?? .object([])
        task.set("id", existing?["id"] ?? .string(id))
        task.set("title", .string(title))
        task.set("notes", .string(notes))
        task.set("tags", .array(tags.map(JSON.string)))
        task.set("due", due.map { .string($0.rfc3339) } ?? .null)
        task.set("done", .bool(done))
        task.set("doneAt", done ? .string((end ?? modified).rfc3339) : .null)
        task.set("createdAt", .string(entry.rfc3339))
        task.set("updatedAt", .string(modified.rfc3339))
        // Kept for the way back (W1), set only when Taskwarrior has them: a field Taskwarrior no longer has goes.
        for field in TaskRecord.keptDates {
            if let t = try date(field) { task.set(field, .string(t.rfc3339)) } else { task.remove(field) }
        }
        if let recur { task.set("recur", .string(recur)) } else { task.remove("recur") }
        // One annotation dated at `modified` on a task of ours without annotations is what export made of its
        // notes: the notes say it all, and a re-import of our own export changes nothing. Others are kept as they are.
        let madeByExport = existing != nil && existing?["annotations"] == nil && annotations.count == 1 && annotations[0].entry == modified
        if annotations.isEmpty || madeByExport {
            task.remove("annotations")
        } else {
            task.set(
                "annotations", .array(annotations.map { TaskRecord.annotation(entry: $0.entry ?? entry, description: $0.description) }))
        }
        let extra = members.filter { !mapped.contains($0.0) && !computed.contains($0.0) }
        if extra.isEmpty { task.remove("taskwarrior") } else { task.set("taskwarrior", .object(extra)) }
        return .upsert(task)
    }
}
