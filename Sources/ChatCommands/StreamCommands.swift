#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlinePlatform
import StarlineChat
import PlatformCommands

/// `sl-chat sync`: pulls every event into the cache.
enum SyncCommand: AsyncCommand {
    static let spec = CommandSpec(
        "sync", abstract: "Pull every new event into the local cache",
        discussion: """
            Pages through GET /v1/sync from the cache's cursor; each page and the cursor after it commit in one \
            transaction (messages upserted by server id, the echoes of our sends merged into the outbox by clientId). \
            Prints {\"events\",\"messages\",\"pages\",\"cursor\",\"gaps\"}; a gap (the server dropped events after the \
            cursor) is reported and the cache's history is marked incomplete.
            """,
        examples: [Example("sl-chat sync && sl-chat unread --offline", "Refresh, then read the cache.")],
        exitStatuses: [
            (.ok, "synced"), (.sessionEnded, "the server ended the session"), (.transient, "the chat service could not be reached"),
            (.data, "the server's cursors go round in a cycle, expire again and again, or page on past 100000 pages (DATA_ERROR)")
        ])

    struct Options { var chat: ChatOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options { Options(chat: try ChatOptions(arguments)) }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let session = try await ChatSession.open(options.chat, context)
        let sync = session.sync()
        let report = try session.guarded { try sync.run() }
        for gap in report.gaps { context.output.notice("sl-chat sync: \(gap.serialized())") }
        context.output.emit(
            .object([
                ("events", .int(report.events)), ("messages", .int(report.messages)), ("pages", .int(report.pages)),
                ("cursor", .optional(report.cursor)), ("gaps", .array(report.gaps))
            ]))
        return .ok
    }
}

/// `sl-chat tail [CONV]`: the event stream as JSON Lines.
enum TailCommand: AsyncCommand {
    static let follow = Option<Bool>.flag(
        "follow", short: "f", help: "Keep waiting for new events (long poll); reconnect with backoff when the server goes away.")
    static let cursor = Option<String?>.string(
        "cursor", "NAME",
        help: """
            A named consumer cursor kept in the chat store: it advances only after the events were written and flushed, \
            so a rerun goes on where the last one stopped.
            """)
    static let from = Option<EventTail.Start>.choice(
        "from", "WHERE", help: "Where a new cursor (or a run without one) starts: start (every event the server keeps) or now.",
        default: .start)

    static let spec = CommandSpec(
        "tail", abstract: "Print events (messages, friends, moments, gaps) as JSON Lines, optionally following",
        discussion: """
            Each line is an event as the server sends it, with eventSeq first \
            ({\"eventSeq\",\"seq\",\"type\",\"cursor\",<type>:{…}}): eventSeq (and seq, its older name, kept for \
            compatibility) numbers the account's event stream; the message's own number, which history --after and \
            --before take, is .message.seq. With --cursor NAME the position is kept on disk and advances only after the \
            lines were written and flushed: a consumer killed at any instant sees every event at least once, and with the \
            cursor never twice. One process per cursor (CURSOR_IN_USE, exit 10). When the server no longer has the events \
            after the cursor, a {\"type\":\"gap\"} line comes first, then the missed messages from history \
            (\"backfill\":true).
            """,
        options: [follow.spec, cursor.spec, from.spec],
        arguments: [ArgumentSpec("CONV", help: "Only this conversation's messages.", optional: true)],
        examples: [
            Example("sl-chat tail c_team --follow --cursor log >> team.jsonl", "Follow a conversation into a log that survives restarts."),
            Example(
                "sl-chat tail --cursor bot | jq -r 'select(.type==\"message\") | .message.text'", "Every message since the bot last ran."),
            Example(
                "sl-chat tail c_team | jq -c 'select(.type==\"message\") | {eventSeq, after: .message.seq}'",
                "Each event's number, and the message's: the one sl-chat history --after takes.")
        ],
        exitStatuses: [
            (.ok, "drained (without --follow)"), (.storage, "the cursor is in use by another process"),
            (.sessionEnded, "the server ended the session"), (.transient, "the chat service could not be reached (without --follow)"),
            (
                .data,
                """
                the server's cursors go round in a cycle (any length), or a history page to fill a gap does not move on \
                (DATA_ERROR)
                """
            )
        ])

    struct Options { var conversation: String?; var follow: Bool; var cursor: String?; var from: EventTail.Start; var chat: ChatOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        let options = Options(
            conversation: arguments.positionals.first, follow: try arguments[follow], cursor: try arguments[cursor],
            from: try arguments[from], chat: try ChatOptions(arguments))
        if let name = options.cursor, !EventTail.isValidName(name) {
            throw StarlineError(.usage, "--cursor must be 1 to 64 characters from A-Z a-z 0-9 . _ -")
        }
        return options
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let session = try await ChatSession.open(options.chat, context)
        let tail = session.tail(name: options.cursor, conversation: options.conversation)
        let output = context.output
        // TEST-ONLY (debug builds, `TestHooks`): die by SIGKILL right after the first page was printed and
        // flushed, before its cursor is committed — the instant a consumer killed "between print and commit" dies at.
        let dieAfterPrint = TestHooks.value(.tailKillAfterPrint, in: context.environment) == "1"
        try session.guarded {
            try tail.run(
                follow: options.follow, from: options.from,
                deliver: { events in
                    for event in events { output.emitLine(ChatEvents.tailRecord(event)) }
                    // Written and flushed before the cursor moves: a failed write stops the run uncommitted.
                    try output.check()
                    if dieAfterPrint { _ = kill(getpid(), SIGKILL) }
                }, notice: { output.notice($0) })
        }
        return .ok
    }
}
