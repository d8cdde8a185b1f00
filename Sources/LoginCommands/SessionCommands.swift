import StarlineCore
import StarlinePlatform
import PlatformCommands

/// The commands that take only the platform options.
protocol PlatformCommand: AsyncCommand where Options == PlatformOptions {}

extension PlatformCommand {
    static func options(_ arguments: ParsedArguments) throws -> PlatformOptions { try PlatformOptions(arguments) }
}

/// `sl-login start`: the first step of a two-step login.
enum StartCommand: AsyncCommand {
    static let spec = CommandSpec(
        "start", abstract: "Start a two-step login and print its URL",
        discussion: """
            Prints {\"url\",\"expiresAt\"}: open the URL anywhere, sign in, and pass the callback it redirects to \
            (starline-APPID://auth/callback?…) to sl-login complete — as text, or as the JSON line of sl-qr decode \
            --show-secrets. The pending login persists for --pending-ttl, across processes and restarts.
            """,
        options: [SignInOptions.pendingTTL.spec] + CustodyOptions.specs)

    struct Options {
        var pendingTTL: Int64
        var custodian: KeyCustodian?
        var platform: PlatformOptions
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            pendingTTL: try arguments[SignInOptions.pendingTTL].components.seconds, custodian: try CustodyOptions.preferred(arguments),
            platform: try PlatformOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let client = try PlatformToolSupport.client(options.platform, context, custodian: options.custodian)
        let (url, pending) = try client.startLogin(ttl: options.pendingTTL)
        context.output.emit(.object([("url", .string(url)), ("expiresAt", .string(Timestamp.rfc3339String(pending.expiresAt)))]))
        context.output.notice(
            """
            Open the URL, sign in, then run: sl-login complete CALLBACK (or pipe sl-qr decode --show-secrets into \
            sl-login complete -)
            """)
        return .ok
    }
}

/// `sl-login complete CALLBACK|-`: the second step.
enum CompleteCommand: AsyncCommand {
    static let spec = CommandSpec(
        "complete", abstract: "Finish a two-step login with its callback",
        options: [StandardOptions.showSecrets.spec],
        arguments: [ArgumentSpec("CALLBACK|-", help: "The callback URL, or - to read it (or an sl-qr decode JSON line) from stdin.")],
        examples: [
            Example(
                "sl-qr decode --show-secrets callback.png | sl-login complete -", "Finish a login from a photographed callback QR code.")
        ])

    struct Options {
        var callback: String
        var showSecrets: Bool
        var platform: PlatformOptions
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            callback: arguments.positionals[0], showSecrets: try arguments[StandardOptions.showSecrets],
            platform: try PlatformOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let client = try PlatformToolSupport.client(options.platform, context, network: true)
        let input =
            options.callback == "-" ? String(decoding: try context.readStandardInput(maxBytes: 64 * 1024), as: UTF8.self) : options.callback
        await client.retryPendingRevocations()
        let session = try await client.completeLogin(try StarlightClient.Callback.parse(input))
        context.output.emit(SignIn.loggedIn(session, mode: .paste, showSecrets: options.showSecrets))
        return .ok
    }
}

/// `sl-login center`: the account center, fresh from the server.
enum CenterCommand: PlatformCommand {
    static let spec = CommandSpec("center", abstract: "Fetch the account center (profile, security, sessions) fresh from the server")

    @MainActor
    static func run(_ options: PlatformOptions, _ context: CommandContext) async throws -> ExitStatus {
        let client = try PlatformToolSupport.client(options, context, network: true)
        await client.retryPendingRevocations()
        let platform = client.platform
        let center = try await client.authenticated { token in try await platform.center(token: token) }
        context.output.emit(accountNamed(center))
        return .ok
    }

    /// The server's `user` profile object becomes `account`, and `user` its id: one name, one type in every
    /// tool's records (docs/formats.md, Field glossary).
    static func accountNamed(_ center: JSON) -> JSON {
        guard case .object(let members) = center, let profile = center["user"], case .object = profile else { return center }
        return .object(
            members.flatMap { key, value in
                key == "user" ? [("user", JSON.optional(profile["id"]?.stringValue)), ("account", profile)] : [(key, value)]
            })
    }
}

/// `sl-login token`: the bare access token, for `Authorization: Bearer $(sl-login token)`.
enum TokenCommand: PlatformCommand {
    static let spec = CommandSpec("token", abstract: "Print the stored access token and a newline (the one non-JSON output)")

    @MainActor
    static func run(_ options: PlatformOptions, _ context: CommandContext) async throws -> ExitStatus {
        let client = try PlatformToolSupport.client(options, context)
        if let token = client.session?.accessToken ?? client.memoryToken {
            context.output.write(token + "\n")
            return .ok
        }
        guard let store = client.store, let candidate = try store.withState({ try $0.usableCandidate() }) else {
            throw client.notLoggedIn()
        }
        guard candidate.expiresAt > context.io.now().seconds else {
            throw StarlineError(.sessionExpired, "the stored session expired; log in again")
        }
        context.output.write(candidate.accessToken + "\n")
        return .ok
    }
}

/// `sl-login logout`: local first, then the server.
enum LogoutCommand: PlatformCommand {
    static let spec = CommandSpec("logout", abstract: "Clear the local session, then revoke it on the server")

    @MainActor
    static func run(_ options: PlatformOptions, _ context: CommandContext) async throws -> ExitStatus {
        let client = try PlatformToolSupport.client(options, context, network: true)
        let result = await client.logout()
        context.output.emit(
            .object([
                ("loggedOut", .bool(true)), ("hadSession", .bool(result.hadSession)), ("revoked", .bool(result.revoked)),
                ("pendingRevocations", .int(result.pendingRevocations))
            ]))
        if let error = result.error { throw error }
        return .ok
    }
}

/// `sl-login clear`: delete the stored session without a server call.
enum ClearCommand: PlatformCommand {
    static let spec = CommandSpec("clear", abstract: "Delete the stored session without a server call (retries a failed clean-up)")

    @MainActor
    static func run(_ options: PlatformOptions, _ context: CommandContext) async throws -> ExitStatus {
        try PlatformToolSupport.client(options, context).clearSession()
        context.output.emit(.object([("cleared", .bool(true))]))
        return .ok
    }
}

/// `sl-login cancel`: abandon a pending login.
enum CancelCommand: PlatformCommand {
    static let spec = CommandSpec("cancel", abstract: "Cancel a pending login; an established session is kept")

    @MainActor
    static func run(_ options: PlatformOptions, _ context: CommandContext) async throws -> ExitStatus {
        let had = try PlatformToolSupport.client(options, context).cancelLogin()
        context.output.emit(.object([("cancelled", .bool(had))]))
        return .ok
    }
}

/// `sl-login status`: what is stored, without the network.
enum StatusCommand: AsyncCommand {
    static let spec = CommandSpec(
        "status", abstract: "Show the stored session, pending login and pending revocations (no network)",
        discussion: """
            Prints what is stored for this API, app ID and service on stdout, whatever the outcome, and exits as gh auth \
            status does: 0 only while a session is stored and unexpired (or STARLINE_TOKEN gives one), so `sl-login \
            status && JOB` runs JOB only while logged in. Without a session it exits 3 (NOT_LOGGED_IN), and the error \
            object on stderr says what to run (sl-login; sl-login --device over ssh; sl-login --with-token in a script). \
            It never calls the server: sl-restore verifies a session. With --warn-within DURATION an unexpired session \
            that ends within DURATION exits 14 (EXPIRES_SOON): time to sign in again.
            """,
        options: [ExpiryWarning.option.spec],
        examples: [
            Example("sl-login status --compact >/dev/null 2>&1 || sl-login --device", "Sign in only when no session is stored."),
            Example("sl-login status --warn-within 7d > /dev/null", "Exit 14 when the stored session ends within a week.")
        ],
        exitStatuses: [
            (.ok, "a session is stored and unexpired, or STARLINE_TOKEN is set"),
            (.notLoggedIn, "no session stored, or only one a failed sign-out left unusable (sl-login clear)"),
            (.sessionEnded, "the stored session expired (SESSION_EXPIRED): log in again"),
            (.storage, "the store cannot be read"), (.data, "a stored record is corrupt; sl-login clear removes it"),
            (.expiresSoon, "the stored session ends within --warn-within")
        ])

    struct Options {
        var warnWithin: Int64
        var platform: PlatformOptions
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(warnWithin: try arguments[ExpiryWarning.option].components.seconds, platform: try PlatformOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let client = try PlatformToolSupport.client(options.platform, context)
        let api = options.platform.api
        var fields: [(String, JSON)] = [("api", .string(api.description)), ("appId", .string(client.configuration.appId))]
        guard let store = client.store else {
            // STARLINE_TOKEN: a session exists (sl-restore verifies it), but its user is unknown without the network.
            fields += [
                ("storage", .object([("backend", .string("memory")), ("source", .string("STARLINE_TOKEN"))])),
                ("session", .object([("source", .string("STARLINE_TOKEN")), ("verified", .bool(false))]))
            ]
            context.output.emit(.object(fields))
            return .ok
        }
        // Clear columns only: status works while the keyring is locked or the device key is missing.
        let summary = try store.withState { try $0.summary() }
        let now = context.io.now().seconds
        fields.append(("service", .string(store.key.service)))
        var storage: [(String, JSON)] = [("backend", .string("sqlite")), ("path", .string(store.databasePath))]
        if summary.custody["custodian"]?.stringValue == KeyCustodian.file.rawValue {
            storage += [("deviceKey", .string(store.deviceKeyPath)), ("machineId", .string(store.machineIdSource))]
        }
        storage.append(("custody", summary.custody))
        fields.append(("storage", .object(storage)))
        var sessionJSON = summary.candidate.map { PlatformSession($0).json() } ?? .null
        if let c = summary.candidate { sessionJSON.set("expired", .bool(c.expiresAt <= now)) }
        fields.append(("session", sessionJSON))
        let pending = summary.pendingLogin.flatMap { $0.expiresAt > now ? $0 : nil }
        fields.append(
            (
                "pendingLogin",
                pending.map {
                    .object([
                        ("mode", .string($0.mode.rawValue)), ("createdAt", .string(Timestamp.rfc3339String($0.createdAt))),
                        ("expiresAt", .string(Timestamp.rfc3339String($0.expiresAt)))
                    ])
                } ?? .null
            ))
        fields.append(
            (
                "pendingRevocations",
                .array(
                    summary.pendingRevocations.map {
                        .object([
                            ("sessionId", .string($0.sessionId)), ("createdAt", .string(Timestamp.rfc3339String($0.createdAt))),
                            ("attempts", .int($0.attempts)), ("lastError", .optional($0.lastError))
                        ])
                    })
            ))
        fields.append(("clearIncomplete", .bool(summary.revocationMarker != nil)))
        context.output.emit(.object(fields))
        // The record is printed whatever the verdict; a stdout that failed is reported ahead of it (WRITE_FAILED).
        try context.output.check()
        try verdict(summary, client: client, now: now)
        if let candidate = summary.candidate,
            let soon = ExpiryWarning.check(expiresAt: candidate.expiresAt, now: now, within: options.warnWithin)
        {
            throw soon
        }
        return .ok
    }

    /// Exit 0 only while a usable session is stored (as `gh auth status`): scripts gate on `sl-login status && …`.
    /// Every refusal names where it looked (`StarlightClient.notLoggedIn`: API, app, service) and what to run.
    static func verdict(_ summary: StoreSummary, client: StarlightClient, now: Int64) throws {
        let notLoggedIn = client.notLoggedIn()
        guard let candidate = summary.candidate else {
            var error = notLoggedIn
            if summary.pendingLogin.map({ $0.expiresAt > now }) == true {
                error.message += "; a login is pending: finish it with sl-login complete or drop it with sl-login cancel"
            }
            throw error
        }
        if let marked = summary.revocationMarker, marked.isEmpty || marked == candidate.sessionId {
            throw StarlineError(
                .notLoggedIn,
                "the last sign-out could not delete the stored session, so it is not used: run sl-login clear, then \(StarlightClient.signInHint)",
                details: notLoggedIn.details)
        }
        guard candidate.expiresAt > now else {
            throw StarlineError(
                .sessionExpired,
                "the stored session expired at \(Timestamp.rfc3339String(candidate.expiresAt)): \(StarlightClient.signInHint)",
                details: notLoggedIn.details)
        }
    }
}
