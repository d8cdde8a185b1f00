import StarlineCore
import StarlinePlatform
import PlatformCommands

/// `sl-sessions`: device sessions — list, revoke (one, others, in bulk, as an admin), password, SMS reset.
public enum SessionsTool {
    static let rootSpec = CommandSpec(
        "sl-sessions", abstract: "list and revoke Starline device sessions, change or reset the password",
        discussion: """
            sl-sessions works with the session stored by sl-login (or STARLINE_TOKEN). Every command prints JSON; lists \
            and bulk results are JSON Lines, one record per session or item.
            """)
    static let commands: [CommandTree<AsyncCommandRunner>] = [
        .command(ListCommand.self), .command(RevokeCommand.self), .command(PasswordCommand.self),
        .group(
            CommandSpec("reset", abstract: "Reset a forgotten password with an SMS code"),
            [.command(ResetRequestCommand.self), .command(ResetConfirmCommand.self)]),
        .group(
            CommandSpec("journal", abstract: "Audit the journals of bulk revocations (one per shard)"),
            [.command(JournalVerifyCommand.self), .command(JournalMergeCommand.self)])
    ]

    public static let tool = Tool<AsyncCommandRunner>(
        name: "sl-sessions",
        commands: .group(rootSpec, commands),
        globalOptions: PlatformToolSupport.globalOptions,
        environment: PlatformToolSupport.environment,
        files: PlatformToolSupport.files,
        seeAlso: ["sl-login(1)", "sl-restore(1)", "sl-devserver(1)"])

    @MainActor public static func main() async -> Never { await ToolMain.main(tool) }
}
