import StarlineCore
import StarlinePlatform
import StarlineChat
import PlatformCommands

/// The global options of sl-chat: the platform's (API base for the session, service, timeout, events)
/// without `--app-id` — chat always uses the `workbench` session (W4) — and the chat base URL (W4).
struct ChatOptions: Sendable {
    static let chatAppId = "workbench"
    static let globalOptions: [OptionSpec] =
        StandardOptions.output + PlatformOptions.specs(baseURLs: [StandardOptions.api, StandardOptions.chat], withAppId: false)
    var platform: PlatformOptions
    var chat: BaseURL

    init(_ arguments: ParsedArguments) throws {
        platform = try PlatformOptions(arguments, appId: Self.chatAppId)
        chat = try arguments[StandardOptions.chatBase]
    }
}

/// `--offline` and `--max-age`, for the commands that read.
struct ReadOptions: Sendable {
    static let offline = Option<Bool>.flag("offline", help: "Answer from the cache only; never touch the network.")
    static let maxAge = Option<Duration>.duration(
        "max-age", help: "Serve from the cache when it was refreshed within DURATION (0: always ask the server unless --offline).",
        default: 60, range: 0...(366 * 86_400))
    /// With -o/--fields (RecordList): every read command prints a list.
    static var specs: [OptionSpec] { [offline.spec, maxAge.spec] + ListOptions.specs }

    var offline: Bool
    var maxAge: Int64
    var list: ListOptions

    init(_ arguments: ParsedArguments) throws {
        offline = try arguments[Self.offline]
        maxAge = try arguments[Self.maxAge].components.seconds
        list = try ListOptions(arguments)
    }

    /// True when data fetched at `at` may be served from the cache now.
    func isFresh(_ at: Int64?, now: Int64) -> Bool {
        if offline { return true }
        guard let at, maxAge > 0 else { return false }
        return now - at <= maxAge && now >= at
    }
}

/// Everything a chat command runs with: the session of app `workbench` from the session store (or
/// STARLINE_TOKEN), the account it belongs to, the chat API with that token, and the chat store — the
/// client and the chat API's transport and clock from the run's `PlatformFactory`.
///
/// S14/W8: `sameAccount` is checked after every request, before anything is stored or printed; S15: an
/// answer that ends the session (401, an ending 403) clears it only if it is still the stored one (`ended`).
@MainActor
struct ChatSession {
    let factory: PlatformFactory
    let client: StarlightClient
    let credentials: StarlightClient.RunCredentials
    let account: ChatAccount
    let api: ChatAPI
    let store: ChatStore
    let sameAccount: @Sendable () -> Bool

    static func open(_ options: ChatOptions, _ context: CommandContext, network: Bool = true, parallel: Int = 2) async throws -> ChatSession
    {
        let factory = PlatformFactory(options.platform, context)
        let client = try factory.client(network: network)
        var credentials = try client.runCredentials()
        if credentials.user["id"]?.stringValue == nil {
            // STARLINE_TOKEN: the token says nothing of its user until the platform verified it.
            guard network else {
                throw StarlineError(
                    .usage, "--offline needs the session stored by sl-login: STARLINE_TOKEN names no user until it is verified")
            }
            let outcome = await client.restoreSession()
            guard outcome.state == .valid, let session = outcome.session else {
                throw outcome.error
                    ?? StarlineError(.notLoggedIn, "STARLINE_TOKEN could not be verified (\(outcome.reason ?? outcome.state.rawValue))")
            }
            credentials = StarlightClient.RunCredentials(
                token: session.accessToken, sessionId: session.sessionId, user: session.user, roles: session.roles)
        }
        guard let userId = credentials.user["id"]?.stringValue, !userId.isEmpty else {
            throw StarlineError(.data, "the stored session names no user id; sign in again with sl-login")
        }
        let account = ChatAccount(chatBase: options.chat, userId: userId)
        let store = try ChatStore(paths: context.paths, faults: try StorageFaults(environment: context.environment))
        let api = ChatAPI(
            base: options.chat, token: credentials.token, transport: factory.transport(maxConnections: parallel),
            timeout: Double(options.platform.timeout), clock: factory.clock)
        return ChatSession(
            factory: factory, client: client, credentials: credentials, account: account, api: api, store: store,
            sameAccount: client.sameAccountCheck(credentials))
    }

    /// Runs `body` (requests and what follows them) with S14 and S15: SESSION_CHANGED when the stored account
    /// changed meanwhile; a session-ending answer clears the stored session only if it is still this one.
    func guarded<T>(_ body: () throws -> T) throws -> T {
        do {
            let result = try body()
            try checkSameAccount()
            return result
        } catch let error as StarlineError where error.exitStatus == .sessionEnded {
            try checkSameAccount()
            throw client.runSessionEnded(credentials, reason: error)
        }
    }

    func checkSameAccount() throws {
        guard sameAccount() else {
            throw StarlineError(.sessionChanged, "the stored account changed while the request was in flight; its result was discarded")
        }
    }

    /// An error that stopped a run, with S15 applied.
    func ended(_ error: StarlineError) -> StarlineError {
        error.exitStatus == .sessionEnded ? client.runSessionEnded(credentials, reason: error) : error
    }
}
