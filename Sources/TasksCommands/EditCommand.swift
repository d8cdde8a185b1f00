import StarlineCore
import StarlineWorkspace

/// `sl-tasks edit ID`: change only what is given (`TaskEdit`).
enum EditCommand: Command {
    static let title = Option<String?>.string("title", "TEXT", help: "New title.")
    static let due = Option<DateExpression?>.date("due", short: "d", help: "New due date.")
    static let noDue = Option<Bool>.flag("no-due", help: "Remove the due date.")
    static let notes = Option<NotesInput?>.notes(help: "Replace the notes; - reads them from standard input.")
    static let tag = Option<[String]>.tags("tag", short: "t", help: "Add a tag (repeatable).")
    static let untag = Option<[String]>.tags("untag", help: "Remove a tag (repeatable).")
    static let recur = Option<String?>.recur
    static let noRecur = Option<Bool>.flag("no-recur", help: "Stop repeating the task.")

    static let spec = CommandSpec(
        "edit", abstract: "Change a task's title, due date, recurrence, notes or tags",
        discussion: """
            --due takes every date add takes, counted from now (+2d, now+2d), and due+2d or due-1w, counted from the \
            task's own due date (Taskwarrior's due:due+2d).
            """,
        options: [title.spec, due.spec, noDue.spec, recur.spec, noRecur.spec, notes.spec, tag.spec, untag.spec],
        arguments: [TaskCommands.idArgument],
        examples: [
            Example("sl-tasks edit 3 --due due+2d", "Postpone task 3 by two days from its due date."),
            Example("sl-tasks edit 3f2a --due +2d --tag urgent", "Due two days from now, and tagged.")
        ])

    struct Options {
        var target: TaskCommands.Target
        var title: String?
        var due: DateExpression?
        var clearDue: Bool
        var notes: NotesInput?
        var addedTags: [String]
        var removedTags: [String]
        var recur: String?
        var clearRecur: Bool
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        let target = try TaskCommands.Target(arguments)
        let title = try arguments[Self.title].map(\.trimmingSpaces)
        if let title, title.isEmpty { throw StarlineError(.usage, "the task title is empty") }
        let clearDue = try arguments[noDue]
        let due = try arguments[Self.due]
        if clearDue, due != nil { throw StarlineError(.usage, "--due and --no-due cannot be used together") }
        let recur = try arguments[Self.recur]
        let clearRecur = try arguments[noRecur]
        if clearRecur, recur != nil { throw StarlineError(.usage, "--recur and --no-recur cannot be used together") }
        let options = Options(
            target: target, title: title, due: due, clearDue: clearDue, notes: try arguments[notes],
            addedTags: try arguments[tag], removedTags: try arguments[untag], recur: recur, clearRecur: clearRecur)
        guard
            title != nil || due != nil || clearDue || options.notes != nil || !options.addedTags.isEmpty || !options.removedTags.isEmpty
                || recur != nil || clearRecur
        else {
            throw StarlineError(.usage, "nothing to change: give --title, --due, --no-due, --recur, --no-recur, --notes, --tag or --untag")
        }
        return options
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.target.global, context)
        let dueChange: TaskEdit.DueChange? =
            if options.clearDue {
                .clear
            } else if let shift = options.due?.dueShift {
                .shift(shift.span, sign: shift.sign)
            } else {
                try bench.date(options.due, option: "due").map { .set($0) }
            }
        let recurChange: TaskEdit.RecurChange? = options.clearRecur ? .clear : options.recur.map { .set($0) }
        let edit = TaskEdit(
            title: options.title, due: dueChange, recur: recurChange, notes: try bench.notes(options.notes),
            addedTags: options.addedTags, removedTags: options.removedTags)
        let record = try bench.store.update { ws in
            let r = try ws.editTask(options.target.id, edit, now: bench.now)
            return (TaskRecord.output(r.task, number: ws.workingSetNumber(of: r.index)), r.changed)
        }
        bench.output.emit(record)
        return .ok
    }
}
