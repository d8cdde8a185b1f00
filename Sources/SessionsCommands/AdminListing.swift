import StarlineCore
import StarlinePlatform
import PlatformCommands
import StarlineBulk

/// `list --user …|- | --all-users`: many users' sessions, listed in parallel through the bulk engine.
@MainActor
struct AdminListing {
    let options: ListCommand.Options
    let factory: PlatformFactory
    let context: CommandContext
    let client: StarlightClient
    let now: Int64

    init(_ options: ListCommand.Options, _ factory: PlatformFactory, client: StarlightClient, now: Int64) {
        self.options = options
        self.factory = factory
        self.context = factory.context
        self.client = client
        self.now = now
    }

    func run() async throws -> ExitStatus {
        let credentials = try client.runCredentials()
        let lister = SessionLister(
            api: client.platform, transport: factory.transport(maxConnections: options.parallel), token: credentials.token)
        let engine = BulkConfiguration(parallel: options.parallel, clock: factory.bulkClock)
        // --all-users streams: users are listed page by page as the workers need them, never all held at once.
        let pager = options.allUsers ? UserPager(lister: lister, engine: engine) : nil
        let source: @Sendable () -> String? = if let pager { { pager.next() } } else { BulkEngine.source(try namedUsers()) }

        let output = context.output
        let list = RecordList(output, options.list, columns: ListCommand.columns)
        let filter = options.filter
        let now = self.now
        let counts = Locked((users: 0, failed: 0))
        let attempt: @Sendable (String) -> BulkAttempt<[JSON]> = { user in lister.sessions(of: user) }
        let finished: @Sendable (BulkItemResult<String, [JSON]>) -> StarlineError? = { result in
            counts.withLock { $0.users += 1 }
            guard let sessions = result.value else {
                // What stopped the whole run (not an admin, the session ended) is reported once, as the run's error.
                // (A 403 on one user while the caller is still an admin is that user's failure: the run goes on.)
                if result.failure == .skipped || result.stoppedTheRun { return nil }
                counts.withLock { $0.failed += 1 }
                let error = result.error ?? StarlineError(.internalError, "no sessions")
                output.notice(
                    StarlineError(error.code, "user \(result.item): \(error.message)", details: .object([("user", .string(result.item))]))
                        .json.serialized())
                return nil
            }
            for var session in sessions where filter.keeps(session, now: now) {
                session.set("user", .string(result.item))
                list.add(session)
            }
            return nil
        }
        let summary = BulkRun<String, [JSON]>(engine).run(source: source, attempt: attempt, finished: finished)
        list.finish()
        if let error = summary.stopError ?? pager?.error {
            throw error.exitStatus == .sessionEnded ? client.runSessionEnded(credentials, reason: error) : error
        }
        let (users, failures) = counts.withLock { ($0.users, $0.failed) }
        if failures > 0 {
            throw StarlineError(
                .partial, "\(failures) of \(users) users could not be listed",
                details: .object([("users", .int(users)), ("failed", .int(failures))]))
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
                guard let bytes = line.bytes else {
                    throw StarlineError(.usage, "line \(line.number) of the user list is longer than \(RevokeInput.maxLineBytes) bytes")
                }
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

    nonisolated static let maximumUsers = 10_000_000
}

/// Every user of the platform, a page at a time (`GET /api/admin/users`) as the listing's workers ask for
/// them, with the bulk engine's retry and throttle rules per page; a cursor seen before (a cycle of any
/// length, `CursorChain`), more than `CursorChain.maximumPages` pages or more than `AdminListing.maximumUsers`
/// users stops it (DATA_ERROR).
final class UserPager: @unchecked Sendable {
    // @unchecked: `next` is called under the bulk run's source lock, one worker at a time.
    let lister: SessionLister
    let engine: BulkConfiguration
    private var page: [String] = []
    private var position = 0
    private var cursor: String?
    private var started = false
    private var chain = CursorChain(route: "GET /api/admin/users", start: nil)
    private var total = 0
    private(set) var error: StarlineError?

    init(lister: SessionLister, engine: BulkConfiguration) {
        self.lister = lister
        var single = engine
        single.parallel = 1
        self.engine = single
    }

    func next() -> String? {
        while position >= page.count {
            guard error == nil, !started || cursor != nil else { return nil }
            do { try fetch() } catch { self.error = error as? StarlineError ?? StarlineError(.internalError, "\(error)"); return nil }
        }
        defer { position += 1 }
        return page[position]
    }

    private func fetch() throws {
        started = true
        let result = Locked<(users: [String], next: String?)?>(nil)
        let pageError = Locked<StarlineError?>(nil)
        let lister = self.lister
        let summary = BulkEngine.run(
            [cursor], engine, attempt: { cursor in lister.users(limit: 1000, cursor: cursor) },
            finished: { r in
                if let value = r.value { result.withLock { $0 = value } } else { pageError.withLock { $0 = r.error } }
                return nil
            })
        if let error = summary.stopError ?? pageError.withLock({ $0 }) { throw error }
        guard let value = result.withLock({ $0 }) else { throw StarlineError(.internalError, "no page of users") }
        // A server that hands back a cursor it gave before would page forever; the last page has none.
        if let next = value.next { try chain.advance(to: next) }
        total += value.users.count
        guard total <= AdminListing.maximumUsers else {
            throw StarlineError(.data, "the user list goes on past \(AdminListing.maximumUsers) users; stopped paging")
        }
        page = value.users
        position = 0
        cursor = value.next
    }
}
