import StarlineCore
import StarlinePlatform
import StarlineChat
import PlatformCommands

/// `sl-chat send CONV TEXT|-`: a message through the durable outbox.
enum SendCommand: AsyncCommand {
    static let spec = CommandSpec(
        "send", abstract: "Send a message (through the durable outbox: never lost, never sent twice)",
        discussion: """
            The message is stored in the outbox with its clientId before the first attempt, then sent; it prints the \
            outbox entry ({\"type\":\"outbox\",\"clientId\",\"state\",\"attempts\",\"message\",…}) once it is settled. \
            Network errors, 5xx and 429 are retried with backoff (a Retry-After pauses every send of the run); a refusal \
            (4xx) leaves it failed with the server's code. A send whose answer was lost is unknown until its echo is \
            looked up by clientId — it is never sent blind. Messages of one conversation leave in the order they were \
            queued: those queued before it go first, and while one of them is not sent it is held (it stays pending; the \
            record's \"heldBy\" names the entry holding it; exit 7) — behind a failed one until that is retried or \
            dropped (sl-chat outbox retry, drop). What is not sent yet stays queued for sl-chat outbox flush.
            """,
        options: OutboxSubmission.specs + [StandardOptions.quiet],
        arguments: [
            ArgumentSpec("CONV", help: "The conversation id."),
            ArgumentSpec("TEXT|-", help: "The text, or - to read it from stdin.", optional: true)
        ],
        examples: [
            Example("sl-chat send c_team 'deploy finished'", "Send one message and wait until it is sent."),
            Example(
                "sl-tasks list --due-within 1d --jsonl | jq -r .title | sl-chat send c_team --lines",
                "One message per task due today (none due: nothing sent, exit 0)."),
            Example(
                "sl-tasks list --due-within 1d --jsonl | jq -r '\"- \" + .title' | sl-chat send c_team --allow-empty -",
                "Today's tasks as one message; nothing when none is due."),
            Example(
                "sl-chat send c_team --queue --client-id report-$(date +%F) \"$(cat report.txt)\"",
                "Queue today's report once, whatever reruns.")
        ],
        exitStatuses: [
            (.ok, "sent (or queued with --queue); nothing to send: --lines without a line, or an empty stdin with --allow-empty"),
            (.usage, "bad input (an empty stdin without --allow-empty, a malformed --client-id)"),
            (.data, "--client-id already names another message (CLIENT_ID_CONFLICT): nothing sent; give a new one"),
            (.transient, "not sent yet (or held behind an earlier entry): it stays in the outbox"),
            (.partial, "--lines: some were not sent (failed, still queued, or held)"),
            (.sessionEnded, "the server ended the session"), (.sessionChanged, "the account changed during the send"),
            (.notFound, "no such conversation (the entry is failed)")
        ])

    struct Options { var conversation: String; var text: String?; var submission: OutboxSubmission; var chat: ChatOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            conversation: arguments.positionals[0], text: arguments.positionals.count > 1 ? arguments.positionals[1] : nil,
            submission: try OutboxSubmission(arguments), chat: try ChatOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        guard !options.conversation.isEmpty else { throw StarlineError(.usage, "the conversation id is empty") }
        let texts = try options.submission.texts(argument: options.text, context)
        if texts.isEmpty { return OutboxSubmission.nothingToSend(context) }
        let session = try await ChatSession.open(options.chat, context, network: !options.submission.queue)
        return try options.submission.submit(.message, conversation: options.conversation, texts: texts, session: session, context)
    }
}
