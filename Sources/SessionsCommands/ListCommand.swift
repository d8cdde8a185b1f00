import StarlineCore
import StarlinePlatform
import PlatformCommands

/// `sl-sessions list`: the account's device sessions, one JSON line each.
enum ListCommand: AsyncCommand {
    static let notCurrent = Option<Bool>.flag("not-current", help: "Leave out the session this tool runs with.")

    static let spec = CommandSpec(
        "list", abstract: "List device sessions, one JSON line each",
        discussion: "Each record is a session as the server describes it ({\"id\",\"appId\",\"device\",\"createdAt\",\"lastSeenAt\",\"current\"}) with its \"user\".",
        options: [notCurrent.spec],
        examples: [Example("sl-sessions list --jsonl | jq -r 'select(.current|not) | .id'", "The ids of the other sessions.")],
        exitStatuses: [(.ok, "listed"), (.notLoggedIn, "no session stored"), (.sessionEnded, "the server ended this session"),
                       (.transient, "the server could not be reached")])

    struct Options {
        var notCurrent: Bool
        var platform: PlatformOptions
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(notCurrent: try arguments[notCurrent], platform: try PlatformOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let client = try PlatformToolSupport.client(options.platform, context, network: true)
        let sessions = try await client.sessions()
        // The caller's own sessions: the user is the stored one (STARLINE_TOKEN: unknown without /api/me).
        let stored = try client.store?.withState { try $0.usableCandidate() }
        let user = client.session?.user["id"] ?? stored?.user["id"] ?? .null
        for var session in sessions where !(options.notCurrent && session["current"] == .bool(true)) {
            session.set("user", user)
            context.output.emitLine(session)
        }
        return .ok
    }
}
