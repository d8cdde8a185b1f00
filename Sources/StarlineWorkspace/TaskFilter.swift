import StarlineCore

/// The deadline and state filters of `sl-tasks list`, combined with AND (README, sl-tasks):
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
        var lower: Timestamp?  // due ≥ lower
        var upperExclusive: Timestamp?  // due < upper
        var upperInclusive: Timestamp?  // due ≤ upper
        var afterExclusive: Timestamp?  // due > after
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
            // Beyond year 9999 every date is within (the front-end refuses such a span before it gets here).
            b.upperInclusive = dueWithin.added(to: now) ?? Timestamp(seconds: Timestamp.supportedRange.upperBound)
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

    /// A task of a listing, with its working-set number (`Workspace.workingSetNumber`; nil when done).
    public typealias Listed = (task: JSON, number: Int?)

    /// The matching tasks, due ones first by due date (earliest first), then those without a due date,
    /// each group in file order.
    public func apply(_ tasks: [JSON]) -> [Listed] {
        let b = bounds
        var hits: [Hit<Listed>] = []
        var open = 0
        for (i, task) in tasks.enumerated() {
            let number: Int? = TaskRecord.isDone(task) ? nil : open + 1
            if number != nil { open += 1 }
            let due = TaskRecord.due(task)
            if matches(task, due: due, bounds: b) { hits.append(Hit(due: due, index: i, item: (task, number))) }
        }
        return TaskFilter.sorted(hits)
    }

    /// A matching task, `item`, with what orders it: its due date, then its place in the file.
    struct Hit<Item> {
        var due: Timestamp?
        var index: Int
        var item: Item
    }
}

extension Timestamp {
    /// Local midnight of this instant's day (guards against a DST change at midnight).
    var startOfLocalDay: Timestamp { LocalCalendar.startOfDay(self) }
}

// MARK: - Listing straight from the file's bytes

extension TaskFilter {
    /// The raw value of a member, classified without building a tree.
    enum RawValue {
        case absent, null, trueValue, falseValue
        case time(Timestamp)
        /// Anything else (an escaped string, a number, an unparseable date…): let the full check decide.
        case other
    }

    static func classify(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>?) -> RawValue {
        guard let range else { return .absent }
        let v = UnsafeBufferPointer(rebasing: bytes[range])
        switch v.first {
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "t"): return .trueValue
        case UInt8(ascii: "f"): return .falseValue
        case UInt8(ascii: "\""):
            guard v.count >= 2 else { return .other }
            let body = UnsafeBufferPointer(rebasing: v[1..<(v.count - 1)])
            if body.contains(UInt8(ascii: "\\")) { return .other }
            return Timestamp.parseRFC3339(body).map { .time(Timestamp(seconds: $0)) } ?? .other
        default: return .other
        }
    }

    /// False only when `matches` would certainly be false for a task the scanner saw plainly (not `uncertain`):
    /// a conservative pre-check on its raw `due` and `done` values, so only candidates are decoded. `isDone` is
    /// `TaskRecord.isDone` read from the raw value: only a JSON true is done, a non-boolean counts as not done.
    func mightMatch(isDone: Bool, due: RawValue, bounds b: Bounds) -> Bool {
        switch done {
        case .open: if isDone { return false }
        case .only: if !isDone { return false }
        case .all: break
        }
        if noDue {
            switch due {
            case .absent, .null: break
            default: return false
            }
        }
        if b.needsDue {
            switch due {
            case .absent, .null: return false
            case .time(let t):
                if let l = b.lower, t < l { return false }
                if let u = b.upperExclusive, !(t < u) { return false }
                if let u = b.upperInclusive, t > u { return false }
                if let a = b.afterExclusive, !(t > a) { return false }
            default: break
            }
        }
        return true
    }

    /// `apply` over a file that `WorkspaceScanner` has mapped: only tasks that pass `mightMatch` are
    /// considered, and of those only the ones whose verdict the raw values cannot settle are decoded and
    /// checked in full. The raw values settle it when the scanner saw every key plainly, `due` is absent,
    /// null or a plain RFC 3339 time, and no tag is asked for: then `mightMatch` is `matches`. Same result
    /// as decoding everything; the undecoded tasks stay bytes (`TaskListing`).
    package func listing(bytes: [UInt8], slices: [WorkspaceScanner.TaskSlice]) throws -> TaskListing {
        let b = bounds
        var candidates: [Hit<TaskListing.Entry>] = []
        var open = 0
        try bytes.withUnsafeBufferPointer { buffer in
            for (i, slice) in slices.enumerated() {
                // Every task counts toward the working-set numbers, listed or not; a slice the scanner was
                // unsure of is decoded to know (`TaskRecord.isDone`: only a JSON true is done).
                var decoded: JSON? = nil
                let done: Bool
                if slice.uncertain {
                    decoded = try JSON.parse(bytes: UnsafeBufferPointer(rebasing: buffer[slice.range]))
                    done = TaskRecord.isDone(decoded!)
                } else if case .trueValue = TaskFilter.classify(buffer, slice.done) {
                    done = true
                } else {
                    done = false
                }
                let number: Int? = done ? nil : open + 1
                if !done { open += 1 }
                let rawDue = TaskFilter.classify(buffer, slice.due)
                guard slice.uncertain || mightMatch(isDone: done, due: rawDue, bounds: b) else { continue }
                if decoded == nil, tags.isEmpty {
                    let settled: Timestamp??
                    switch rawDue {
                    case .absent, .null: settled = .some(nil)
                    case .time(let t): settled = .some(t)
                    default: settled = nil
                    }
                    if let due = settled {
                        candidates.append(Hit(due: due, index: i, item: TaskListing.Entry(source: .stored(slice.range), number: number)))
                        continue
                    }
                }
                let task = try decoded ?? JSON.parse(bytes: UnsafeBufferPointer(rebasing: buffer[slice.range]))
                let due = TaskRecord.due(task)
                if matches(task, due: due, bounds: b) {
                    candidates.append(Hit(due: due, index: i, item: TaskListing.Entry(source: .decoded(task), number: number)))
                }
            }
        }
        return TaskListing(bytes: bytes, entries: TaskFilter.sorted(candidates))
    }

    /// `listing(bytes:slices:)`, every task decoded.
    package func apply(bytes: [UInt8], slices: [WorkspaceScanner.TaskSlice]) throws -> [Listed] {
        try listing(bytes: bytes, slices: slices).listed()
    }

    /// How many tasks of a mapped file are open (not done), decoding only the slices the scanner was unsure of.
    static func openCount(bytes: [UInt8], slices: [WorkspaceScanner.TaskSlice]) throws -> Int {
        try bytes.withUnsafeBufferPointer { buffer in
            var open = 0
            for slice in slices {
                if slice.uncertain {
                    if !TaskRecord.isDone(try JSON.parse(bytes: UnsafeBufferPointer(rebasing: buffer[slice.range]))) { open += 1 }
                } else if case .trueValue = TaskFilter.classify(buffer, slice.done) {
                    continue
                } else {
                    open += 1
                }
            }
            return open
        }
    }

    static func sorted<Item>(_ hits: [Hit<Item>]) -> [Item] {
        hits.sorted { x, y in
            switch (x.due, y.due) {
            case let (a?, b?): return a != b ? a < b : x.index < y.index
            case (.some, .none): return true
            case (.none, .some): return false
            case (.none, .none): return x.index < y.index
            }
        }.map(\.item)
    }
}
