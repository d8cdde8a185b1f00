import StarlineCore

/// The deadline and state filters of `sl-tasks list`, combined with AND (DESIGN section 5):
///
/// | filter | keeps |
/// |---|---|
/// | `--overdue` | due < now |
/// | `--today` | start of today ≤ due < start of tomorrow (local zone) |
/// | `--due-within D` | now ≤ due ≤ now + D |
/// | `--due-before T` | due < T |
/// | `--due-after T` | due > T |
/// | `--no-due` | no due date |
///
/// A task without a due date matches no deadline filter, so it is never overdue. Done tasks are left
/// out unless `done` is `.only` (only done tasks) or `.all`.
public struct TaskFilter: Sendable {
    public enum DoneMode: Sendable { case open, only, all }

    public var now: Timestamp
    public var overdue = false
    public var today = false
    public var noDue = false
    public var dueBefore: Timestamp?
    public var dueAfter: Timestamp?
    public var dueWithin: TimeSpan?
    public var done: DoneMode = .open
    public var tags: [String] = []

    public init(now: Timestamp) { self.now = now }

    /// Boundaries computed once per listing.
    public struct Bounds: Sendable {
        var lower: Timestamp?          // due ≥ lower
        var upperExclusive: Timestamp? // due < upper
        var upperInclusive: Timestamp? // due ≤ upper
        var afterExclusive: Timestamp? // due > after
        var needsDue: Bool
    }

    public var bounds: Bounds {
        var b = Bounds(lower: nil, upperExclusive: nil, upperInclusive: nil, afterExclusive: dueAfter, needsDue: false)
        func below(_ t: Timestamp) { b.upperExclusive = min(b.upperExclusive ?? t, t) }
        func atLeast(_ t: Timestamp) { b.lower = max(b.lower ?? t, t) }
        if overdue { below(now); b.needsDue = true }
        if today {
            let start = LocalCalendar.startOfDay(now)
            atLeast(start)
            below(LocalCalendar.addDays(start, 1).startOfLocalDay)
            b.needsDue = true
        }
        if let dueWithin {
            atLeast(now)
            b.upperInclusive = dueWithin.added(to: now)
            b.needsDue = true
        }
        if let dueBefore { below(dueBefore); b.needsDue = true }
        if dueAfter != nil { b.needsDue = true }
        return b
    }

    /// True when `task` passes every filter; `due` is the task's parsed due date.
    public func matches(_ task: JSON, due: Timestamp?, bounds b: Bounds) -> Bool {
        switch done {
        case .open: if TaskRecord.isDone(task) { return false }
        case .only: if !TaskRecord.isDone(task) { return false }
        case .all: break
        }
        if noDue, due != nil || !(task["due"]?.isNull ?? true) { return false }
        if b.needsDue {
            guard let due else { return false }
            if let l = b.lower, due < l { return false }
            if let u = b.upperExclusive, !(due < u) { return false }
            if let u = b.upperInclusive, due > u { return false }
            if let a = b.afterExclusive, !(due > a) { return false }
        }
        if !tags.isEmpty {
            let have = TaskRecord.tags(task)
            for t in tags where !have.contains(t) { return false }
        }
        return true
    }

    /// The matching tasks, due ones first by due date (earliest first), then those without a due date,
    /// each group in file order.
    public func apply(_ tasks: [JSON]) -> [JSON] {
        let b = bounds
        var hits: [(due: Timestamp?, index: Int)] = []
        for (i, task) in tasks.enumerated() {
            let due = TaskRecord.due(task)
            if matches(task, due: due, bounds: b) { hits.append((due, i)) }
        }
        hits.sort { x, y in
            switch (x.due, y.due) {
            case let (a?, b?): return a != b ? a < b : x.index < y.index
            case (.some, .none): return true
            case (.none, .some): return false
            case (.none, .none): return x.index < y.index
            }
        }
        return hits.map { tasks[$0.index] }
    }
}

extension Timestamp {
    /// Local midnight of this instant's day (guards against a DST change at midnight).
    var startOfLocalDay: Timestamp { LocalCalendar.startOfDay(self) }
}
