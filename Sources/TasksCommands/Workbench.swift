import StarlineCore
import StarlineWorkspace

/// What a command of `sl-tasks` runs with: the store of the chosen file, the current time and the output.
///
/// The one place where dates become instants: `now` is `--now` resolved against the streams' clock (or that
/// clock), and every other date option is resolved against `now` (`date`), so one run sees one time.
struct Workbench {
    let store: WorkspaceStore
    let now: Timestamp
    let context: CommandContext
    var output: Output { context.output }

    init(_ options: TasksGlobalOptions, _ context: CommandContext) throws {
        self.context = context
        store = WorkspaceStore(path: try options.workspacePath(context.paths))
        let clock = context.io.now()
        if let expression = options.now {
            now = try Workbench.resolve(expression, option: "now", now: clock)
        } else {
            now = clock
        }
    }

    /// The instant of a date option; USAGE (exit 2) naming the option when it lies outside years 0001–9999
    /// (`--due +3000000d`): refused, never stored wrapped.
    func date(_ expression: DateExpression?, option: String) throws -> Timestamp? {
        guard let expression else { return nil }
        return try Workbench.resolve(expression, option: option, now: now)
    }

    static func resolve(_ expression: DateExpression, option: String, now: Timestamp) throws -> Timestamp {
        if expression.dueShift != nil {
            throw StarlineError(
                .usage, "due+… moves a task's own due date: only sl-tasks edit --due takes it (here, +2d counts from now)",
                details: .object([("option", .string(option))]))
        }
        guard let t = expression.resolve(now: now) else { throw outOfRange(option) }
        return t
    }

    static func outOfRange(_ option: String) -> StarlineError {
        StarlineError(
            .usage, "the date given to --\(option) is out of range: dates must lie within the years 0001–9999",
            details: .object([("option", .string(option))]))
    }

    /// The notes text; `-` reads standard input (UTF-8, trailing newlines dropped).
    func notes(_ input: NotesInput?) throws -> String? {
        switch input {
        case nil: return nil
        case .text(let text): return text
        case .standardInput:
            guard var text = String(validating: try context.readStandardInput(maxBytes: 16 << 20), as: UTF8.self) else {
                throw StarlineError(.data, "the notes on standard input are not UTF-8 text")
            }
            while text.hasSuffix("\n") { text.removeLast() }
            return text
        }
    }

    /// Prints a list as `list` asks (RecordList): piped, one line per record (or one JSON array with -o json),
    /// written here in one piece (`bench/tasks` measures it against Taskwarrior and jq); on a terminal a table
    /// of `columns`.
    func emitList(_ records: [JSON], _ list: ListOptions, columns: [String]) {
        emit(list, columns: columns, count: records.count, records: { records }) { lines, out in
            if lines {
                for r in records {
                    r.write(to: &out, style: .compact, indent: 0)
                    out.append(0x0A)
                }
            } else {
                JSON.array(records).write(to: &out, style: .compact, indent: 0)
                out.append(0x0A)
            }
        }
    }

    /// `emitList` of a task listing: its compact JSON straight from the stored bytes (`TaskListing.writeCompact`).
    func emitTasks(_ listing: TaskListing, _ list: ListOptions, columns: [String]) throws {
        try emit(list, columns: columns, count: listing.count, records: { try listing.records() }) { lines, out in
            try listing.writeCompact(lines: lines, into: &out)
        }
    }

    /// The decision of both: a table, CSV, `--fields` or pretty JSON from `records()`; compact JSON (JSON Lines,
    /// or one array with -o json) as `compact` writes it, ending in a newline (`lines`: a record a line).
    private func emit(
        _ list: ListOptions, columns: [String], count: Int, records: () throws -> [JSON],
        compact: (_ lines: Bool, _ out: inout [UInt8]) throws -> Void
    ) rethrows {
        let format = RecordList.format(output, list)
        guard format == .json || format == .jsonl, list.fields == nil else {
            RecordList.print(try records(), output, list, columns: columns, now: now)
            return
        }
        if format == .json, output.mode == .pretty {
            output.writeBytes(JSONWriter.document(.array(try records()), pretty: true))
            return
        }
        var out: [UInt8] = []
        out.reserveCapacity(count * 320 + 16)
        try compact(format == .jsonl, &out)
        output.writeBytes(out)
    }
}
