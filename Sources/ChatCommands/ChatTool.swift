import StarlineCore
import StarlinePlatform
import PlatformCommands

/// `sl-chat`: conversations, history, sends through a durable outbox, sync and tail, friends and friend
/// links, moments — with the session of app `workbench` stored by sl-login.
public enum ChatTool {
    static let rootSpec = CommandSpec(
        "sl-chat", abstract: "Starline chat from the shell: a durable outbox, sync and tail, friend links, moments",
        discussion: """
            sl-chat uses the session sl-login stored for app workbench (or STARLINE_TOKEN) against the chat service \
            (--chat, STARLINE_CHAT_BASE_URL: https, or http on a loopback host). Its cache, outbox and consumer cursors \
            are in $XDG_STATE_HOME/starline/chat.db, per account. Lists and streams are JSON Lines; record types are \
            documented in docs/formats.md (\"Chat records\").
            """)
    static let commands: [CommandTree<AsyncCommandRunner>] = [
        .command(ConversationsCommand.self), .command(HistoryCommand.self), .command(UnreadCommand.self), .command(ReadCommand.self),
        .command(SendCommand.self),
        .group(
            CommandSpec("outbox", abstract: "The durable outbox: list, flush, retry, drop"),
            [
                .command(OutboxListCommand.self), .command(OutboxFlushCommand.self), .command(OutboxRetryCommand.self),
                .command(OutboxDropCommand.self)
            ]),
        .command(SyncCommand.self), .command(TailCommand.self), .command(FriendsCommand.self),
        .group(
            CommandSpec("friend-link", abstract: "Create and redeem friend links"),
            [.command(FriendLinkCreateCommand.self), .command(FriendLinkRedeemCommand.self)]),
        .group(CommandSpec("moments", abstract: "The moments feed"), [.command(MomentsListCommand.self), .command(MomentsPostCommand.self)])
    ]

    public static let tool = Tool<AsyncCommandRunner>(
        name: "sl-chat",
        commands: .group(rootSpec, commands),
        globalOptions: ChatOptions.globalOptions,
        environment: PlatformToolSupport.environment + [
            .init(
                "STARLINE_CHAT_BASE_URL",
                "The chat service base URL (W4: https, or http on a loopback host; no user info, query or fragment).")
        ],
        files: PlatformToolSupport.files + [
            .init(
                "$XDG_STATE_HOME/starline/chat.db",
                "The chat cache, the durable outbox and the named tail cursors (SQLite, 0600), keyed by chat base URL and user.")
        ],
        seeAlso: ["sl-login(1)", "sl-qr(1)", "sl-tasks(1)", "sl-devserver(1)"])

    @MainActor public static func main() async -> Never { await ToolMain.main(tool) }
}
