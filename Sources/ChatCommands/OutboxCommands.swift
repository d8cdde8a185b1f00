import StarlineCore
import StarlinePlatform
import StarlineChat
import PlatformCommands

/// `sl-chat outbox list`: the entries, oldest first.
enum OutboxListCommand: AsyncCommand {
    static let state = Option<[String]>.strings(
        "state", "STATE", help: "Only entries in STATE (pending, sending, sent, failed, unknown); repeatable.")
    static let spec = CommandSpec(
        "list", abstract: "List outbox entries, one JSON line each (oldest first)",
        discussion: """
            Local: reads the outbox only. Each record is \
            {\"type\":\"outbox\",\"kind\",\"clientId\",\"conversationId\",\"text\",\"state\",\"attempts\",\"createdAt\",\"updatedAt\",\"message\"|\"moment\",\"error\"}, \
            plus \"heldBy\" on a message that waits for an earlier one of its conversation not sent yet: the clientId of \
            the earliest such entry (messages of one conversation leave in queue order; a failed one holds the rest until \
            it is retried or dropped).
            """,
        options: [state.spec] + ListOptions.specs,
        examples: [Example("sl-chat outbox list --state failed", "What the server refused.")],
        exitStatuses: [(.ok, "listed"), (.usage, "an unknown state")])

    struct Options { var states: [OutboxState]?; var chat: ChatOptions; var list: ListOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        let names = try arguments[state]
        let states = try names.map { name -> OutboxState in
            guard let s = OutboxState(rawValue: name) else {
                throw StarlineError(
                    .usage, "unknown state '\(name)': expected one of \(OutboxState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return s
        }
        return Options(states: states.isEmpty ? nil : states, chat: try ChatOptions(arguments), list: try ListOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let session = try await ChatSession.open(options.chat, context, network: false)
        let holders = try session.outbox.holders()
        let list = RecordList(
            context.output, options.list,
            columns: ["clientId", "conversationId", "state", "attempts", "heldBy", "text"])
        for entry in try session.outbox.entries(states: options.states) {
            var record = entry.json
            if entry.kind == .message, let holder = holders[entry.clientId] { record.set("heldBy", .string(holder)) }
            list.add(record)
        }
        list.finish()
        return .ok
    }
}

/// `sl-chat outbox flush`: sends every entry not sent yet — the cron job.
enum OutboxFlushCommand: AsyncCommand {
    static let spec = CommandSpec(
        "flush", abstract: "Send every queued entry (pending, unknown, or left sending by a process that died)",
        discussion: """
            The messages of one conversation go out one at a time in the order they were queued (conversations side by \
            side), each claimed first so a concurrent flush or send never sends one twice; one result line each, then a \
            {\"summary\":{…,\"held\",…}} line. Unknown entries are settled by looking up their echo before they are sent \
            again with the same clientId. A message is not sent while one queued before it in its conversation is not: it \
            is held (pending, with \"heldBy\": the clientId of that entry) — it waits for an entry another process is \
            sending, and a failed entry holds the rest of its conversation until it is retried (sl-chat outbox retry) or \
            dropped.
            """,
        options: DeliveryOptions.specs + [StandardOptions.quiet],
        examples: [
            Example("*/5 * * * * sl-chat outbox flush >> ~/chat-flush.log 2>&1", "A crontab line that keeps the outbox moving."),
            Example("*/5 * * * * sl-chat outbox flush -q", "The same, mailing only when something could not be sent.")
        ],
        exitStatuses: [
            (.ok, "everything is sent"), (.partial, "some entries failed, are still queued, or are held"),
            (.sessionEnded, "the server ended the session"),
            (.sessionChanged, "the account changed during the run")
        ])

    struct Options { var delivery: DeliveryOptions; var chat: ChatOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(delivery: try DeliveryOptions(arguments), chat: try ChatOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let session = try await ChatSession.open(options.chat, context)
        let open = try session.outbox.entries(states: [.pending, .unknown, .sending])
        let jobs = open.map { OutboxDelivery.Job($0) }
        let run = OutboxRun(session: session, context: context)
        let outcome = run.deliver(jobs, options.delivery)
        run.summary(outcome)
        return try OutboxRun.status(outcome)
    }
}

/// `sl-chat outbox retry ID…`: failed entries back to pending (same clientId).
enum OutboxRetryCommand: AsyncCommand {
    static let spec = CommandSpec(
        "retry", abstract: "Queue failed entries again (with the same clientId)",
        discussion: """
            Moves failed entries back to pending and prints them; sl-chat outbox flush (or this command with --flush) \
            sends them. A failed message holds back the messages queued after it in its conversation: with --flush they \
            are sent after it, in order.
            """,
        options: [flush.spec] + DeliveryOptions.specs,
        arguments: [ArgumentSpec("CLIENT_ID", help: "The entries' client ids.", variadic: true)],
        exitStatuses: [
            (.ok, "queued again (and sent, with --flush)"), (.notFound, "an id is not in the outbox"),
            (.partial, "--flush: some were not sent (or are held)")
        ])
    static let flush = Option<Bool>.flag("flush", help: "Send them now.")

    struct Options { var ids: [String]; var flush: Bool; var delivery: DeliveryOptions; var chat: ChatOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            ids: arguments.positionals, flush: try arguments[flush], delivery: try DeliveryOptions(arguments),
            chat: try ChatOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let session = try await ChatSession.open(options.chat, context, network: options.flush)
        let results = try session.outbox.requeue(options.ids, now: context.io.now().seconds)
        var missing: [String] = []
        var queued: [OutboxEntry] = []
        for r in results {
            guard let entry = r.entry else { missing.append(r.clientId); continue }
            if entry.state == .pending { queued.append(entry) }
            if !options.flush || entry.state != .pending {
                var record = entry.json
                if let reason = r.reason { record.set("note", .string(reason)) }
                context.output.emitLine(record)
            }
        }
        if options.flush {
            // W5: a message goes with the rest of its conversation still queued (what it held), in queue order.
            let conversations = Set(queued.filter { $0.kind == .message }.map(\.conversationId))
            var jobs = queued.filter { $0.kind == .moment }
            for conversation in conversations.sorted() {
                jobs += try session.outbox.openMessages(conversation: conversation)
            }
            let run = OutboxRun(session: session, context: context)
            let outcome = run.deliver(jobs.sorted { $0.seq < $1.seq }.map { OutboxDelivery.Job($0) }, options.delivery)
            run.summary(outcome)
            if missing.isEmpty { return try OutboxRun.status(outcome) }
            _ = try? OutboxRun.status(outcome)
        }
        if !missing.isEmpty { throw StarlineError(.notFound, "not in the outbox: \(missing.joined(separator: ", "))") }
        return .ok
    }
}

/// `sl-chat outbox drop ID…`: removes entries (not one a live process is sending).
enum OutboxDropCommand: AsyncCommand {
    static let spec = CommandSpec(
        "drop", abstract: "Remove entries from the outbox",
        discussion: """
            Prints each removed entry. An entry being sent by a running process is not removed (exit 8); a sent entry can \
            be removed (the message stays on the server). Dropping a message that was not sent releases the messages of \
            its conversation it held back: the next sl-chat outbox flush sends them.
            """,
        arguments: [ArgumentSpec("CLIENT_ID", help: "The entries' client ids.", variadic: true)],
        exitStatuses: [(.ok, "removed"), (.notFound, "an id is not in the outbox"), (.partial, "an entry is being sent now")])

    struct Options { var ids: [String]; var chat: ChatOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(ids: arguments.positionals, chat: try ChatOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let session = try await ChatSession.open(options.chat, context, network: false)
        var missing: [String] = [], busy: [String] = []
        for r in try session.outbox.drop(options.ids) {
            if let entry = r.dropped {
                var record = entry.json
                record.set("dropped", .bool(true))
                context.output.emitLine(record)
            } else if r.reason?.hasPrefix("process") == true {
                busy.append(r.clientId)
                context.output.notice("sl-chat: \(r.clientId): \(r.reason ?? "")")
            } else {
                missing.append(r.clientId)
            }
        }
        if !busy.isEmpty { throw StarlineError(.partial, "being sent now, not removed: \(busy.joined(separator: ", "))") }
        if !missing.isEmpty { throw StarlineError(.notFound, "not in the outbox: \(missing.joined(separator: ", "))") }
        return .ok
    }
}
