import StarlineCore
import StarlineWorkspace

/// `sl-tasks check`: validate the file and report duplicates and problems (`WorkspaceCheck`).
enum CheckCommand: Command {
    static let spec = CommandSpec(
        "check", abstract: "Validate the workspace file and report duplicates and problems",
        discussion: """
            Prints \
            {\"file\",\"exists\",\"version\",\"tasks\",\"websites\",\"recents\",\"duplicateSites\":[{\"normalizedUrl\",\"ids\"}],\"problems\":[{\"record\",\"id\",\"field\",\"message\"}],\"ok\"} \
            and exits 12 (CHECK_FAILED) when there is any duplicate or problem, or when the file does not parse \
            (CORRUPT_FILE).
            """)

    static func options(_ arguments: ParsedArguments) throws -> TasksGlobalOptions { try TasksGlobalOptions(arguments) }

    static func run(_ options: TasksGlobalOptions, _ context: CommandContext) throws -> ExitStatus {
        let store = try Workbench(options, context).store
        guard let ws = try store.readIfPresent() else {
            context.output.emit(
                .object([
                    ("file", .string(store.path)), ("exists", .bool(false)), ("version", .int(Workspace.currentVersion)),
                    ("tasks", .int(0)), ("websites", .int(0)), ("recents", .int(0)),
                    ("duplicateSites", .array([])), ("problems", .array([])), ("ok", .bool(true))
                ]))
            return .ok
        }
        let report = WorkspaceCheck.run(ws)
        let ok = report.problems.isEmpty && report.duplicateSites.isEmpty
        context.output.emit(
            .object([
                ("file", .string(store.path)), ("exists", .bool(true)), ("version", .int(ws.version)),
                ("tasks", .int(ws.tasks.count)), ("websites", .int(ws.websites.count)), ("recents", .int(ws.recents.count)),
                ("duplicateSites", .array(report.duplicateSites)), ("problems", .array(report.problems)), ("ok", .bool(ok))
            ]))
        guard ok else {
            throw StarlineError(
                .checkFailed,
                "\(store.path): \(report.problems.count) problem(s), \(report.duplicateSites.count) group(s) of duplicate sites",
                details: .object([("problems", .int(report.problems.count)), ("duplicateSites", .int(report.duplicateSites.count))]))
        }
        return .ok
    }
}
