#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineWorkspace

/// `sl-tasks export`: the workspace as JSON, Taskwarrior JSON or Netscape bookmark HTML (`WorkspaceExport`).
enum ExportCommand: Command {
    static let format = Option<InterchangeFormat>.format(help: "What to write.", default: .json)
    static let output = Option<String?>.string(
        "output", short: "o", "FILE",
        help: "Write to FILE (a regular file atomically, mode 0600; a device or FIFO in place) and print a summary instead.",
        completion: .file(extensions: ["json", "html"]))

    static let spec = CommandSpec(
        "export", abstract: "Write the workspace as JSON, Taskwarrior JSON or Netscape bookmark HTML",
        discussion: """
            json is the whole workspace document; taskwarrior is a JSON array of tasks that task import accepts (JSON \
            Lines with --jsonl), with the wait, scheduled, until, recur, annotations and other Taskwarrior fields an \
            import kept; netscape is the bookmark HTML that browsers import, each site inside the folders its tags name \
            (Work/Projects).
            """,
        options: [format.spec, output.spec],
        examples: [
            Example("sl-tasks export -f taskwarrior | task import", "Copy the tasks into Taskwarrior."),
            Example("sl-tasks export -f netscape -o bookmarks.html", "Bookmarks for a browser.")
        ])

    struct Options {
        var global: TasksGlobalOptions
        var format: InterchangeFormat
        /// nil: standard output (`-o -` too).
        var file: String?
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            global: try TasksGlobalOptions(arguments), format: try arguments[format],
            file: try arguments[output].flatMap { $0 == "-" ? nil : $0 })
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.global, context)
        let ws = try bench.store.read()
        let mode = bench.output.mode
        // A file gets the readable layout whatever the terminal; JSON Lines is a stream for stdout only.
        let layout = WorkspaceExport.Layout(
            pretty: options.file != nil || mode == .pretty,
            jsonLines: mode == .jsonLines && options.file == nil)
        let text = WorkspaceExport.render(ws, as: options.format, layout: layout)
        guard let file = options.file else {
            bench.output.write(text)
            return .ok
        }
        try OutputTarget.write(Array(text.utf8), to: file, mode: 0o600, sync: true, applyUmask: false)
        let n = WorkspaceExport.contents(of: ws, as: options.format)
        bench.output.emit(
            .object([
                ("file", .string(file)), ("format", .string(options.format.rawValue)),
                ("tasks", .int(n.tasks)), ("websites", .int(n.websites)), ("recents", .int(n.recents))
            ]))
        return .ok
    }
}

/// `sl-tasks import FILE|-`: merge a file into the workspace (`WorkspaceImport`, `Workspace.merge`).
enum ImportCommand: Command {
    static let format = Option<InterchangeFormat?>.format(help: "The file's format (default: detected).")

    static let spec = CommandSpec(
        "import", abstract: "Merge a JSON, Taskwarrior or Netscape bookmark file into the workspace",
        discussion: """
            The format is detected from the content unless --format is given. Tasks are upserted by id (Taskwarrior: by \
            uuid; deleted tasks are removed, recurrence templates skipped; wait, scheduled, until, recur and annotations \
            are kept as fields of the task, project, priority and other Taskwarrior fields under \"taskwarrior\", all for \
            the way back). Sites go through the same path as sites add, so normalised duplicates are not added twice; \
            entries that are not absolute URLs (javascript:, place:) are skipped. A bookmark inside folders gets the \
            folder path as a tag (Work/Projects; a / in a name is written \\/); a duplicate in another folder gets that \
            tag too (counted updated). An id that is not a UUID is stored as its name-based UUID, so a re-import updates. \
            Nothing is written unless the whole file is valid: invalid UTF-8 anywhere, a document of a newer version \
            (UNSUPPORTED_VERSION), a Taskwarrior tag that is not one word, a date outside the years 0001-9999, or \
            bookmark folders nested more than 100 lists deep exit 12. Records that come back as they are count as \
            unchanged; when nothing changes, nothing is written. Prints \
            {\"format\",\"tasks\":{\"added\",\"updated\",\"unchanged\",\"removed\",\"skipped\"},\"websites\":{\"added\",\"duplicates\",\"skipped\",\"updated\"},\"recents\":{\"added\",\"updated\",\"unchanged\"},\"skipped\":[{\"uuid\"|\"url\",\"skipped\":REASON}]}: \
            every skipped record with why.
            """,
        options: [format.spec],
        arguments: [
            ArgumentSpec(
                "FILE|-", help: "The file to import; - reads standard input.", completion: .file(extensions: ["json", "html", "htm"]))
        ],
        examples: [
            Example("task export | sl-tasks import -", "Take over Taskwarrior's tasks (again later: updated by uuid)."),
            Example("sl-tasks import ~/bookmarks.html", "Import a browser's bookmarks, folders as tags, skipping duplicates.")
        ])

    struct Options {
        var global: TasksGlobalOptions
        /// A path, or `-` for standard input.
        var source: String
        var format: InterchangeFormat?
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(global: try TasksGlobalOptions(arguments), source: arguments.positionals[0], format: try arguments[format])
    }

    /// The largest file `import` reads (a workspace is parsed whole): 256 MiB, far above any bookmark export.
    static let maxImportBytes = 256 << 20

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let bench = try Workbench(options.global, context)
        let source = options.source
        let bytes: [UInt8]
        if source == "-" {
            bytes = try context.readStandardInput(maxBytes: Self.maxImportBytes)
        } else {
            guard access(source, F_OK) == 0 || errno != ENOENT else {
                throw StarlineError(.notFound, "\(source): no such file", details: .object([("path", .string(source))]))
            }
            // Opened once and read from that descriptor, bounded: `/dev/zero` or a runaway pipe stops at the limit.
            bytes = try InputFile.read(source, what: "the import", maxBytes: Self.maxImportBytes)
        }
        guard let format = options.format ?? InterchangeFormat.detect(bytes) else {
            throw StarlineError(
                .data, "cannot tell the format of \(source); give --format json|taskwarrior|netscape",
                details: .object([("path", .string(source))]))
        }
        // Parsed in full before the lock is taken: a bad file changes nothing.
        let file = try WorkspaceImport(bytes, format: format, source: source)
        let counts = try bench.store.update { ws in
            let n = try ws.merge(file, now: bench.now)
            return (n, n.changed)
        }
        bench.output.emit(counts.json(format))
        return .ok
    }
}
