import StarlineCore
import StarlineWorkspace

/// `sl-tasks`: the workbench (W1) — tasks, website bookmarks and recent visits in `workspace.json`.
/// Local only: nothing here touches the network (W1), and its data lives in this one store (W9).
public enum TasksTool {
    static let spec = CommandSpec(
        "sl-tasks", abstract: "the workbench: tasks with deadlines, website bookmarks and recent visits",
        discussion: """
            sl-tasks keeps the Starline workbench in one private file, workspace.json: tasks with due dates, tags and notes; website bookmarks, deduplicated by normalised URL; and a bounded list of recent visits. Every command prints JSON (one document, or JSON Lines with --jsonl); records have stable UUIDs, and an id may be abbreviated to any unique prefix. sl-tasks never touches the network.

            Times are printed in RFC 3339 UTC (2026-11-30T08:00:00Z). Dates are read in the local time zone (TZ): \(DateInput.forms). Date-only forms mean local midnight at the start of that day; +Nd and +Nw move by calendar days, keeping the wall-clock time across a daylight-saving change, while +Nh, +Nm and +Ns are exact. --now fixes the clock. Dates lie within the years 0001-9999: an option beyond them exits 2.

            The file is read as a snapshot and rewritten atomically (temporary file, fsync, rename, fsync of the directory) under an exclusive lock on workspace.json.lock, so concurrent runs lose nothing and kill -9 at any instant leaves the old or the new file. The previous version is kept as workspace.json.bak; a command that changes nothing writes nothing, so the backup stays the last good copy. A symlinked workspace.json stays a link: its target is rewritten, with the lock and backup beside it. A file that does not parse is never overwritten: the command fails with exit 12 (CORRUPT_FILE) naming the backup. A file of a newer format version is read, but every change is refused with exit 12 (UNSUPPORTED_VERSION). Fields and keys this version does not know survive every rewrite.
            """,
        examples: [
            Example("sl-tasks add Submit the report --due tomorrow --tag work", "Add a task due at midnight at the start of tomorrow."),
            Example("sl-tasks list --today", "What is due today."),
            Example("sl-tasks done 3f2a", "Mark the task whose id starts with 3f2a done."),
            Example("sl-tasks sites add https://example.com --title Example", "Bookmark a site.")
        ])

    public static let tool = Tool<CommandRunner>(
        name: "sl-tasks",
        commands: .group(
            spec,
            [
                .command(AddCommand.self), .command(ListCommand.self), .command(ShowCommand.self), .command(EditCommand.self),
                .command(DoneCommand.self), .command(UndoCommand.self), .command(RemoveCommand.self),
                SitesCommands.tree, RecentCommands.tree,
                .command(ExportCommand.self), .command(ImportCommand.self), .command(CheckCommand.self)
            ]),
        globalOptions: StandardOptions.output + TasksGlobalOptions.specs,
        environment: StandardOptions.environment + [
            .init("STARLINE_WORKSPACE", "The workspace file to use, as --workspace."),
            .init("TZ", "The time zone in which dates are read and days begin (see tzset(3)); the system zone when unset.")
        ],
        files: [
            .init(
                "$XDG_DATA_HOME/starline/workspace.json",
                "Tasks, websites and recent visits (mode 0600, in a 0700 directory); format in docs/formats.md."),
            .init("$XDG_DATA_HOME/starline/workspace.json.bak", "The previous version, replaced on every successful write."),
            .init("$XDG_DATA_HOME/starline/workspace.json.lock", "Lock file serialising writers (never deleted).")
        ],
        seeAlso: ["task(1)", "jq(1)", "sl-memory(1)"])

    public static func main() -> Never {
        // Local dates follow TZ; read it once before any local-time computation.
        LocalCalendar.configure()
        ToolMain.main(tool)
    }
}
