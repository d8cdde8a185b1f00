import StarlineCore
import StarlineWorkspace

/// `sl-tasks recent …`: recently visited pages, most recent first.
enum RecentCommands {
    static let spec = CommandSpec("recent", abstract: "Recently visited pages, most recent first")

    static let tree = CommandTree<CommandRunner>.group(
        spec,
        [
            .command(RecentAddCommand.self), .command(RecentListCommand.self), .command(RecentClearCommand.self)
        ])
}

/// `sl-tasks recent add URL`.
enum RecentAddCommand: Command {
    static let title = Option<String?>.string("title", "TEXT", help: "Title of the page.")
    static let keep = Option<Int>.integer(
        "keep", "N", help: "Keep at most N recent pages; the oldest are dropped.",
        default: RecentRecord.defaultLimit, range: 1...100_000)

    static let spec = CommandSpec(
        "add", abstract: "Record a visit; a revisit moves the page to the top and counts it",
        options: [title.spec, keep.spec],
        arguments: [ArgumentSpec("URL", help: "An absolute URL.")])

    struct Options {
        var global: TasksGlobalOptions
        var url: SiteURL
        var title: String?
        var keep: Int
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            global: try TasksGlobalOptions(arguments), url: try SiteURL(validating: arguments.positionals[0]),
            title: try arguments[title], keep: try arguments[keep])
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.global, context)
        let record = try bench.store.update { ws in
            (try ws.recordVisit(options.url, title: options.title, at: bench.now, keep: options.keep), true)
        }
        bench.output.emit(RecentRecord.output(record))
        return .ok
    }
}

/// `sl-tasks recent list`.
enum RecentListCommand: Command {
    static let since = Option<DateExpression?>.date("since", help: "Only visits at or after WHEN.")

    static let spec = CommandSpec("list", abstract: "List recent visits", options: [since.spec] + ListOptions.specs)

    struct Options {
        var global: TasksGlobalOptions
        var since: DateExpression?
        var list: ListOptions
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(global: try TasksGlobalOptions(arguments), since: try arguments[since], list: try ListOptions(arguments))
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.global, context)
        bench.emitList(
            try bench.store.read().recents(since: try bench.date(options.since, option: "since")).map(RecentRecord.output), options.list,
            columns: ["lastVisitedAt", "visits", "title", "url"])
        return .ok
    }
}

/// `sl-tasks recent clear`.
enum RecentClearCommand: Command {
    static let spec = CommandSpec("clear", abstract: "Forget every recent visit")

    static func options(_ arguments: ParsedArguments) throws -> TasksGlobalOptions { try TasksGlobalOptions(arguments) }

    static func run(_ options: TasksGlobalOptions, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options, context)
        let count = try bench.store.update { ws in
            let n = ws.clearRecents()
            return (n, n > 0)
        }
        bench.output.emit(.object([("cleared", .int(count))]))
        return .ok
    }
}
