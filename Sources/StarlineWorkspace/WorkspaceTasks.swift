import StarlineCore

/// A change to a task's fields, as `edit` asks for it: only what is given changes.
package struct TaskEdit: Sendable {
    /// `shift`: `--due due+2d`, the task's own due date moved (Taskwarrior's `due:due+2d`).
    package enum DueChange: Sendable { case set(Timestamp), clear, shift(TimeSpan, sign: Int) }
    package enum RecurChange: Sendable { case set(String), clear }

    package var title: String?
    package var due: DueChange?
    package var recur: RecurChange?
    package var notes: String?
    package var addedTags: [String] = []
    package var removedTags: [String] = []

    package init(
        title: String? = nil, due: DueChange? = nil, recur: RecurChange? = nil, notes: String? = nil, addedTags: [String] = [],
        removedTags: [String] = []
    ) {
        self.title = title
        self.due = due
        self.recur = recur
        self.notes = notes
        self.addedTags = addedTags
        self.removedTags = removedTags
    }

    /// `task` with this edit applied, and whether anything changed. Only a real change sets `updatedAt` to
    /// `now`: an edit to what is already so (the same title again, `--untag` of an absent tag) is no change.
    /// A shift of a task without a due date, or out of years 0001–9999, is USAGE (exit 2).
    func applied(to original: JSON, now: Timestamp) throws -> (task: JSON, changed: Bool) {
        var task = original
        if let title { task.set("title", .string(title)) }
        switch due {
        case .set(let t): task.set("due", .string(t.rfc3339))
        case .clear: task.set("due", .null)
        case .shift(let span, let sign):
            guard let current = TaskRecord.due(original) else {
                throw StarlineError(
                    .usage, "the task has no due date to move: give a date (--due +2d counts from now)",
                    details: .object([("option", .string("due"))]))
            }
            guard let moved = span.added(to: current, sign: sign) else {
                throw StarlineError(
                    .usage, "the date given to --due is out of range: dates must lie within the years 0001–9999",
                    details: .object([("option", .string("due"))]))
            }
            task.set("due", .string(moved.rfc3339))
        case nil: break
        }
        switch recur {
        case .set(let period): task.set("recur", .string(period))
        case .clear:
            task.remove("recur")
            if task["taskwarrior"]?["recur"] != nil, var legacy = task["taskwarrior"] {
                legacy.remove("recur")
                task.set("taskwarrior", legacy)
            }
        case nil: break
        }
        var settles = false
        if case .set = recur { settles = true }
        if case .clear = due { settles = true }
        // Only what this edit does is checked: a kept Taskwarrior task edited otherwise stays as it was.
        if settles, TaskRecord.recur(task) != nil, TaskRecord.due(task) == nil {
            throw StarlineError(
                .usage, "a recurring task needs a due date: give --due, or --no-recur",
                details: .object([("option", .string(settlesByRecur(recur) ? "recur" : "no-due"))]))
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

private func settlesByRecur(_ change: TaskEdit.RecurChange?) -> Bool {
    if case .set? = change { return true }
    return false
}

/// The changes to tasks, each addressed by an id or a unique prefix of one (`taskIndex`).
extension Workspace {
    /// Applies `edit` to the task and returns the record, and whether it changed (nothing to write when not).
    package mutating func editTask(_ prefix: String, _ edit: TaskEdit, now: Timestamp) throws -> (task: JSON, changed: Bool, index: Int) {
        let i = try taskIndex(prefix)
        let r = try edit.applied(to: tasks[i], now: now)
        tasks[i] = r.task
        return (r.task, r.changed, i)
    }

    /// What `done` did: the task, whether it changed, and the next instance of a recurring task (appended).
    package struct DoneResult {
        package var task: JSON
        package var changed: Bool
        package var index: Int
        /// The index of the next instance in `tasks`, when one was made.
        package var next: Int?
        /// Why a recurring task made no next instance: its `recur` is not a period, or `until` has passed.
        package var recurrenceEnded: String?
    }

    /// `done` / `undo`: `doneAt` is set when a task becomes done and cleared when it is reopened. Doing what
    /// is already so changes nothing (`changed` false) and still returns the task. Finishing a task with a
    /// `recur` period and a due date appends its next instance (`Recurrence`): a copy, open, due one period
    /// on (the first such date after now), with `wait` and `scheduled` moved as far; none past `until`.
    package mutating func setDone(_ prefix: String, _ done: Bool, now: Timestamp) throws -> DoneResult {
        let i = try taskIndex(prefix)
        var task = tasks[i]
        if TaskRecord.isDone(task) == done { return DoneResult(task: task, changed: false, index: i) }
        task.set("done", .bool(done))
        task.set("doneAt", done ? .string(now.rfc3339) : .null)
        task.set("updatedAt", .string(now.rfc3339))
        tasks[i] = task
        var result = DoneResult(task: task, changed: true, index: i)
        guard done, let period = TaskRecord.recur(task), let due = TaskRecord.due(task) else { return result }
        guard let recurrence = Recurrence(parsing: period), let nextDue = recurrence.nextDue(after: due, now: now) else {
            result.recurrenceEnded = "its recur '\(period)' is not a period sl-tasks knows (daily, weekly, 3d, P1M, …)"
            return result
        }
        if let until = TaskRecord.keptDate(task, "until"), nextDue > until {
            result.recurrenceEnded = "its next due date would be after its until date"
            return result
        }
        tasks.append(TaskRecord.nextInstance(of: task, due: nextDue, now: now))
        result.next = tasks.count - 1
        return result
    }

    /// Removes the task and returns what was removed.
    package mutating func removeTask(_ prefix: String) throws -> JSON {
        tasks.remove(at: try taskIndex(prefix))
    }
}
