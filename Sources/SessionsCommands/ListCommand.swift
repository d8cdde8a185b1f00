import StarlineCore
import StarlinePlatform
import PlatformCommands

/// `sl-sessions list`: device sessions, one JSON line each — the caller's own, or (admin) many users' at once.
enum ListCommand: AsyncCommand {
    static let users = Option<[String]>.strings(
        "user", "UID", help: "List UID's sessions (admin); repeatable, or - to read user ids from stdin, one a line.")
    static let allUsers = Option<Bool>.flag("all-users", help: "List the sessions of every user (admin), paging through the user list.")
    static let app = Option<String?>.string("app", "APP", help: "Only sessions of this App ID.")
    static let idleFor = Option<Duration?>.duration(
        "idle-for", help: "Only sessions not seen for at least DURATION.", range: 0...IdleDuration.maxSeconds)
    static let notCurrent = Option<Bool>.flag("not-current", help: "Leave out the session this tool runs with.")
    static let parallel = Option<Int>.integer("parallel", "N", help: "Users listed at once (admin).", default: 8, range: 1...64)

    static let spec = CommandSpec(
        "list", abstract: "List device sessions, one JSON line each (yours, or users' as an admin)",
        discussion: """
            Each record is a session as the server describes it \
            ({\"id\",\"appId\",\"device\",\"ip\",\"createdAt\",\"lastSeenAt\",\"current\"}) with its \"user\" — exactly \
            what sl-sessions revoke - reads. With --user or --all-users (admin) the users are listed in parallel through \
            the same rate limiter and retries as a bulk revocation; a user that cannot be listed is reported on stderr \
            and the run exits 8.
            """,
        options: [users.spec, allUsers.spec, app.spec, idleFor.spec, notCurrent.spec, parallel.spec] + ListOptions.specs,
        examples: [
            Example("sl-sessions list --jsonl | jq -r 'select(.current|not) | .id'", "The ids of the other sessions."),
            Example(
                "sl-sessions list --all-users --idle-for 30d --jsonl | sl-sessions revoke --journal idle.journal -",
                "Revoke every session idle for 30 days.")
        ],
        exitStatuses: [
            (.ok, "listed"), (.partial, "some users could not be listed"), (.forbidden, "--user/--all-users without the admin role"),
            (.notLoggedIn, "no session stored"), (.sessionEnded, "the server ended this session"),
            (.transient, "the server could not be reached")
        ])

    struct Options {
        var users: [String]
        var allUsers: Bool
        var filter: SessionFilter
        var parallel: Int
        var platform: PlatformOptions
        var list: ListOptions
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        let options = Options(
            users: try arguments[users], allUsers: try arguments[allUsers],
            filter: SessionFilter(
                app: try arguments[app], idleSeconds: try arguments[idleFor]?.components.seconds, notCurrent: try arguments[notCurrent]),
            parallel: try arguments[parallel], platform: try PlatformOptions(arguments), list: try ListOptions(arguments))
        if options.allUsers && !options.users.isEmpty { throw StarlineError(.usage, "--all-users and --user cannot be used together") }
        if options.users.contains("-") && options.users.count > 1 {
            throw StarlineError(.usage, "--user - (stdin) cannot be combined with other --user values")
        }
        return options
    }

    /// A table's columns (RecordList).
    static let columns = ["id", "user", "appId", "device.name", "device.platform", "lastSeenAt", "current"]

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let factory = PlatformFactory(options.platform, context)
        let client = try factory.client(network: true)
        let now = context.io.now().seconds
        guard options.allUsers || !options.users.isEmpty else {
            let (owner, sessions) = try await client.sessionsWithUser()
            let user = owner["id"] ?? .null
            let list = RecordList(context.output, options.list, columns: columns)
            for var session in sessions where options.filter.keeps(session, now: now) {
                session.set("user", user)
                list.add(session)
            }
            list.finish()
            return .ok
        }
        return try await AdminListing(options, factory, client: client, now: now).run()
    }
}

/// Which sessions `list` prints.
struct SessionFilter: Sendable {
    var app: String?
    var idleSeconds: Int64?
    var notCurrent: Bool

    func keeps(_ session: JSON, now: Int64) -> Bool {
        if notCurrent && session["current"] == .bool(true) { return false }
        if let app, session["appId"]?.stringValue != app { return false }
        if let idleSeconds {
            // A session the server gives no readable lastSeenAt for is not known to be idle: kept out.
            guard let seen = session["lastSeenAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) else { return false }
            let (cutoff, overflow) = now.subtractingReportingOverflow(idleSeconds)
            if overflow || seen.seconds > cutoff { return false }
        }
        return true
    }
}

/// `--idle-for`: at most 100 years.
enum IdleDuration {
    static let maxSeconds: Int64 = 100 * 366 * 86_400
}
