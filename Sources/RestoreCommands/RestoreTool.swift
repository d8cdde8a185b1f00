import StarlineCore
import StarlinePlatform
import PlatformCommands

/// `sl-restore`: restore and verify the stored session exactly as the SDK's `restoreSession()` does.
public enum RestoreTool {
    public static let tool = Tool<AsyncCommandRunner>(
        name: "sl-restore",
        commands: .command(RestoreCommand.self),
        globalOptions: PlatformToolSupport.globalOptions,
        environment: PlatformToolSupport.environment,
        files: PlatformToolSupport.files,
        seeAlso: ["sl-login(1)", "sl-devserver(1)"])

    @MainActor public static func main() async -> Never { await ToolMain.main(tool) }
}
