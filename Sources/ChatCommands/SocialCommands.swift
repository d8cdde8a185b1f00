import StarlineCore
import StarlinePlatform
import StarlineChat
import PlatformCommands

/// `sl-chat friends`.
enum FriendsCommand: AsyncCommand {
    static let spec = CommandSpec(
        "friends", abstract: "List friends, one JSON line each",
        discussion: "Each record is the server's friend ({\"id\",\"name\",…,\"conversationId\"}) with \"source\" and \"freshAsOf\".",
        options: [ReadOptions.offline.spec] + ListOptions.specs,
        exitStatuses: [(.ok, "listed"), (.noResult, "--offline and nothing cached")])

    struct Options { var chat: ChatOptions; var offline: Bool; var list: ListOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(chat: try ChatOptions(arguments), offline: try arguments[ReadOptions.offline], list: try ListOptions(arguments))
    }
    /// A table's columns (RecordList).
    static let columns = ["id", "name", "conversationId"]

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let session = try await ChatSession.open(options.chat, context, network: !options.offline)
        let (friends, source) = try session.reader.friends(offline: options.offline, now: context.io.now().seconds)
        RecordList.print(friends.map(source.annotate), context.output, options.list, columns: columns)
        return .ok
    }
}

/// `sl-chat friend-link create`: a code and its URL (pipe the URL into `sl-qr encode`).
enum FriendLinkCreateCommand: AsyncCommand {
    static let ttl = Option<Duration?>.duration(
        "ttl", help: "How long the link works. Default: the server's (7 days).", range: 1...(30 * 86_400))
    static let spec = CommandSpec(
        "create", abstract: "Create a single-use friend link",
        discussion: """
            Prints {\"code\",\"url\",\"expiresAt\"}. The URL is {chat base}/f/{code}: encode it as a QR code with sl-qr \
            encode.
            """,
        options: [ttl.spec],
        examples: [Example("sl-chat friend-link create | jq -j .url | sl-qr encode -o invite.png -", "A friend-link QR code.")],
        exitStatuses: [(.ok, "created")])

    struct Options { var ttl: Int64?; var chat: ChatOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(ttl: try arguments[ttl]?.components.seconds, chat: try ChatOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let session = try await ChatSession.open(options.chat, context)
        let link = try session.guarded { try session.api.createFriendLink(ttlSeconds: options.ttl) }
        // The server's URL must be a friend link of this chat service, or it is not passed on.
        guard let url = link["url"]?.stringValue, let code = link["code"]?.stringValue,
            (try? FriendLink.make(url, chatBase: options.chat.chat))?.code == code
        else {
            throw StarlineError(.data, "the server's friend link is not a link of \(options.chat)/f/CODE; it was not printed")
        }
        context.output.emit(link)
        return .ok
    }
}

/// `sl-chat friend-link redeem URL|CODE|-`.
enum FriendLinkRedeemCommand: AsyncCommand {
    static let spec = CommandSpec(
        "redeem", abstract: "Redeem a friend link (a URL, a bare code, or the JSON line sl-qr decode prints)",
        discussion: """
            Accepts {chat base}/f/CODE (or the default chat service's), a bare CODE, or - to read one from stdin: the \
            URL, the code, or a JSON line of sl-qr decode (kind friendLink). Anything else is refused before any request \
            (INVALID_FRIEND_LINK, exit 2). Prints {\"friend\",\"conversationId\",\"alreadyFriends\"}: a link of \
            someone who is your friend already is a success that changes nothing (\"alreadyFriends\":true; the link \
            stays unused), so a rerun is safe. Your own link is OWN_FRIEND_LINK (exit 2); a link someone else redeemed \
            is FRIEND_LINK_USED and an expired one FRIEND_LINK_EXPIRED (exit 12: ask for a new one); an unknown code is \
            FRIEND_LINK_NOT_FOUND (exit 6).
            """,
        arguments: [ArgumentSpec("URL|CODE|-", help: "The friend link.")],
        examples: [Example("sl-qr decode invite.png | sl-chat friend-link redeem -", "Redeem the link in a QR image.")],
        exitStatuses: [
            (.ok, "redeemed, or a friend already"), (.usage, "not a friend link, or your own (OWN_FRIEND_LINK)"),
            (.data, "someone else redeemed the link (FRIEND_LINK_USED), or it expired (FRIEND_LINK_EXPIRED)"),
            (.notFound, "no link has this code (FRIEND_LINK_NOT_FOUND)")
        ])

    struct Options { var input: String; var chat: ChatOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(input: arguments.positionals[0], chat: try ChatOptions(arguments))
    }

    /// The link's code, from whatever form it came in; INVALID_FRIEND_LINK for anything else.
    static func code(_ input: String, chatBase: BaseURL) throws -> String {
        let trimmed = input.trimmingWhitespace()
        if trimmed.hasPrefix("{") {
            guard let json = try? JSON.parse(trimmed) else {
                throw StarlineError(.invalidFriendLink, "the input is not a JSON object, a friend-link URL or a code")
            }
            if let kind = json["kind"]?.stringValue, kind != "friendLink" {
                throw StarlineError(
                    .invalidFriendLink, "the scanned symbol is a \(kind), not a friend link", details: .object([("kind", .string(kind))]))
            }
            guard let text = json["url"]?.stringValue ?? json["text"]?.stringValue ?? json["code"]?.stringValue else {
                throw StarlineError(.invalidFriendLink, "the JSON line has no url, text or code")
            }
            return try onConfiguredBase(FriendLink.make(text, chatBase: chatBase), chatBase: chatBase)
        }
        return try onConfiguredBase(FriendLink.make(trimmed, chatBase: chatBase), chatBase: chatBase)
    }

    /// The code of a link of the configured chat base. A link of the default service while another is configured
    /// is refused before any request: its code would be redeemed on the configured server, where it means another
    /// link or none (the README: "exactly the configured chat base").
    static func onConfiguredBase(_ link: (code: String, url: String), chatBase: BaseURL) throws -> String {
        guard link.url == FriendLink.url(code: link.code, chatBase: chatBase) else {
            let base = String(link.url.dropLast(link.code.count + 3))
            throw StarlineError(
                .invalidFriendLink,
                "this friend link is of \(base), but the chat service configured is \(chatBase): redeem it with --chat \(base)",
                details: .object([("linkBase", .string(base)), ("chatBase", .string(chatBase.description))]))
        }
        return link.code
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        var input = options.input
        if input == "-" {
            let bytes = try context.readStandardInput(maxBytes: 64 * 1024)
            let lines = String(decoding: bytes, as: UTF8.self).splitAtScalar("\n").map { String($0).trimmingWhitespace() }.filter {
                !$0.isEmpty
            }
            guard lines.count == 1 else {
                throw StarlineError(
                    .invalidFriendLink,
                    lines.isEmpty ? "stdin is empty: no friend link" : "stdin has \(lines.count) lines; redeem one friend link at a time")
            }
            input = lines[0]
        }
        let code = try code(input, chatBase: options.chat.chat)
        let session = try await ChatSession.open(options.chat, context)
        context.output.emit(try session.reader.redeemFriendLink(code: code))
        return .ok
    }
}

/// `sl-chat moments list`.
enum MomentsListCommand: AsyncCommand {
    static let before = Option<String?>.string("before", "ID", help: "Moments older than the moment ID.")
    static let limit = Option<Int>.integer("limit", short: "n", "N", help: "Moments in the page.", default: 50, range: 1...200)
    static let spec = CommandSpec(
        "list", abstract: "The moments feed (yours and your friends'), newest first",
        discussion: """
            One JSON line per moment ({\"id\",\"clientId\",\"authorId\",\"text\",\"createdAt\"}) with \"source\" and \
            \"freshAsOf\".
            """,
        options: [before.spec, limit.spec] + ListOptions.specs,
        exitStatuses: [(.ok, "listed")])

    struct Options { var before: String?; var limit: Int; var chat: ChatOptions; var list: ListOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            before: try arguments[before], limit: try arguments[limit], chat: try ChatOptions(arguments), list: try ListOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let session = try await ChatSession.open(options.chat, context)
        let (moments, source) = try session.reader.moments(before: options.before, limit: options.limit, now: context.io.now().seconds)
        RecordList.print(
            moments.map(source.annotate), context.output, options.list, columns: ["createdAt", "authorId", "text"])
        return .ok
    }
}

/// `sl-chat moments post TEXT|-`: through the same outbox as messages (idempotent by clientId).
enum MomentsPostCommand: AsyncCommand {
    static let spec = CommandSpec(
        "post", abstract: "Post a moment (through the durable outbox)",
        discussion: """
            Like sl-chat send: stored with its clientId before the first attempt, then sent; --queue only stores it. \
            Prints the outbox entry (kind moment).
            """,
        options: OutboxSubmission.specs,
        arguments: [ArgumentSpec("TEXT|-", help: "The text, or - to read it from stdin.", optional: true)],
        examples: [Example("sl-chat moments post 'shipped 1.0'", "Post a moment.")],
        exitStatuses: [
            (.ok, "posted (or queued)"), (.transient, "not sent yet: it stays in the outbox"),
            (.usage, "bad input (a malformed --client-id)"),
            (.data, "--client-id already names another moment (CLIENT_ID_CONFLICT): nothing posted; give a new one")
        ])

    struct Options { var text: String?; var submission: OutboxSubmission; var chat: ChatOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(text: arguments.positionals.first, submission: try OutboxSubmission(arguments), chat: try ChatOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let texts = try options.submission.texts(argument: options.text, context)
        let session = try await ChatSession.open(options.chat, context, network: !options.submission.queue)
        return try options.submission.submit(.moment, conversation: "", texts: texts, session: session, context)
    }
}
