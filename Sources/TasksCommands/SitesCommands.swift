import StarlineCore
import StarlineWorkspace

/// `sl-tasks sites …`: website bookmarks, one per normalised URL.
enum SitesCommands {
    static let spec = CommandSpec(
        "sites", abstract: "Website bookmarks, deduplicated by normalised URL",
        discussion: """
            URLs are compared in a normalised form: scheme and host lowercased (the scheme itself is kept), the default \
            port, the fragment and a trailing slash dropped, dot segments resolved, tracking parameters (utm_*, fbclid, \
            gclid, msclkid and similar) removed from the query, whose order is kept. The URL is stored as given, beside \
            normalizedUrl.
            """)

    static let tree = CommandTree<CommandRunner>.group(
        spec,
        [
            .command(SitesAddCommand.self), .command(SitesListCommand.self), .command(SitesRemoveCommand.self),
            .command(SitesDedupCommand.self)
        ])
}

/// `sl-tasks sites add URL`.
enum SitesAddCommand: Command {
    static let title = Option<String?>.string("title", "TEXT", help: "Title of the bookmark.")

    static let spec = CommandSpec(
        "add", abstract: "Add a bookmark; a duplicate returns the existing record with \"duplicate\":true",
        options: [title.spec],
        arguments: [ArgumentSpec("URL", help: "An absolute URL (scheme://host/…).")],
        examples: [
            Example(
                "sl-tasks sites add 'https://Example.com/docs/?utm_source=x' --title Docs",
                "Stored as given; normalizedUrl is https://example.com/docs.")
        ])

    struct Options {
        var global: TasksGlobalOptions
        var url: SiteURL
        var title: String?
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            global: try TasksGlobalOptions(arguments), url: try SiteURL(validating: arguments.positionals[0]), title: try arguments[title])
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.global, context)
        let (record, duplicate) = try bench.store.update { ws in
            let r = ws.insertSite(options.url, title: options.title, createdAt: bench.now)
            return (r, !r.duplicate)
        }
        var out = SiteRecord.output(record)
        out.set("duplicate", .bool(duplicate))  // output only, never stored
        bench.output.emit(out)
        return .ok
    }
}

/// `sl-tasks sites list`.
enum SitesListCommand: Command {
    static let spec = CommandSpec("list", abstract: "List bookmarks in the order they were added", options: ListOptions.specs)

    static func options(_ arguments: ParsedArguments) throws -> (global: TasksGlobalOptions, list: ListOptions) {
        (try TasksGlobalOptions(arguments), try ListOptions(arguments))
    }

    static func run(_ options: (global: TasksGlobalOptions, list: ListOptions), _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.global, context)
        bench.emitList(try bench.store.read().websites.map(SiteRecord.output), options.list, columns: ["id", "title", "url"])
        return .ok
    }
}

/// `sl-tasks sites rm ID|URL`.
enum SitesRemoveCommand: Command {
    static let spec = CommandSpec(
        "rm", abstract: "Remove a bookmark by id prefix or URL",
        arguments: [ArgumentSpec("ID|URL", help: "A bookmark id (or unique prefix), or a URL that normalises to the bookmark's.")])

    struct Options {
        var global: TasksGlobalOptions
        var target: SiteTarget
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(global: try TasksGlobalOptions(arguments), target: try SiteTarget(arguments.positionals[0]))
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.global, context)
        let site = try bench.store.update { ws in (try ws.removeSite(options.target), true) }
        bench.output.emit(SiteRecord.output(site))
        return .ok
    }
}

/// `sl-tasks sites dedup`.
enum SitesDedupCommand: Command {
    static let dryRun = Option<Bool>.flag("dry-run", help: "Show which records would merge; change nothing.")

    static let spec = CommandSpec(
        "dedup", abstract: "Merge bookmarks whose URLs normalise alike (the oldest is kept)",
        discussion: """
            Prints {\"dryRun\",\"groups\":[{\"normalizedUrl\",\"kept\",\"removed\":[…]}],\"removed\":N}. The kept record \
            takes a title from a removed one when it has none, and every normalizedUrl is brought up to date.
            """,
        options: [dryRun.spec])

    struct Options {
        var global: TasksGlobalOptions
        var dryRun: Bool
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(global: try TasksGlobalOptions(arguments), dryRun: try arguments[dryRun])
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.global, context)
        let plan: SiteDeduplication
        if options.dryRun {
            var ws = try bench.store.read()
            plan = ws.deduplicateSites()
        } else {
            plan = try bench.store.update { ws in
                let plan = ws.deduplicateSites()
                return (plan, plan.changed)
            }
        }
        bench.output.emit(plan.json(dryRun: options.dryRun))
        return .ok
    }
}
