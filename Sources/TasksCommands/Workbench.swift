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

    init(_ options: TasksGlobalOptions, _ context: CommandContext) {
        self.context = context
        store = WorkspaceStore(path: options.workspacePath(context.paths))
        let clock = context.io.now()
        now = options.now?.resolve(now: clock) ?? clock
    }

    func date(_ expression: DateExpression?) -> Timestamp? {
        expression?.resolve(now: now)
    }

    /// The notes text; `-` reads standard input (UTF-8, trailing newlines dropped).
    func notes(_ input: NotesInput?) throws -> String? {
        switch input {
        case nil: return nil
        case .text(let text): return text
        case .standardInput:
            guard var text = String(validating: try context.readStandardInput(), as: UTF8.self) else {
                throw StarlineError(.data, "the notes on standard input are not UTF-8 text")
            }
            while text.hasSuffix("\n") { text.removeLast() }
            return text
        }
    }

    /// Prints a list: one JSON array, or one line per record with --jsonl.
    func emitList(_ records: [JSON]) {
        var w = JSONWriter(capacity: records.count * 320 + 16)
        if output.mode == .jsonLines {
            for r in records {
                w.write(r, pretty: false)
                w.bytes.append(0x0A)
            }
        } else {
            w.write(.array(records), pretty: output.mode == .pretty)
            w.bytes.append(0x0A)
        }
        output.writeBytes(w.bytes)
    }
}
