import StarlineCore
import StarlineWorkspace

/// The command-line interface of `sl-tasks`: one spec renders the parser, `--help`, the man page and
/// the completions.
extension TasksTool {
    static let workspaceOption = OptionSpec.value(
        "workspace", "FILE", help: "Use FILE instead of <data>/workspace.json.", env: "STARLINE_WORKSPACE",
        completion: .file(extensions: ["json"]))
    static let nowOption = OptionSpec.value(
        "now", "WHEN", help: "Take WHEN as the current time (a fixed clock for scripts and tests), e.g. 2026-11-30T08:00:00Z.")

    static let idArgument = ArgumentSpec("ID", help: "A task id or a unique prefix of one.")

    public static let spec = ToolSpec(
        name: "sl-tasks",
        root: CommandSpec(
            "sl-tasks", abstract: "the workbench: tasks with deadlines, website bookmarks and recent visits",
            discussion: """
            sl-tasks keeps the Starline workbench in one private file, workspace.json: tasks with due dates, tags and notes; website bookmarks, deduplicated by normalised URL; and a bounded list of recent visits. Every command prints JSON (one document, or JSON Lines with --jsonl); records have stable UUIDs, and an id may be abbreviated to any unique prefix. sl-tasks never touches the network.

            Times are printed in RFC 3339 UTC (2026-11-30T08:00:00Z). Dates are read in the local time zone (TZ): \(DateInput.forms). Date-only forms mean local midnight at the start of that day; +Nd and +Nw move by calendar days, keeping the wall-clock time across a daylight-saving change, while +Nh, +Nm and +Ns are exact. --now fixes the clock.

            The file is read as a snapshot and rewritten atomically (temporary file, fsync, rename, fsync of the directory) under an exclusive lock on workspace.json.lock, so concurrent runs lose nothing and kill -9 at any instant leaves the old or the new file. The previous version is kept as workspace.json.bak. A file that does not parse is never overwritten: the command fails with exit 12 (CORRUPT_FILE) naming the backup. A file of a newer format version is read, but every change is refused with exit 12 (UNSUPPORTED_VERSION). Fields and keys this version does not know survive every rewrite.
            """,
            subcommands: [
                CommandSpec(
                    "add", abstract: "Add a task and print it with its id",
                    discussion: "The words of TITLE are joined with spaces.",
                    options: [
                        .value("due", short: "d", "WHEN", help: "Due date, e.g. tomorrow, friday 17:00, +3d, 2026-12-24T18:00."),
                        .value("tag", short: "t", "TAG", help: "Tag the task (repeatable; a,b adds both).", repeatable: true),
                        .value("notes", short: "n", "TEXT", help: "Notes; - reads them from standard input."),
                    ],
                    arguments: [ArgumentSpec("TITLE", help: "What is to be done.", variadic: true)],
                    examples: [
                        Example("sl-tasks add Pay the rent --due 'friday 12:00' --tag home", "A task due on Friday at noon, local time."),
                    ]),
                CommandSpec(
                    "list", abstract: "List tasks, filtered by deadline, state and tags",
                    discussion: """
                    Filters combine with AND and use the local time zone: --overdue keeps due < now; --today keeps start of today ≤ due < start of tomorrow; --due-within D keeps now ≤ due ≤ now + D; --due-before T keeps due < T; --due-after T keeps due > T; --no-due keeps tasks without a due date. A task without a due date matches no deadline filter, so it is never overdue. Done tasks are left out unless --done (only done tasks) or --all. Tasks are listed by due date, earliest first, then those without one, in the order they were added. Without --jsonl the result is one JSON array.
                    """,
                    options: [
                        .flag("overdue", help: "Only tasks whose due date has passed (due < now)."),
                        .flag("today", help: "Only tasks due today (local time)."),
                        .value("due-before", "WHEN", help: "Only tasks due before WHEN (due < WHEN)."),
                        .value("due-after", "WHEN", help: "Only tasks due after WHEN (due > WHEN)."),
                        .value("due-within", "DURATION", help: "Only tasks due from now to now + DURATION, both included (1d, 36h, 2w, 1d12h)."),
                        .flag("no-due", help: "Only tasks without a due date."),
                        .flag("done", help: "Only done tasks."),
                        .flag("all", help: "Open and done tasks."),
                        .value("tag", short: "t", "TAG", help: "Only tasks with TAG (repeatable: all of them).", repeatable: true),
                    ],
                    examples: [
                        Example("sl-tasks list --overdue --jsonl | jq -r .title", "Titles of overdue tasks."),
                        Example("sl-tasks list --due-within 1d --jsonl | jq -r .title | mail -s 'due tomorrow' me", "A cron job mailing what is due within a day."),
                    ]),
                CommandSpec("show", abstract: "Print one task", arguments: [idArgument]),
                CommandSpec(
                    "edit", abstract: "Change a task's title, due date, notes or tags",
                    options: [
                        .value("title", "TEXT", help: "New title."),
                        .value("due", short: "d", "WHEN", help: "New due date."),
                        .flag("no-due", help: "Remove the due date."),
                        .value("notes", short: "n", "TEXT", help: "Replace the notes; - reads them from standard input."),
                        .value("tag", short: "t", "TAG", help: "Add a tag (repeatable).", repeatable: true),
                        .value("untag", "TAG", help: "Remove a tag (repeatable).", repeatable: true),
                    ],
                    arguments: [idArgument],
                    examples: [Example("sl-tasks edit 3f2a --due +2d --tag urgent", "Postpone a task by two days and tag it.")]),
                CommandSpec("done", abstract: "Mark a task done (doneAt is set once)", arguments: [idArgument]),
                CommandSpec("undo", abstract: "Mark a done task as not done", arguments: [idArgument]),
                CommandSpec("rm", abstract: "Remove a task and print what was removed", arguments: [idArgument]),
                CommandSpec(
                    "sites", abstract: "Website bookmarks, deduplicated by normalised URL",
                    discussion: "URLs are compared in a normalised form: scheme and host lowercased (the scheme itself is kept), the default port, the fragment and a trailing slash dropped, dot segments resolved, tracking parameters (utm_*, fbclid, gclid, msclkid and similar) removed from the query, whose order is kept. The URL is stored as given, beside normalizedUrl.",
                    subcommands: [
                        CommandSpec(
                            "add", abstract: "Add a bookmark; a duplicate returns the existing record with \"duplicate\":true",
                            options: [.value("title", "TEXT", help: "Title of the bookmark.")],
                            arguments: [ArgumentSpec("URL", help: "An absolute URL (scheme://host/…).")],
                            examples: [Example("sl-tasks sites add 'https://Example.com/docs/?utm_source=x' --title Docs", "Stored as given; normalizedUrl is https://example.com/docs.")]),
                        CommandSpec("list", abstract: "List bookmarks in the order they were added"),
                        CommandSpec("rm", abstract: "Remove a bookmark by id prefix or URL",
                                    arguments: [ArgumentSpec("ID|URL", help: "A bookmark id (or unique prefix), or a URL that normalises to the bookmark's.")]),
                        CommandSpec("dedup", abstract: "Merge bookmarks whose URLs normalise alike (the oldest is kept)",
                                    discussion: "Prints {\"dryRun\",\"groups\":[{\"normalizedUrl\",\"kept\",\"removed\":[…]}],\"removed\":N}. The kept record takes a title from a removed one when it has none, and every normalizedUrl is brought up to date.",
                                    options: [.flag("dry-run", help: "Show which records would merge; change nothing.")]),
                    ]),
                CommandSpec(
                    "recent", abstract: "Recently visited pages, most recent first",
                    subcommands: [
                        CommandSpec(
                            "add", abstract: "Record a visit; a revisit moves the page to the top and counts it",
                            options: [
                                .value("title", "TEXT", help: "Title of the page."),
                                .value("keep", "N", help: "Keep at most N recent pages; the oldest are dropped.", default: String(RecentRecord.defaultLimit)),
                            ],
                            arguments: [ArgumentSpec("URL", help: "An absolute URL.")]),
                        CommandSpec("list", abstract: "List recent visits",
                                    options: [.value("since", "WHEN", help: "Only visits at or after WHEN.")]),
                        CommandSpec("clear", abstract: "Forget every recent visit"),
                    ]),
                CommandSpec(
                    "export", abstract: "Write the workspace as JSON, Taskwarrior JSON or Netscape bookmark HTML",
                    discussion: "json is the whole workspace document; taskwarrior is a JSON array of tasks that task import accepts (JSON Lines with --jsonl); netscape is the bookmark HTML that browsers import.",
                    options: [
                        .value("format", short: "f", "FORMAT", help: "What to write.", default: "json", choices: InterchangeFormat.names),
                        .value("output", short: "o", "FILE", help: "Write to FILE (atomically, mode 0600) and print a summary instead.", completion: .file(extensions: ["json", "html"])),
                    ],
                    examples: [
                        Example("sl-tasks export -f taskwarrior | task import", "Copy the tasks into Taskwarrior."),
                        Example("sl-tasks export -f netscape -o bookmarks.html", "Bookmarks for a browser."),
                    ]),
                CommandSpec(
                    "import", abstract: "Merge a JSON, Taskwarrior or Netscape bookmark file into the workspace",
                    discussion: "The format is detected from the content unless --format is given. Tasks are upserted by id (Taskwarrior: by uuid; deleted tasks are removed, recurrence templates skipped; project, priority and other Taskwarrior fields are kept for the way back). Sites go through the same path as sites add, so normalised duplicates are not added twice; entries that are not absolute URLs (javascript:, place:) are skipped. Nothing is written unless the whole file is valid. Prints {\"format\",\"tasks\":{\"added\",\"updated\",\"removed\",\"skipped\"},\"websites\":{\"added\",\"duplicates\",\"skipped\"},\"recents\":{\"added\",\"updated\"}}.",
                    options: [.value("format", short: "f", "FORMAT", help: "The file's format (default: detected).", choices: InterchangeFormat.names)],
                    arguments: [ArgumentSpec("FILE|-", help: "The file to import; - reads standard input.", completion: .file(extensions: ["json", "html", "htm"]))],
                    examples: [
                        Example("task export | sl-tasks import -", "Take over Taskwarrior's tasks (again later: updated by uuid)."),
                        Example("sl-tasks import ~/bookmarks.html", "Import a browser's bookmarks, skipping duplicates."),
                    ]),
                CommandSpec(
                    "check", abstract: "Validate the workspace file and report duplicates and problems",
                    discussion: "Prints {\"file\",\"exists\",\"version\",\"tasks\",\"websites\",\"recents\",\"duplicateSites\":[{\"normalizedUrl\",\"ids\"}],\"problems\":[{\"record\",\"id\",\"field\",\"message\"}],\"ok\"} and exits 12 (CHECK_FAILED) when there is any duplicate or problem, or when the file does not parse (CORRUPT_FILE)."),
            ],
            examples: [
                Example("sl-tasks add Submit the report --due tomorrow --tag work", "Add a task due at midnight at the start of tomorrow."),
                Example("sl-tasks list --today", "What is due today."),
                Example("sl-tasks done 3f2a", "Mark the task whose id starts with 3f2a done."),
                Example("sl-tasks sites add https://example.com --title Example", "Bookmark a site."),
            ]),
        globalOptions: StandardOptions.output + [workspaceOption, nowOption],
        environment: StandardOptions.environment + [
            .init("STARLINE_WORKSPACE", "The workspace file to use, as --workspace."),
            .init("TZ", "The time zone in which dates are read and days begin (see tzset(3)); the system zone when unset."),
        ],
        files: [
            .init("$XDG_DATA_HOME/starline/workspace.json", "Tasks, websites and recent visits (mode 0600, in a 0700 directory); format in docs/formats.md."),
            .init("$XDG_DATA_HOME/starline/workspace.json.bak", "The previous version, replaced on every successful write."),
            .init("$XDG_DATA_HOME/starline/workspace.json.lock", "Lock file serialising writers (never deleted)."),
        ],
        seeAlso: ["task(1)", "jq(1)", "sl-memory(1)"])
}
