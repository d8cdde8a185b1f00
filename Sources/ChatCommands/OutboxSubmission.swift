import StarlineCore
import StarlinePlatform
import StarlineChat
import PlatformCommands

/// What `send` and `moments post` share: texts from the argument, stdin, or stdin line by line; the
/// clientId minted and stored before the first attempt (or the caller's, `--client-id`); then delivered,
/// unless `--queue`.
struct OutboxSubmission: OptionGroup {
    static let lines = Option<Bool>.flag("lines", help: "Read stdin line by line: one message (and one result line) per non-empty line.")
    static let clientId = Option<String?>.string(
        "client-id", "KEY",
        help: """
            Use KEY as the clientId (idempotency key): the same KEY with the same text is the same message, with other \
            text an error (exit 2). With --lines, line N gets KEY.N.
            """)
    static let queue = Option<Bool>.flag(
        "queue", help: "Only store it in the outbox (state pending) and exit 0; sl-chat outbox flush sends it.")
    static let allowEmpty = Option<Bool>.flag(
        "allow-empty",
        help: """
            With TEXT -, an empty stdin is not an error: nothing is sent and it exits 0 with a summary of \"items\":0 \
            (for cron jobs whose input may be empty). --lines needs no flag: no lines is nothing to send.
            """)
    static var specs: [OptionSpec] { [lines.spec, clientId.spec, queue.spec, allowEmpty.spec] + DeliveryOptions.specs }
    static let maxTextBytes = 64 * 1024

    var lines: Bool
    var clientId: String?
    var queue: Bool
    var allowEmpty: Bool
    var delivery: DeliveryOptions

    init(_ arguments: ParsedArguments) throws {
        lines = try arguments[Self.lines]
        clientId = try arguments[Self.clientId]
        queue = try arguments[Self.queue]
        allowEmpty = try arguments[Self.allowEmpty]
        delivery = try DeliveryOptions(arguments)
    }

    /// The texts to send, with their input line numbers (nil for a single text).
    func texts(argument: String?, _ context: CommandContext) throws -> [(line: Int?, text: String)] {
        if lines {
            guard argument == nil || argument == "-" else { throw StarlineError(.usage, "--lines reads stdin; give no TEXT (or -)") }
            let input = try context.readStandardInput(maxBytes: 64 << 20)
            var out: [(Int?, String)] = []
            for (index, raw) in input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
                var bytes = Array(raw)
                if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
                guard !bytes.isEmpty else { continue }
                out.append((index + 1, try Self.text(bytes, line: index + 1)))
            }
            return out
        }
        guard let argument else { throw StarlineError(.usage, "give the TEXT to send, - to read it from stdin, or --lines") }
        if argument == "-" {
            var bytes = try context.readStandardInput(maxBytes: Self.maxTextBytes + 2)
            if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            guard !bytes.isEmpty else {
                if allowEmpty { return [] }
                throw StarlineError(
                    .usage,
                    """
                    stdin is empty: nothing to send (--allow-empty makes that a successful no-op; --lines reads one message per \
                    line)
                    """)
            }
            return [(nil, try Self.text(bytes, line: nil))]
        }
        guard !argument.isEmpty else { throw StarlineError(.usage, "the text is empty: nothing to send") }
        return [(nil, try Self.text(Array(argument.utf8), line: nil))]
    }

    static func text(_ bytes: [UInt8], line: Int?) throws -> String {
        let at = line.map { " (line \($0))" } ?? ""
        guard bytes.count <= maxTextBytes else { throw StarlineError(.usage, "the text\(at) is longer than \(maxTextBytes) bytes") }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw StarlineError(.usage, "the text\(at) is not UTF-8") }
        return text
    }

    /// Empty input where empty is allowed (`--lines` without a line, `-` with `--allow-empty`): nothing is stored
    /// or sent, and no session or network is needed — a quiet day in cron is a success, not exit 2 or 3. The
    /// summary line of a run says so: every count 0, `"nothingToSend":true`.
    static func nothingToSend(_ context: CommandContext) -> ExitStatus {
        var fields: [(String, JSON)] = OutboxState.allCases.filter { $0 != .sending }.map { ($0.rawValue, .int(0)) }
        fields += [("busy", .int(0)), ("held", .int(0)), ("items", .int(0)), ("throttledMs", .int(0)), ("nothingToSend", .bool(true))]
        context.output.emitLine(.object([("summary", .object(fields))]))
        context.output.progress("sl-chat: nothing to send (empty input)")
        return .ok
    }

    /// Stores every text in the outbox (each before any is sent), then delivers them unless `--queue`.
    @MainActor
    func submit(
        _ kind: OutboxKind, conversation: String, texts: [(line: Int?, text: String)], session: ChatSession,
        _ context: CommandContext
    ) throws -> ExitStatus {
        if texts.isEmpty { return Self.nothingToSend(context) }
        let now = context.io.now().seconds
        let submissions = texts.map { line, text in
            ChatOutbox.Submission(
                conversation: conversation, text: text, clientId: clientId.map { key in line.map { "\(key).\($0)" } ?? key })
        }
        let stored = try session.outbox.enqueue(kind, submissions, now: now)
        let entries = zip(texts.map(\.line), stored).map { ($0, $1) }
        let run = OutboxRun(session: session, context: context)
        if queue {
            for (line, entry) in entries {
                var record = entry.json
                if let line { record.set("line", .int(line)) }
                context.output.emitLine(record)
            }
            return .ok
        }
        // W5: the conversation's messages queued before these leave first; all of them in queue order.
        let ours = Set(stored.map(\.clientId))
        let earlier =
            kind == .message
            ? try session.outbox.openMessages(conversation: conversation, before: stored.map(\.seq).max())
                .filter { !ours.contains($0.clientId) }.map { (line: Int?.none, entry: $0, earlier: true) }
            : []
        let jobs = (earlier + entries.map { (line: $0, entry: $1, earlier: false) }).sorted { $0.entry.seq < $1.entry.seq }
            .map { OutboxDelivery.Job($0.entry, line: $0.line, earlier: $0.earlier) }
        let outcome = run.deliver(jobs, delivery, printEarlier: lines)
        if !lines, outcome.earlier > 0 {
            context.output.notice(
                "sl-chat: \(outcome.earlier) \(outcome.earlier == 1 ? "entry" : "entries") queued before it in \(conversation) tried first (sl-chat outbox list shows them)"
            )
        }
        if lines {
            run.summary(outcome)
            return try OutboxRun.status(outcome)
        }
        return try OutboxRun.singleStatus(outcome)
    }
}
