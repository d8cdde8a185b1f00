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

    /// `task` with this edit applied; `updatedAt` becomes `now` (an edit always counts as a change).
    func applied(to task: JSON, now: Timestamp) -> JSON {
        var task = task
        if let title { task.set("title", .string(title)) }
        switch due {
        case .set(let t): task.set("due", .string(t.rfc3339))
        case .clear: task.set("due", .null)
        case nil: break
        }
        if let notes { task.set("notes", .string(notes)) }
        if !addedTags.isEmpty || !removedTags.isEmpty {
            var tags = TaskRecord.tags(task)
            for t in addedTags where !tags.contains(t) { tags.append(t) }
            tags.removeAll { removedTags.contains($0) }
            task.set("tags", .array(tags.map(JSON.string)))
        }
        task.set("updatedAt", .string(now.rfc3339))
        return task
    }
}

/// The changes to tasks, each addressed by an id or a unique prefix of one (`taskIndex`).
extension Workspace {
    /// Applies `edit` to the task and returns the changed record.
    package mutating func editTask(_ prefix: String, _ edit: TaskEdit, now: Timestamp) throws -> JSON {
        let i = try taskIndex(prefix)
        tasks[i] = edit.applied(to: tasks[i], now: now)
        return tasks[i]
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
