import StarlineCore
import StarlinePlatform
import PlatformCommands

/// How the session of a login was obtained, as the result record says (`"mode"`).
enum LoginMode: String, Sendable {
    case token, device, browser
    /// `sl-login complete`: a callback pasted or scanned from a two-step login.
    case paste
}

/// The one-step sign-in flows of `sl-login` and `sl-login switch`.
enum SignInFlow: Sendable {
    case token, device, browser

    var mode: LoginMode {
        switch self {
        case .token: .token
        case .device: .device
        case .browser: .browser
        }
    }
}

/// The sign-in options of `sl-login` and `sl-login switch`, declared once (`sl-login start` takes its `--pending-ttl`).
struct SignInOptions: OptionGroup {
    static let browser = Option<Bool>.flag(
        "browser", help: "Sign in in a browser with a loopback redirect (the default on a terminal with a browser).")
    static let noBrowser = Option<Bool>.flag(
        "no-browser", help: "Like --browser, but print the URL instead of opening a browser (for ssh -L).")
    static let device = Option<Bool>.flag("device", help: "Sign in with a device code shown here, approved on another device.")
    static let withToken = Option<Bool>.flag("with-token", help: "Read an access token from stdin, verify it with /api/me and store it.")
    static let redirectPort = Option<Int?>.integer(
        "redirect-port", "PORT", help: "Port of the loopback redirect (default: a free one); forward it with ssh -L for a remote browser.",
        range: 0...65535)
    static let pendingTTL = Option<Duration>.duration(
        "pending-ttl", help: "How long a pending login stays valid.", default: 600, range: 30...86400)

    static let specs: [OptionSpec] =
        [
            browser.spec, noBrowser.spec, device.spec, withToken.spec, redirectPort.spec, pendingTTL.spec,
            StandardOptions.showSecrets.spec
        ] + CustodyOptions.specs

    /// The flow the flags ask for; nil when none does (the terminal decides, see `SignIn.flow`).
    var requestedFlow: SignInFlow?
    /// `--no-browser`: print the URL instead of opening a browser.
    var opensBrowser: Bool
    var redirectPort: UInt16
    var pendingTTL: Int64
    var showSecrets: Bool
    /// `--keyring`/`--no-keyring`: nil keeps the store's recorded custodian.
    var custodian: KeyCustodian?
    var platform: PlatformOptions

    init(_ arguments: ParsedArguments) throws {
        // One flow at most: `--with-token --device` is a usage error, not a silent pick.
        let flags: [(Option<Bool>, SignInFlow)] = [
            (Self.withToken, .token), (Self.device, .device), (Self.browser, .browser), (Self.noBrowser, .browser)
        ]
        let asked = try flags.filter { try arguments[$0.0] }.map { (flag: "--" + $0.0.long, flow: $0.1) }
        if asked.count > 1 {
            throw StarlineError(
                .usage, "\(asked.map(\.flag).joined(separator: " and ")) cannot be used together: choose one way to sign in",
                details: .object([("options", .array(asked.map { .string($0.flag) }))]))
        }
        requestedFlow = asked.first?.flow
        opensBrowser = !(try arguments[Self.noBrowser])
        redirectPort = UInt16(try arguments[Self.redirectPort] ?? 0)
        pendingTTL = try arguments[Self.pendingTTL].components.seconds
        showSecrets = try arguments[StandardOptions.showSecrets]
        custodian = try CustodyOptions.preferred(arguments)
        platform = try PlatformOptions(arguments)
    }
}

/// `sl-login` without a command: sign in.
enum SignInCommand: AsyncCommand {
    static let spec = CommandSpec(
        "sl-login", abstract: "sign in to the Starline platform and manage the stored session",
        discussion: """
            Without a command, sl-login signs in: on a terminal with a browser, in the browser with a loopback redirect \
            (RFC 8252, PKCE S256); otherwise with a device code (RFC 8628) whose user code and QR code are shown on \
            stderr. It says on stderr which it chose. Without a terminal it refuses (exit 2) unless a mode flag is given, \
            so a cron job never starts an interactive flow by accident. The browser is $BROWSER, else xdg-open.\n\nThe \
            session is stored per API origin, App ID and service in the session store; STARLINE_TOKEN gives a memory-only \
            session instead. While a login is pending, sl-restore answers noResult (S6). Logout clears the local session \
            first, then revokes it on the server; a token that could not be revoked is remembered and revoked by a later \
            sl-restore or sl-login run.
            """,
        options: SignInOptions.specs,
        examples: [
            Example("sl-login", "Sign in interactively (browser, or a device code without one)."),
            Example("sl-login --device", "Sign in with a device code, e.g. over ssh."),
            Example("printf '%s' \"$TOKEN\" | sl-login --with-token", "Store an existing token after verifying it."),
            Example("sl-login status --pretty", "What is stored, without contacting the server.")
        ],
        exitStatuses: [
            (.ok, "signed in; the session is stored"), (.usage, "no mode flag without a terminal, or bad options"),
            (.sessionEnded, "--with-token: the server rejected the token"), (.transient, "the server could not be reached"),
            (.noResult, "denied, cancelled, expired, or superseded by another login"),
            (.storage, "the session could not be stored (the new server session is revoked)"),
            (.data, "a callback whose state is not the pending login's")
        ])

    static func options(_ arguments: ParsedArguments) throws -> SignInOptions { try SignInOptions(arguments) }

    @MainActor
    static func run(_ options: SignInOptions, _ context: CommandContext) async throws -> ExitStatus {
        let client = try PlatformToolSupport.client(options.platform, context, network: true, custodian: options.custodian)
        await client.retryPendingRevocations()
        return try await SignIn.run(client, options, flow: try SignIn.flow(options, context), context)
    }
}

/// `sl-login switch`: log out, then sign in again.
enum SwitchCommand: AsyncCommand {
    static let spec = CommandSpec("switch", abstract: "Log out, then sign in again (same modes as sl-login)", options: SignInOptions.specs)

    static func options(_ arguments: ParsedArguments) throws -> SignInOptions { try SignInOptions(arguments) }

    @MainActor
    static func run(_ options: SignInOptions, _ context: CommandContext) async throws -> ExitStatus {
        let client = try PlatformToolSupport.client(options.platform, context, network: true, custodian: options.custodian)
        // The mode is settled first: a switch that cannot log in (no terminal, no mode flag) must not log out either.
        let flow = try SignIn.flow(options, context)
        let result = await client.logout()
        if let error = result.error { context.output.notice("sl-login: \(error.message)") }
        return try await SignIn.run(client, options, flow: flow, context)
    }
}
