import StarlineCore

/// A change to a task's fields, as `edit` asks for it: only what is given changes.
package struct TaskEdit: Sendable {
    package enum DueChange: Sendable { case set(Timestamp), clear }

    package var title: String?
    package var due: DueChange?
    package var notes: String?
    package var addedTags: [String] = []
    package var removedTags: [String] = []

    package init(title: String? = nil, due: DueChange? = nil, notes: String? = nil, addedTags: [String] = [], removedTags: [String] = []) {
        self.title = title
        self.due = due
        self.notes = notes
        self.addedTags = addedTags
        self.removedTags = removedTags
    }

    /// `task` with this edit applied, and whether anything changed. Only a real change sets `updatedAt` to
    /// `now`: an edit to what is already so (the same title again, `--untag` of an absent tag) is no change.
    func applied(to original: JSON, now: Timestamp) -> (task: JSON, changed: Bool) {
        var task = original
        if let title { task.set("title", .string(title)) }
        switch due {
        case .set(let t): task.set("due", .string(t.rfc3339))
        case .clear: task.set("due", .null)
        case nil: break
        }
        if let notes, notes != task["notes"]?.stringValue {
            task.set("notes", .string(notes))
            // Annotations kept from Taskwarrior are the notes' lines with their dates: new notes replace them (W1).
            // Export then writes the notes as one annotation dated `updatedAt` (now), as for a task made here.
            task.remove("annotations")
        }
        if !addedTags.isEmpty || !removedTags.isEmpty {
            var tags = TaskRecord.tags(task)
            for t in addedTags where !tags.contains(t) { tags.append(t) }
            tags.removeAll { removedTags.contains($0) }
            // Kept as stored when the words are the same (a hand-edited list with a non-string is left alone).
            if tags != TaskRecord.tags(original) || original["tags"]?.arrayValue == nil { task.set("tags", .array(tags.map(JSON.string))) }
        }
        if task == original { return (original, false) }
        task.set("updatedAt", .string(now.rfc3339))
        return (task, true)
    }
}

/// The changes to tasks, each addressed by an id or a unique prefix of one (`taskIndex`).
extension Workspace {
    /// Applies `edit` to the task and returns the record, and whether it changed (nothing to write when not).
    package mutating func editTask(_ prefix: String, _ edit: TaskEdit, now: Timestamp) throws -> (task: JSON, changed: Bool) {
        let i = try taskIndex(prefix)
        let r = edit.applied(to: tasks[i], now: now)
        tasks[i] = r.task
        return r
    }

    /// `done` / `undo`: `doneAt` is set when a task becomes done and cleared when it is reopened. Doing what
    /// is already so changes nothing (`changed` false) and still returns the task.
    package mutating func setDone(_ prefix: String, _ done: Bool, now: Timestamp) throws -> (task: JSON, changed: Bool) {
        let i = try taskIndex(prefix)
        var task = tasks[i]
        if TaskRecord.isDone(task) == done { return (task, false) }
        task.set("done", .bool(done))
        task.set("doneAt", done ? .string(now.rfc3339) : .null)
        task.set("updatedAt", .string(now.rfc3339))
        tasks[i] = task
        return (task, true)
    }

    /// Removes the task and returns what was removed.
    package mutating func removeTask(_ prefix: String) throws -> JSON {
        tasks.remove(at: try taskIndex(prefix))
    }
}
