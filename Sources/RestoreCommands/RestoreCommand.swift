import StarlineCore
import StarlinePlatform
import PlatformCommands

/// Restoring: the tool's one command.
enum RestoreCommand: AsyncCommand {
    static let maxAge = Option<Duration>.duration(
        "max-age", help: "Accept a session verified at most this long ago without a network call (0: always verify).",
        default: 0, range: 0...(365 * 86400))

    static let spec = CommandSpec(
        "sl-restore", abstract: "restore and verify the stored Starline session (the cron and pipeline gate)",
        discussion: """
            sl-restore reads the stored candidate session, checks its expiry, verifies it with GET /api/me and only then \
            reports it valid, updating the stored user and roles. A revoked or expired session, or a 403 \
            ACCOUNT_RESTRICTED / APP_UNAVAILABLE, clears it; a network failure, timeout or 5xx keeps it and reports \
            keptUnverified. While a login is pending (sl-login start, or an interactive sl-login running) it answers \
            noResult without reading the old candidate. Concurrent runs share one verification: one /api/me call for N \
            simultaneous runs.\n\nIt always prints \
            {\"state\":\"valid|cleared|keptUnverified|absent|noResult\",\"session\":…,\"reason\":…} on stdout and exits \
            0, 4, 7, 3 or 9 accordingly (10 when the store cannot be read, 12 when a stored record is corrupt); the error \
            object goes to stderr. Before verifying, tokens that an earlier offline logout could not revoke are revoked, \
            best-effort.\n\nWith --warn-within DURATION a valid session that ends within DURATION exits 14 \
            (EXPIRES_SOON, the state still valid and expiresAt in the record): cron mails days before the session ends \
            instead of once it has. Use it on the check, not on a gate (the job should still run while the session is \
            valid).
            """,
        options: [maxAge.spec, ExpiryWarning.option.spec, StandardOptions.quiet],
        examples: [
            Example(
                """
                sl-restore >/dev/null && curl -H \"Authorization: Bearer $(sl-login token)\" \
                https://account.thestarline.cn/api/center
                """, "Run a job only while the login is valid."),
            Example(
                "*/10 * * * * sl-restore --max-age 300 --compact >> ~/starline-restore.jsonl",
                "Check the login from cron every ten minutes."),
            Example("sl-restore --warn-within 3d > /dev/null", "Exit 14 while the session is valid but ends within three days.")
        ],
        exitStatuses: [
            (.ok, "valid: verified (or within --max-age)"), (.notLoggedIn, "absent: nothing stored, or a failed sign-out left it unusable"),
            (.sessionEnded, "cleared: revoked, expired, restricted, app unavailable, or malformed"),
            (.transient, "keptUnverified: network failure, timeout, 5xx or 429; the session is kept"),
            (.noResult, "noResult: a login is pending, or another run changed the session meanwhile"),
            (.storage, "keptUnverified: the store cannot be read or written"),
            (.data, "keptUnverified: a stored record is corrupt (an impossible time); sl-login clear removes it"),
            (.expiresSoon, "valid, but the session ends within --warn-within")
        ])

    struct Options {
        var maxAge: Int64
        var warnWithin: Int64
        var platform: PlatformOptions
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            maxAge: try arguments[maxAge].components.seconds, warnWithin: try arguments[ExpiryWarning.option].components.seconds,
            platform: try PlatformOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let client: StarlightClient
        do {
            // Without --max-age the stored session is always verified: libcurl loads while the store opens.
            client = try PlatformToolSupport.client(options.platform, context, network: options.maxAge == 0)
        } catch let error as StarlineError where error.exitStatus == .storage || error.exitStatus == .data {
            // The store cannot be opened (permissions, a damaged file, a locked device key): still the one
            // record on stdout that scripts read, whatever the exit code.
            context.output.emit(RestoreOutcome.storageFailure(error).json)
            throw error
        }
        let outcome = await client.restoreSession(maxAge: options.maxAge)
        context.output.emit(outcome.json)
        if let error = outcome.error { context.output.reportError(error) }
        if outcome.exitStatus == .ok, let session = outcome.session,
            let soon = ExpiryWarning.check(expiresAt: session.expiresAt, now: context.io.now().seconds, within: options.warnWithin)
        {
            context.output.reportError(soon)
            return .expiresSoon
        }
        return outcome.exitStatus
    }
}
