import StarlineCore
import StarlinePlatform
import PlatformCommands

/// `list --user …|- | --all-users`: many users' sessions, listed in parallel through the bulk engine.
@MainActor
struct AdminListing {
    let options: ListCommand.Options
    let context: CommandContext
    let client: StarlightClient
    let now: Int64

    init(_ options: ListCommand.Options, _ context: CommandContext, client: StarlightClient, now: Int64) {
        self.options = options
        self.context = context
        self.client = client
        self.now = now
    }

    func run() async throws -> ExitStatus {
        let credentials = try client.runCredentials()
        let transport = HTTPTransport(timeout: Double(options.platform.timeout), maxConnections: options.parallel)
        let lister = SessionLister(api: client.platform, transport: transport, token: credentials.token)
        let engine = BulkConfiguration(parallel: options.parallel)
        let users = try options.allUsers ? allUsers(lister, engine) : namedUsers()

        let output = context.output
        let filter = options.filter
        let now = self.now
        let failed = Locked(0)
        let summary = BulkEngine.run(users, engine, attempt: { user in lister.sessions(of: user) }, finished: { result in
            guard let sessions = result.value else {
                failed.withLock { $0 += 1 }
                let error = result.error ?? StarlineError(.internalError, "no sessions")
                output.notice(StarlineError(error.code, "user \(result.item): \(error.message)", details: .object([("user", .string(result.item))])).json.serialized())
                return nil
            }
            for var session in sessions where filter.keeps(session, now: now) {
                session.set("user", .string(result.item))
                output.emitLine(session)
            }
            return nil
        })
        if let error = summary.stopError {
            throw error.exitStatus == .sessionEnded ? client.runSessionEnded(credentials, reason: error) : error
        }
        let failures = failed.withLock { $0 }
        if failures > 0 {
            throw StarlineError(.partial, "\(failures) of \(users.count) users could not be listed",
                                details: .object([("users", .int(users.count)), ("failed", .int(failures))]))
        }
        return .ok
    }

    /// `--user` values, or user ids on stdin (one a line; blank lines and # comments skipped).
    func namedUsers() throws -> [String] {
        var users = options.users
        if users == ["-"] {
            // Read as bytes at LF (CRLF is one Character), a line at a time, each line bounded.
            users = []
            let reader = LineReader(context.io.stdin, name: "standard input", maxLineBytes: RevokeInput.maxLineBytes)
            while let line = try reader.next() {
                guard let bytes = line.bytes else { throw StarlineError(.usage, "line \(line.number) of the user list is longer than \(RevokeInput.maxLineBytes) bytes") }
                let user = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
                if !user.isEmpty, !user.hasPrefix("#") { users.append(user) }
                guard users.count <= Self.maximumUsers else { throw StarlineError(.usage, "more than \(Self.maximumUsers) users on stdin") }
            }
        }
        var seen = Set<String>()
        return try users.filter { user in
            if let problem = RevokeInput.problem(user, "user id") { throw StarlineError(.usage, "--user \(user.prefix(60)): \(problem)") }
            return seen.insert(user).inserted
        }
    }

    static let maximumUsers = 10_000_000

    /// Every user, page by page (`GET /api/admin/users`), with the engine's retry and throttle rules per page.
    func allUsers(_ lister: SessionLister, _ engine: BulkConfiguration) throws -> [String] {
        var users: [String] = []
        var cursor: String?
        var cursorsSeen = Set<String>()
        var single = engine
        single.parallel = 1
        repeat {
            let page = Locked<(users: [String], next: String?)?>(nil)
            let pageError = Locked<StarlineError?>(nil)
            let summary = BulkEngine.run([cursor], single, attempt: { cursor in lister.users(limit: 1000, cursor: cursor) }, finished: { result in
                if let value = result.value { page.withLock { $0 = value } } else { pageError.withLock { $0 = result.error } }
                return nil
            })
            if let error = summary.stopError ?? pageError.withLock({ $0 }) { throw error }
            guard let value = page.withLock({ $0 }) else { throw StarlineError(.internalError, "no page of users") }
            users += value.users
            // A server that hands back a cursor it gave before would page forever; the last page has none.
            if let next = value.next, !cursorsSeen.insert(next).inserted {
                throw StarlineError(.data, "the user list repeats its cursor; stopped paging")
            }
            guard users.count <= Self.maximumUsers else {
                throw StarlineError(.data, "the user list goes on past \(Self.maximumUsers) users; stopped paging")
            }
            cursor = value.next
        } while cursor != nil
        return users
    }
}
