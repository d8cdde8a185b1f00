import StarlineCore
import StarlinePlatform
import StarlineQR

/// The sign-in flows of `sl-login` and `sl-login switch`.
enum SignIn {
    /// The sign-in flow the flags ask for; without one, on a terminal, the browser when one can be opened, else
    /// the device code (said on stderr); without a terminal, USAGE — a cron job never starts an interactive flow.
    static func flow(_ options: SignInOptions, _ context: CommandContext) throws -> SignInFlow {
        if let flow = options.requestedFlow { return flow }
        guard context.io.stdinIsTerminal && context.io.stderrIsTerminal else {
            throw StarlineError(
                .usage,
                """
                not on a terminal: choose a login mode explicitly (--with-token, --device, --browser, --no-browser, or \
                sl-login start/complete)
                """)
        }
        let flow: SignInFlow = LoginTool.canOpenBrowser(context.environment) ? .browser : .device
        context.output.notice(
            "sl-login: signing in with \(flow == .browser ? "a browser and a loopback redirect" : "a device code (no browser available)")")
        return flow
    }

    @MainActor
    static func run(_ client: StarlightClient, _ options: SignInOptions, flow: SignInFlow, _ context: CommandContext) async throws
        -> ExitStatus
    {
        let output = context.output
        let ttl = options.pendingTTL
        let session: PlatformSession
        switch flow {
        case .token:
            let token = String(decoding: try context.readStandardInput(maxBytes: 64 * 1024), as: UTF8.self).trimmingWhitespace()
            guard !token.isEmpty else { throw StarlineError(.usage, "--with-token reads the token from stdin, which was empty") }
            session = try await client.login(.token(token), pendingTTL: ttl)
        case .device:
            session = try await client.login(
                .device(present: { authorization in
                    output.notice("To sign in, open \(authorization.verificationURI) and enter the code \(authorization.userCode)")
                    let complete = authorization.verificationURIComplete ?? authorization.verificationURI
                    // Drawn here, in the tool layer: StarlinePlatform does not depend on StarlineQR.
                    if let matrix = try? QREncoder.encode(Array(complete.utf8), level: .L) {
                        output.notice("or scan:\n" + QRRenderer.utf8(matrix, margin: 2))
                    }
                }), pendingTTL: ttl)
        case .browser:
            let listener = try LoopbackListener(port: options.redirectPort)
            let openBrowser = options.opensBrowser
            let environment = context.environment
            let runtimeDirectory = context.paths.runtime
            let port = listener.port
            var handoff: BrowserHandoffPage?
            defer { handoff?.remove() }
            session = try await client.login(
                .loopback(
                    listener,
                    open: { url in
                        // The URL is always shown (as gh does): a browser that opens nothing must not leave the user waiting.
                        guard openBrowser else {
                            output.notice("Open this URL in a browser on this machine (or forward port \(port) with ssh -L):\n\(url)")
                            return
                        }
                        do {
                            handoff = try BrowserHandoffPage(forwardingTo: url, in: runtimeDirectory)
                        } catch {
                            output.notice(
                                "sl-login: \((error as? StarlineError)?.message ?? "\(error)"); not starting a browser. Open this URL yourself:\n\(url)"
                            )
                            return
                        }
                        if let page = handoff, let pid = LoginTool.launchBrowser(page.fileURL, environment) {
                            output.notice(
                                "sl-login: opened the browser; waiting for the sign-in (Ctrl-C to stop). If it did not open, visit:\n\(url)"
                            )
                            LoginTool.watchBrowser(pid) { status in
                                output.notice(
                                    "sl-login: the browser command failed (exit \(status)); open the URL above yourself (still waiting)")
                            }
                        } else {
                            output.notice(
                                "sl-login: no browser could be started; open this URL in a browser on this machine (or forward port \(port) with ssh -L):\n\(url)"
                            )
                        }
                    }), pendingTTL: ttl)
        }
        output.emit(loggedIn(session, mode: flow.mode, showSecrets: options.showSecrets))
        return .ok
    }

    static func loggedIn(_ session: PlatformSession, mode: LoginMode, showSecrets: Bool) -> JSON {
        .object([("state", .string("loggedIn")), ("mode", .string(mode.rawValue)), ("session", session.json(showToken: showSecrets))])
    }
}
