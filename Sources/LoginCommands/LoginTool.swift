#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlinePlatform
import PlatformCommands
import StarlineQR

/// `sl-login`: sign in and manage the stored session.
public enum LoginTool {
    static let modeOptions: [OptionSpec] = [
        .flag("browser", help: "Sign in in a browser with a loopback redirect (the default on a terminal with a browser)."),
        .flag("no-browser", help: "Like --browser, but print the URL instead of opening a browser (for ssh -L)."),
        .flag("device", help: "Sign in with a device code shown here, approved on another device."),
        .flag("with-token", help: "Read an access token from stdin, verify it with /api/me and store it."),
        .value("redirect-port", "PORT", help: "Port of the loopback redirect (default: a free one); forward it with ssh -L for a remote browser."),
        .value("pending-ttl", "SECONDS", help: "How long a pending login stays valid.", default: "600"),
        StandardOptions.showSecrets,
    ]

    public static let spec = ToolSpec(
        name: "sl-login",
        root: CommandSpec(
            "sl-login", abstract: "sign in to the Starline platform and manage the stored session",
            discussion: "Without a command, sl-login signs in: on a terminal with a browser, in the browser with a loopback redirect (RFC 8252, PKCE S256); otherwise with a device code (RFC 8628) whose user code and QR code are shown on stderr. It says on stderr which it chose. Without a terminal it refuses (exit 2) unless a mode flag is given, so a cron job never starts an interactive flow by accident. The browser is $BROWSER, else xdg-open.\n\nThe session is stored per API origin, App ID and service in the session store; STARLINE_TOKEN gives a memory-only session instead. While a login is pending, sl-restore answers noResult (S6). Logout clears the local session first, then revokes it on the server; a token that could not be revoked is remembered and revoked by a later sl-restore or sl-login run.",
            options: modeOptions,
            subcommands: [
                CommandSpec("start", abstract: "Start a two-step login and print its URL",
                            discussion: "Prints {\"url\",\"expiresAt\"}: open the URL anywhere, sign in, and pass the callback it redirects to (starline-APPID://auth/callback?…) to sl-login complete — as text, or as the JSON line of sl-qr decode --show-secrets. The pending login persists for --pending-ttl seconds, across processes and restarts.",
                            options: [.value("pending-ttl", "SECONDS", help: "How long the pending login stays valid.", default: "600")]),
                CommandSpec("complete", abstract: "Finish a two-step login with its callback",
                            arguments: [ArgumentSpec("CALLBACK|-", help: "The callback URL, or - to read it (or an sl-qr decode JSON line) from stdin.")],
                            examples: [Example("sl-qr decode --show-secrets callback.png | sl-login complete -", "Finish a login from a photographed callback QR code.")]),
                CommandSpec("status", abstract: "Show the stored session, pending login and pending revocations (no network)"),
                CommandSpec("center", abstract: "Fetch the account center (profile, security, sessions) fresh from the server"),
                CommandSpec("token", abstract: "Print the stored access token and a newline (the one non-JSON output)"),
                CommandSpec("logout", abstract: "Clear the local session, then revoke it on the server"),
                CommandSpec("switch", abstract: "Log out, then sign in again (same modes as sl-login)", options: modeOptions),
                CommandSpec("clear", abstract: "Delete the stored session without a server call (retries a failed clean-up)"),
                CommandSpec("cancel", abstract: "Cancel a pending login; an established session is kept"),
            ],
            examples: [
                Example("sl-login", "Sign in interactively (browser, or a device code without one)."),
                Example("sl-login --device", "Sign in with a device code, e.g. over ssh."),
                Example("printf '%s' \"$TOKEN\" | sl-login --with-token", "Store an existing token after verifying it."),
                Example("sl-login status --pretty", "What is stored, without contacting the server."),
            ],
            runsWithoutSubcommand: true,
            exitStatuses: [(.ok, "signed in; the session is stored"), (.usage, "no mode flag without a terminal, or bad options"),
                           (.sessionEnded, "--with-token: the server rejected the token"), (.transient, "the server could not be reached"),
                           (.noResult, "denied, cancelled, expired, or superseded by another login"),
                           (.storage, "the session could not be stored (the new server session is revoked)"),
                           (.data, "a callback whose state is not the pending login's")]),
        globalOptions: PlatformToolSupport.globalOptions,
        environment: PlatformToolSupport.environment + [.init("BROWSER", "The browser to open for --browser, else xdg-open: colon-separated commands tried in order; %s in one is replaced by the URL, else the URL is appended.")],
        files: PlatformToolSupport.files,
        seeAlso: ["sl-restore(1)", "sl-qr(1)", "sl-devserver(1)"])

    public static func main() async -> Never {
        await ToolMain.runAsync(spec) { invocation in try await run(invocation) }
    }

    @MainActor
    static func run(_ invocation: Invocation) async throws -> ExitStatus {
        let args = invocation.arguments
        let client = try PlatformToolSupport.client(invocation)
        let output = invocation.output
        // Commands that talk to the server: load libcurl while the store is read (see CurlLibrary.preload).
        if [nil, "center", "complete", "logout", "switch"].contains(args.path.first) { HTTPTransport.preloadLibrary() }
        switch args.path.first {
        case "status": return try status(client, invocation)
        case "token":
            if let token = client.session?.accessToken ?? client.memoryToken { output.write(token + "\n"); return .ok }
            guard let store = client.store, let candidate = try store.withState({ try $0.usableCandidate() }) else {
                throw StarlineError(.notLoggedIn, "not logged in")
            }
            guard candidate.expiresAt > Timestamp.now().seconds else { throw StarlineError(.sessionExpired, "the stored session expired; log in again") }
            output.write(candidate.accessToken + "\n")
            return .ok
        case "center":
            await client.retryPendingRevocations()
            let platform = client.platform
            let center = try await client.authenticated { token in try await platform.center(token: token) }
            output.emit(center)
            return .ok
        case "start":
            let ttl = Int64(try args.int("pending-ttl", in: 30...86400) ?? 600)
            let (url, pending) = try client.startLogin(ttl: ttl)
            output.emit(.object([("url", .string(url)), ("expiresAt", .string(Timestamp.rfc3339String(pending.expiresAt)))]))
            output.notice("Open the URL, sign in, then run: sl-login complete CALLBACK (or pipe sl-qr decode --show-secrets into sl-login complete -)")
            return .ok
        case "complete":
            let input = args.positionals[0] == "-" ? String(decoding: try FileBytes.read(fd: STDIN_FILENO, name: "standard input"), as: UTF8.self) : args.positionals[0]
            await client.retryPendingRevocations()
            let session = try await client.completeLogin(try StarlightClient.Callback.parse(input))
            output.emit(loggedIn(session, mode: "paste", showSecrets: args.flag("show-secrets")))
            return .ok
        case "logout":
            let result = await client.logout()
            output.emit(.object([("loggedOut", .bool(true)), ("hadSession", .bool(result.hadSession)), ("revoked", .bool(result.revoked)),
                                 ("pendingRevocations", .int(result.pendingRevocations))]))
            if let error = result.error { throw error }
            return .ok
        case "clear":
            try client.clearSession()
            output.emit(.object([("cleared", .bool(true))]))
            return .ok
        case "cancel":
            let had = try client.cancelLogin()
            output.emit(.object([("cancelled", .bool(had))]))
            return .ok
        case "switch":
            // The mode is settled first: a switch that cannot log in (no terminal, no mode flag) must not
            // log out either.
            let mode = try loginMode(invocation)
            let result = await client.logout()
            if let error = result.error { output.notice("sl-login: \(error.message)") }
            return try await login(client, invocation, mode: mode)
        default:
            await client.retryPendingRevocations()
            return try await login(client, invocation)
        }
    }

    static func loggedIn(_ session: PlatformSession, mode: String, showSecrets: Bool) -> JSON {
        .object([("state", .string("loggedIn")), ("mode", .string(mode)), ("session", session.json(showToken: showSecrets))])
    }

    /// The login mode the flags ask for; without one, on a terminal, the browser when one can be opened, else
    /// the device code (said on stderr); without a terminal, USAGE — a cron job never starts an interactive flow.
    static func loginMode(_ invocation: Invocation) throws -> String {
        let args = invocation.arguments
        if args.flag("with-token") { return "token" }
        if args.flag("device") { return "device" }
        if args.flag("browser") || args.flag("no-browser") { return "browser" }
        guard isatty(STDIN_FILENO) == 1 && isatty(STDERR_FILENO) == 1 else {
            throw StarlineError(.usage, "not on a terminal: choose a login mode explicitly (--with-token, --device, --browser, --no-browser, or sl-login start/complete)")
        }
        let mode = canOpenBrowser(invocation.environment) ? "browser" : "device"
        invocation.output.notice("sl-login: signing in with \(mode == "browser" ? "a browser and a loopback redirect" : "a device code (no browser available)")")
        return mode
    }

    @MainActor
    static func login(_ client: StarlightClient, _ invocation: Invocation, mode preset: String? = nil) async throws -> ExitStatus {
        let args = invocation.arguments
        let output = invocation.output
        let ttl = Int64(try args.int("pending-ttl", in: 30...86400) ?? 600)
        let mode = try preset ?? loginMode(invocation)
        let session: PlatformSession
        switch mode {
        case "token":
            let token = String(decoding: try FileBytes.read(fd: STDIN_FILENO, name: "standard input"), as: UTF8.self).trimmingWhitespace()
            guard !token.isEmpty else { throw StarlineError(.usage, "--with-token reads the token from stdin, which was empty") }
            session = try await client.login(.token(token), pendingTTL: ttl)
        case "device":
            session = try await client.login(.device(present: { authorization in
                output.notice("To sign in, open \(authorization.verificationURI) and enter the code \(authorization.userCode)")
                let complete = authorization.verificationURIComplete ?? authorization.verificationURI
                if let matrix = try? QREncoder.encode(Array(complete.utf8), level: .L) {
                    output.notice("or scan:\n" + QRRenderer.utf8(matrix, margin: 2))
                }
            }), pendingTTL: ttl)
        default:
            let port = UInt16(try args.int("redirect-port", in: 0...65535) ?? 0)
            let listener = try LoopbackListener(port: port)
            let openBrowser = !args.flag("no-browser")
            let environment = invocation.environment
            session = try await client.login(.loopback(listener, open: { url in
                if openBrowser, launchBrowser(url, environment) {
                    output.notice("sl-login: opened the browser; waiting for the sign-in (Ctrl-C to stop)")
                } else {
                    output.notice("Open this URL in a browser on this machine (or forward port \(listener.port) with ssh -L):\n\(url)")
                }
            }), pendingTTL: ttl)
        }
        output.emit(loggedIn(session, mode: mode, showSecrets: args.flag("show-secrets")))
        return .ok
    }

    static func canOpenBrowser(_ environment: Environment) -> Bool {
        // A $BROWSER with at least one command (not blank, not only colons); otherwise xdg-open on a display.
        if let browser = environment["BROWSER"], !browser.trimmingWhitespace().isEmpty {
            return !browserCommands("", browser: browser).isEmpty
        }
        let display = (environment["DISPLAY"] ?? "") + (environment["WAYLAND_DISPLAY"] ?? "")
        return !display.isEmpty && access("/usr/bin/xdg-open", X_OK) == 0
    }

    /// Opens `url` with `$BROWSER`, else `xdg-open`, without a shell. `$BROWSER` follows the convention other
    /// tools (Python's webbrowser, git, man) share: a colon-separated list of commands, tried in order until one
    /// starts; a command may carry (quoted) arguments, and `%s` in them is replaced by the URL (otherwise the URL is the
    /// last argument, as one word). The browser's stdout goes to our stderr, so it cannot corrupt the JSON result.
    static func launchBrowser(_ url: String, _ environment: Environment) -> Bool {
        let commands = browserCommands(url, browser: environment["BROWSER"])
        for command in commands where launch(command) { return true }
        return false
    }

    /// The commands `launchBrowser` tries, each as its argument vector.
    static func browserCommands(_ url: String, browser: String?) -> [[String]] {
        guard let browser, !browser.trimmingWhitespace().isEmpty else { return [["xdg-open", url]] }
        return browser.split(separator: ":").compactMap { entry -> [String]? in
            let words = shellWords(String(entry))
            guard !words.isEmpty else { return nil }
            let substituted = words.map { $0.replacingAll("%s", with: url) }
            return words.contains(where: { $0.contains("%s") }) ? substituted : words + [url]
        }
    }

    /// Splits a command into words at spaces and tabs, honouring '…' and "…" quoting and backslash escapes
    /// (outside single quotes; inside double quotes a backslash escapes any character) — a simplified
    /// `shlex.split`, which Python's webbrowser uses for $BROWSER; no expansions.
    static func shellWords(_ command: String) -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for c in command {
            if escaped { word.append(c); escaped = false; continue }
            if let q = quote {
                if c == q { quote = nil } else if c == "\\" && q == "\"" { escaped = true } else { word.append(c) }
                continue
            }
            switch c {
            case " ", "\t":
                if inWord { words.append(word); word = ""; inWord = false }
            case "'", "\"": quote = c; inWord = true
            case "\\": escaped = true; inWord = true
            default: word.append(c); inWord = true
            }
        }
        if inWord { words.append(word) }
        return words
    }

    private static func launch(_ argv: [String]) -> Bool {
        var pid = pid_t()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO)
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        return posix_spawnp(&pid, argv[0], &actions, nil, &cArgs, environ) == 0
    }

    @MainActor
    static func status(_ client: StarlightClient, _ invocation: Invocation) throws -> ExitStatus {
        let api = try invocation.apiBase()
        var fields: [(String, JSON)] = [("api", .string(api.description)), ("appId", .string(client.configuration.appId))]
        guard let store = client.store else {
            fields += [("storage", .object([("backend", .string("memory")), ("source", .string("STARLINE_TOKEN"))])), ("session", .null)]
            invocation.output.emit(.object(fields))
            return .ok
        }
        let snapshot = try store.withState { state in
            (try state.candidate(), try state.pendingLogin(), try state.pendingRevocations(), try state.revocationMarker())
        }
        fields.append(("service", .string(store.key.service)))
        fields.append(("storage", .object([("backend", .string("sqlite")), ("path", .string(store.databasePath)),
                                           ("deviceKey", .string(store.deviceKeyPath)), ("machineId", .string(store.machineIdSource))])))
        let candidate = snapshot.0
        var sessionJSON = candidate.map { PlatformSession($0).json() } ?? .null
        if let c = candidate { sessionJSON.set("expired", .bool(c.expiresAt <= Timestamp.now().seconds)) }
        fields.append(("session", sessionJSON))
        fields.append(("pendingLogin", snapshot.1.map { .object([("mode", .string($0.mode)), ("createdAt", .string(Timestamp.rfc3339String($0.createdAt))),
                                                                  ("expiresAt", .string(Timestamp.rfc3339String($0.expiresAt)))]) } ?? .null))
        fields.append(("pendingRevocations", .array(snapshot.2.map { .object([("sessionId", .string($0.sessionId)), ("createdAt", .string(Timestamp.rfc3339String($0.createdAt))),
                                                                             ("attempts", .int($0.attempts)), ("lastError", .optional($0.lastError))]) })))
        fields.append(("clearIncomplete", .bool(snapshot.3 != nil)))
        invocation.output.emit(.object(fields))
        return .ok
    }
}
