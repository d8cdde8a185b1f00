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

    /// When the cache may answer (ChatReader's policy).
    var freshness: ChatReader.Freshness { ChatReader.Freshness(offline: offline, maxAge: maxAge) }
}

/// Everything a chat command runs with: the session of app `workbench` from the session store (or
/// STARLINE_TOKEN), the account it belongs to, the chat API with that token, and the domain types over the chat
/// store — the client and the chat API's transport and clock from the run's `PlatformFactory`.
///
/// W9: the store itself is private to this file. A command reaches persistence through `outbox` (no requests)
/// or through a domain type built here (`reader`, `sync()`, `tail`, `delivery`), where the network and the store
/// meet; so a command that would fetch and store by itself does not compile.
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
    private let store: ChatStore
    /// The account's outbox, persistence alone (queue, list, requeue, drop).
    let outbox: ChatOutbox
    /// The reads, with S14/S15 around their requests (StarlineChat).
    let reader: ChatReader
    /// S14's check, safe on any thread: the stored session is still the one this run started with.
    var sameAccount: @Sendable () -> Bool { reader.accountGuard.sameAccount }

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
        let accountGuard = ChatReader.AccountGuard(
            sameAccount: client.sameAccountCheck(credentials),
            sessionEnded: { [client, credentials] in client.runSessionEnded(credentials, reason: $0) })
        return ChatSession(
            factory: factory, client: client, credentials: credentials, account: account, api: api, store: store,
            outbox: ChatOutbox(store: store, account: account),
            reader: ChatReader(api: api, store: store, account: account, accountGuard: accountGuard))
    }

    /// `sl-chat sync`'s engine over this session.
    func sync() -> ChatSync {
        ChatSync(api: api, store: store, account: account, sameAccount: sameAccount)
    }

    /// `sl-chat tail`'s consumer `name` (nil: none, nothing committed), of one conversation or all.
    func tail(name: String?, conversation: String?) -> EventTail {
        EventTail(api: api, store: store, account: account, name: name, conversation: conversation, sameAccount: sameAccount)
    }

    /// The outbox's delivery over this session, telling what it does through `notice`.
    func delivery(notice: @escaping @Sendable (String) -> Void) -> OutboxDelivery {
        OutboxDelivery(api: api, store: store, account: account, notice: notice, sameAccount: sameAccount)
    }

    /// Runs `body` (requests and what follows them) with S14 and S15 (ChatReader.AccountGuard).
    func guarded<T>(_ body: () throws -> T) throws -> T { try reader.accountGuard.run(body) }

    /// An error that stopped a run, with S15 applied.
    func ended(_ error: StarlineError) -> StarlineError {
        error.exitStatus == .sessionEnded ? client.runSessionEnded(credentials, reason: error) : error
    }
}
