import StarlineCore
import StarlinePlatform
import StarlineChat
import PlatformCommands

/// The conversation list, from the server or the cache (`source`, `freshAsOf` on every record).
@MainActor
enum ConversationList {
    /// What `conversations` and `unread` take: the chat options and the read options.
    struct Options { var chat: ChatOptions; var read: ReadOptions }
    nonisolated static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(chat: try ChatOptions(arguments), read: try ReadOptions(arguments))
    }

    /// The list for `options`, opening the session (without the network for --offline).
    static func load(_ options: Options, _ context: CommandContext) async throws -> (conversations: [JSON], source: ReadSource) {
        let session = try await ChatSession.open(options.chat, context, network: !options.read.offline)
        return try load(session, options.read, now: context.io.now().seconds)
    }

    static func load(_ session: ChatSession, _ read: ReadOptions, now: Int64) throws -> (conversations: [JSON], source: ReadSource) {
        try session.reader.conversations(read.freshness, now: now)
    }
}

/// `sl-chat conversations`: one JSON line per conversation.
enum ConversationsCommand: AsyncCommand {
    static let spec = CommandSpec(
        "conversations", abstract: "List conversations, one JSON line each",
        discussion: """
            Each record is the server's conversation ({\"id\",\"kind\",\"title\",\"members\",\"lastMessage\",\"unread\"}) \
            with \"source\" (server or cache) and \"freshAsOf\". Served from the cache when it was refreshed within \
            --max-age, or with --offline.
            """,
        options: ReadOptions.specs,
        examples: [
            Example("sl-chat conversations | jq -r 'select(.unread > 0) | .title'", "Titles of the conversations with unread messages.")
        ],
        exitStatuses: [
            (.ok, "listed"), (.noResult, "--offline and nothing cached yet"), (.notLoggedIn, "no session stored"),
            (.sessionEnded, "the server ended the session"), (.transient, "the chat service could not be reached")
        ])

    typealias Options = ConversationList.Options
    static func options(_ arguments: ParsedArguments) throws -> Options { try ConversationList.options(arguments) }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let (conversations, source) = try await ConversationList.load(options, context)
        RecordList.print(
            conversations.map(source.annotate), context.output, options.read.list,
            columns: ["id", "title", "kind", "unread", "lastMessage.text"])
        return .ok
    }
}

/// `sl-chat unread`: counts and previews; reads nothing as read.
enum UnreadCommand: AsyncCommand {
    static let spec = CommandSpec(
        "unread", abstract: "Unread counts and previews, one JSON line per conversation with unread messages",
        discussion: """
            Prints {\"conversationId\",\"title\",\"unread\",\"lastMessage\",\"source\",\"freshAsOf\"} for each \
            conversation with unread messages. Never marks anything read (sl-chat read does).
            """,
        options: ReadOptions.specs,
        examples: [Example("sl-chat unread | jq -s 'map(.unread) | add'", "The total number of unread messages.")],
        exitStatuses: [(.ok, "listed (also when nothing is unread)"), (.noResult, "--offline and nothing cached yet")])

    typealias Options = ConversationList.Options
    static func options(_ arguments: ParsedArguments) throws -> Options { try ConversationList.options(arguments) }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let (conversations, source) = try await ConversationList.load(options, context)
        let list = RecordList(
            context.output, options.read.list, columns: ["conversationId", "title", "unread", "lastMessage.text"])
        for c in conversations {
            guard let unread = c["unread"]?.intValue, unread > 0 else { continue }
            list.add(
                source.annotate(
                    .object([
                        ("conversationId", c["id"] ?? .null), ("title", c["title"] ?? .null), ("unread", .int(unread)),
                        ("lastMessage", c["lastMessage"] ?? .null)
                    ])))
        }
        list.finish()
        return .ok
    }
}

/// `sl-chat history CONV`: a page of messages, oldest first.
enum HistoryCommand: AsyncCommand {
    static let limit = Option<Int>.integer("limit", short: "n", "N", help: "Messages in the page.", default: 50, range: 1...200)
    static let before = Option<Int?>.integer(
        "before", "SEQ", help: "The newest messages older than SEQ (page backwards).", range: 0...Int.max)
    static let after = Option<Int?>.integer("after", "SEQ", help: "The oldest messages newer than SEQ (page forwards).", range: 0...Int.max)

    static let spec = CommandSpec(
        "history", abstract: "A page of a conversation's messages, oldest first, one JSON line each",
        discussion: """
            Without --before/--after: the newest --limit messages. Page backwards with --before (the seq of the oldest \
            message shown), forwards with --after (the seq of the newest). Each record is the server's message \
            ({\"id\",\"clientId\",\"conversationId\",\"senderId\",\"text\",\"createdAt\",\"seq\"}) with \"source\" and \
            \"freshAsOf\"; the cache answers when it holds the whole page and was synced within --max-age, or with \
            --offline.
            """,
        options: [limit.spec, before.spec, after.spec] + ReadOptions.specs,
        arguments: [ArgumentSpec("CONV", help: "The conversation id.")],
        examples: [
            Example("sl-chat history c_team --limit 20", "The last 20 messages."),
            Example("sl-chat history c_team --before 120", "The page before message 120.")
        ],
        exitStatuses: [(.ok, "printed"), (.notFound, "no such conversation"), (.noResult, "--offline and the page is not cached")])

    struct Options { var conversation: String; var page: HistoryPage; var chat: ChatOptions; var read: ReadOptions }
    /// A table's columns (RecordList).
    static let columns = ["seq", "createdAt", "senderId", "text"]
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            conversation: arguments.positionals[0],
            page: HistoryPage(
                before: try arguments[before].map(Int64.init), after: try arguments[after].map(Int64.init), limit: try arguments[limit]),
            chat: try ChatOptions(arguments), read: try ReadOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let session = try await ChatSession.open(options.chat, context, network: !options.read.offline)
        let (messages, source) = try session.reader.history(
            options.conversation, page: options.page, options.read.freshness, now: context.io.now().seconds)
        RecordList.print(
            messages.map { source.annotate($0.json) }, context.output, options.read.list, columns: HistoryCommand.columns)
        return .ok
    }
}

/// `sl-chat read CONV --up-to ID`: moves the read mark (never back).
enum ReadCommand: AsyncCommand {
    static let upTo = Option<String?>.string("up-to", "ID", help: "The id of the last message read.")
    static let spec = CommandSpec(
        "read", abstract: "Mark a conversation read up to a message",
        discussion: """
            Moves the read mark of CONV forward to the message ID (a mark never moves back) and prints \
            {\"conversationId\",\"lastReadSeq\",\"unread\"}.
            """,
        options: [upTo.spec], arguments: [ArgumentSpec("CONV", help: "The conversation id.")],
        examples: [
            Example(
                "sl-chat read c_team --up-to \"$(sl-chat history c_team -n 1 | jq -r .id)\"",
                "Mark everything read up to the newest message.")
        ],
        exitStatuses: [(.ok, "marked"), (.notFound, "no such conversation"), (.usage, "no --up-to, or a message that is not in CONV")])

    struct Options { var conversation: String; var upTo: String; var chat: ChatOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        guard let id = try arguments[upTo], !id.isEmpty else {
            throw StarlineError(.usage, "read needs --up-to ID (the last message read)")
        }
        return Options(conversation: arguments.positionals[0], upTo: id, chat: try ChatOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let session = try await ChatSession.open(options.chat, context)
        let answer = try session.guarded { try session.api.markRead(conversation: options.conversation, upTo: options.upTo) }
        context.output.emit(answer)
        return .ok
    }
}
