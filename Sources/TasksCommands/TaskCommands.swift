import StarlineCore
import StarlineWorkspace

/// What the commands on one task share: the task they name.
enum TaskCommands {
    static let idArgument = ArgumentSpec(
        "ID", help: "A task's number (1…n, as list shows the open tasks), its id, or a unique prefix of the id.")

    /// The options of a command that takes only a task id.
    struct Target {
        var global: TasksGlobalOptions
        var id: String

        init(_ arguments: ParsedArguments) throws {
            global = try TasksGlobalOptions(arguments)
            id = arguments.positionals[0]
        }
    }

    /// `done` / `undo`. A recurring task's next instance is printed under `next`, with its number.
    static func setDone(_ target: Target, _ done: Bool, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(target.global, context)
        let (record, ended) = try bench.store.update { ws in
            let r = try ws.setDone(target.id, done, now: bench.now)
            var record = TaskRecord.output(r.task, number: ws.workingSetNumber(of: r.index))
            if let next = r.next { record.set("next", TaskRecord.output(ws.tasks[next], number: ws.workingSetNumber(of: next))) }
            return ((record, r.recurrenceEnded), r.changed)
        }
        if let ended { bench.output.notice("sl-tasks: no next task: \(ended)") }
        bench.output.emit(record)
        return .ok
    }
}

/// `sl-tasks add TITLE…`.
enum AddCommand: Command {
    static let due = Option<DateExpression?>.date("due", short: "d", help: "Due date, e.g. tomorrow, friday 17:00, +3d, 2026-12-24T18:00.")
    static let tag = Option<[String]>.tags("tag", short: "t", help: "Tag the task (repeatable; a,b adds both).")
    static let notes = Option<NotesInput?>.notes(help: "Notes; - reads them from standard input.")
    static let recur = Option<String?>.recur

    static let spec = CommandSpec(
        "add", abstract: "Add a task and print it with its id and number",
        discussion: """
            The words of TITLE are joined with spaces. The record's number is the task's working-set number: its place \
            among the open tasks, usable wherever an id is (sl-tasks done 3), until tasks before it are done or removed.
            """,
        options: [due.spec, tag.spec, notes.spec, recur.spec],
        arguments: [ArgumentSpec("TITLE", help: "What is to be done.", variadic: true)],
        examples: [
            Example("sl-tasks add Pay the rent --due 'friday 12:00' --tag home", "A task due on Friday at noon, local time."),
            Example("sl-tasks add Water the plants --due 'saturday 09:00' --recur weekly", "Back every week once done.")
        ])

    struct Options {
        var global: TasksGlobalOptions
        var title: String
        var due: DateExpression?
        var tags: [String]
        var notes: NotesInput?
        var recur: String?
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        let global = try TasksGlobalOptions(arguments)
        let title = arguments.positionals.joined(separator: " ").trimmingSpaces
        guard !title.isEmpty else { throw StarlineError(.usage, "the task title is empty") }
        let options = Options(
            global: global, title: title, due: try arguments[due], tags: try arguments[tag], notes: try arguments[notes],
            recur: try arguments[recur])
        if options.recur != nil, options.due == nil {
            throw StarlineError(.usage, "a recurring task needs a due date: give --due", details: .object([("option", .string("recur"))]))
        }
        return options
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.global, context)
        var task = TaskRecord.make(
            title: options.title, notes: try bench.notes(options.notes) ?? "", tags: options.tags,
            due: try bench.date(options.due, option: "due"), now: bench.now)
        if let recur = options.recur { task.set("recur", .string(recur)) }
        let number = try bench.store.appendTask(task)
        bench.output.emit(TaskRecord.output(task, number: number))
        return .ok
    }
}

/// `sl-tasks show ID`.
enum ShowCommand: Command {
    static let spec = CommandSpec("show", abstract: "Print one task", arguments: [TaskCommands.idArgument])

    static func options(_ arguments: ParsedArguments) throws -> TaskCommands.Target { try TaskCommands.Target(arguments) }

    static func run(_ options: TaskCommands.Target, _ context: CommandContext) throws -> ExitStatus {
        let ws = try Workbench(options.global, context).store.read()
        let i = try ws.taskIndex(options.id)
        context.output.emit(TaskRecord.output(ws.tasks[i], number: ws.workingSetNumber(of: i)))
        return .ok
    }
}

/// `sl-tasks done ID`.
enum DoneCommand: Command {
    static let spec = CommandSpec("done", abstract: "Mark a task done (doneAt is set once)", arguments: [TaskCommands.idArgument])

    static func options(_ arguments: ParsedArguments) throws -> TaskCommands.Target { try TaskCommands.Target(arguments) }

    static func run(_ options: TaskCommands.Target, _ context: CommandContext) throws -> ExitStatus {
        try TaskCommands.setDone(options, true, context)
    }
}

/// `sl-tasks undo ID`.
enum UndoCommand: Command {
    static let spec = CommandSpec("undo", abstract: "Mark a done task as not done", arguments: [TaskCommands.idArgument])

    static func options(_ arguments: ParsedArguments) throws -> TaskCommands.Target { try TaskCommands.Target(arguments) }

    static func run(_ options: TaskCommands.Target, _ context: CommandContext) throws -> ExitStatus {
        try TaskCommands.setDone(options, false, context)
    }
}

/// `sl-tasks rm ID`.
enum RemoveCommand: Command {
    static let spec = CommandSpec("rm", abstract: "Remove a task and print what was removed", arguments: [TaskCommands.idArgument])

    static func options(_ arguments: ParsedArguments) throws -> TaskCommands.Target { try TaskCommands.Target(arguments) }

    static func run(_ options: TaskCommands.Target, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.global, context)
        let task = try bench.store.update { ws in (try ws.removeTask(options.id), true) }
        bench.output.emit(TaskRecord.output(task, number: .some(nil)))
        return .ok
    }
}
