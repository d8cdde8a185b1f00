import StarlineCore
import StarlinePlatform
import PlatformCommands

/// `sl-login`: sign in and manage the stored session.
public enum LoginTool {
    public static let tool = Tool<AsyncCommandRunner>(
        name: "sl-login",
        commands: .command(
            SignInCommand.self,
            subcommands: [
                .command(StartCommand.self), .command(CompleteCommand.self), .command(StatusCommand.self),
                .command(CenterCommand.self), .command(TokenCommand.self), .command(LogoutCommand.self),
                .command(SwitchCommand.self), .command(ClearCommand.self), .command(CancelCommand.self)
            ]),
        globalOptions: PlatformToolSupport.globalOptions,
        environment: PlatformToolSupport.environment + [
            .init(
                "BROWSER",
                """
                The browser to open for --browser, else xdg-open: colon-separated commands tried in order; %s in one is \
                replaced by the URL, else the URL is appended.
                """)
        ],
        files: PlatformToolSupport.files,
        seeAlso: ["sl-restore(1)", "sl-qr(1)", "sl-devserver(1)"])

    @MainActor public static func main() async -> Never { await ToolMain.main(tool) }
}
