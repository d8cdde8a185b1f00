#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineDevServer

/// `sl-devserver`: the local Starline platform + chat server.
public enum DevServerTool {
    public static let tool = Tool<CommandRunner>(
        name: "sl-devserver",
        commands: .command(ServeCommand.self),
        globalOptions: [StandardOptions.progress],
        environment: StandardOptions.environment + [.init("STARLINE_DEV_TOKEN", "Default for --dev-token.")],
        files: [],
        seeAlso: ["sl-login(1)", "sl-restore(1)", "sl-chat(1)", "sl-sessions(1)"])

    public static func main() -> Never { ToolMain.main(tool) }
}
