import StarlineCore
import StarlineWorkspace

/// `sl-tasks list`: tasks filtered by deadline, state and tags (`TaskFilter`).
enum ListCommand: Command {
    static let overdue = Option<Bool>.flag("overdue", help: "Only tasks whose due date has passed (due < now).")
    static let today = Option<Bool>.flag("today", help: "Only tasks due today (local time).")
    static let dueBefore = Option<DateExpression?>.date("due-before", help: "Only tasks due before WHEN (due < WHEN).")
    static let dueAfter = Option<DateExpression?>.date("due-after", help: "Only tasks due after WHEN (due > WHEN).")
    static let dueWithin = Option<TimeSpan?>.span(
        "due-within", help: "Only tasks due from now to now + DURATION, both included (d and w are calendar days).",
        range: 0...(3_660_000 * 86_400))
    static let noDue = Option<Bool>.flag("no-due", help: "Only tasks without a due date.")
    static let done = Option<Bool>.flag("done", help: "Only done tasks.")
    static let all = Option<Bool>.flag("all", help: "Open and done tasks.")
    static let tag = Option<[String]>.tags("tag", short: "t", help: "Only tasks with TAG (repeatable: all of them).")

    static let spec = CommandSpec(
        "list", abstract: "List tasks, filtered by deadline, state and tags",
        discussion: """
            Filters combine with AND and use the local time zone: --overdue keeps due < now; --today keeps start of today ≤ due < start of tomorrow; --due-within D keeps now ≤ due ≤ now + D; --due-before T keeps due < T; --due-after T keeps due > T; --no-due keeps tasks without a due date. A task without a due date matches no deadline filter, so it is never overdue. Done tasks are left out unless --done (only done tasks) or --all. Tasks are listed by due date, earliest first, then those without one, in the order they were added. Piped or redirected the result is JSON Lines, one task per line (-o json for one JSON array); on a terminal, a table (-o and --fields choose).
            """,
        options: [overdue.spec, today.spec, dueBefore.spec, dueAfter.spec, dueWithin.spec, noDue.spec, done.spec, all.spec, tag.spec]
            + ListOptions.specs,
        examples: [
            Example("sl-tasks list --overdue --jsonl | jq -r .title", "Titles of overdue tasks."),
            Example(
                "sl-tasks list --due-within 1d --jsonl | jq -r .title | mail -s 'due tomorrow' me",
                "A cron job mailing what is due within a day.")
        ])

    struct Options {
        var global: TasksGlobalOptions
        var overdue: Bool
        var today: Bool
        var noDue: Bool
        var dueBefore: DateExpression?
        var dueAfter: DateExpression?
        var dueWithin: TimeSpan?
        var done: TaskFilter.DoneMode
        var tags: [String]
        var list: ListOptions
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            global: try TasksGlobalOptions(arguments), overdue: try arguments[overdue], today: try arguments[today],
            noDue: try arguments[noDue], dueBefore: try arguments[dueBefore], dueAfter: try arguments[dueAfter],
            dueWithin: try arguments[dueWithin],
            done: try arguments[all] ? .all : try arguments[done] ? .only : .open,
            tags: try arguments[tag], list: try ListOptions(arguments))
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.global, context)
        var filter = TaskFilter(now: bench.now)
        filter.overdue = options.overdue
        filter.today = options.today
        filter.noDue = options.noDue
        filter.dueBefore = try bench.date(options.dueBefore, option: "due-before")
        filter.dueAfter = try bench.date(options.dueAfter, option: "due-after")
        if let span = options.dueWithin, span.added(to: bench.now) == nil { throw Workbench.outOfRange("due-within") }
        filter.dueWithin = options.dueWithin
        filter.done = options.done
        filter.tags = options.tags
        try bench.emitTasks(try bench.store.tasks(matching: filter), options.list, columns: ["number", "id", "title", "due", "tags"])
        return .ok
    }
}
