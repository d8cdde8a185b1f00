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

    static let spec = CommandSpec(
        "edit", abstract: "Change a task's title, due date, notes or tags",
        options: [title.spec, due.spec, noDue.spec, notes.spec, tag.spec, untag.spec],
        arguments: [TaskCommands.idArgument],
        examples: [Example("sl-tasks edit 3f2a --due +2d --tag urgent", "Postpone a task by two days and tag it.")])

    struct Options {
        var target: TaskCommands.Target
        var title: String?
        var due: DateExpression?
        var clearDue: Bool
        var notes: NotesInput?
        var addedTags: [String]
        var removedTags: [String]
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        let target = try TaskCommands.Target(arguments)
        let title = try arguments[Self.title].map(\.trimmingSpaces)
        if let title, title.isEmpty { throw StarlineError(.usage, "the task title is empty") }
        let clearDue = try arguments[noDue]
        let due = try arguments[Self.due]
        if clearDue, due != nil { throw StarlineError(.usage, "--due and --no-due cannot be used together") }
        let options = Options(
            target: target, title: title, due: due, clearDue: clearDue, notes: try arguments[notes],
            addedTags: try arguments[tag], removedTags: try arguments[untag])
        guard title != nil || due != nil || clearDue || options.notes != nil || !options.addedTags.isEmpty || !options.removedTags.isEmpty
        else {
            throw StarlineError(.usage, "nothing to change: give --title, --due, --no-due, --notes, --tag or --untag")
        }
        return options
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.target.global, context)
        let dueChange: TaskEdit.DueChange? =
            if options.clearDue { .clear } else { try bench.date(options.due, option: "due").map { .set($0) } }
        let edit = TaskEdit(
            title: options.title, due: dueChange, notes: try bench.notes(options.notes),
            addedTags: options.addedTags, removedTags: options.removedTags)
        let task = try bench.store.update { ws in
            let r = try ws.editTask(options.target.id, edit, now: bench.now)
            return (r.task, r.changed)
        }
        bench.output.emit(TaskRecord.output(task))
        return .ok
    }
}
