import StarlineCore
import StarlinePlatform

/// Delivers outbox entries through the bulk engine (one rate gate for the run: a 429's Retry-After pauses
/// every send; backoff with jitter for network errors and 5xx), one entry at a time in creation order so a
/// conversation's messages arrive in the order they were written.
///
/// Each entry is claimed by this process just before its first attempt (so a concurrent flush or send takes
/// the others), and settled once: `sent` with the server's record, `failed` for a refusal, or back to
/// `pending` / `unknown` when no answer settled it. An entry that may have reached the server is never sent
/// blind: its echo is looked up by clientId first (W5, issue 14 item 3).
public final class OutboxDelivery: Sendable {
    public let api: ChatAPI
    public let store: ChatStore
    public let account: ChatAccount
    let owner: ProcessIdentity
    /// S14/W8: true while the stored session is still the one this run sends with.
    let sameAccount: @Sendable () -> Bool

    public init(api: ChatAPI, store: ChatStore, account: ChatAccount, owner: ProcessIdentity = .current,
                sameAccount: @escaping @Sendable () -> Bool) {
        self.api = api
        self.store = store
        self.account = account
        self.owner = owner
        self.sameAccount = sameAccount
    }

    /// One entry of a run: claimed on its first attempt; remembers whether a request may have gone out.
    public final class Job: Sendable {
        public let clientId: String
        public let kind: OutboxKind
        /// The input line it came from (`send --lines`), for the result line.
        public let line: Int?
        let state = Locked((claim: ChatStore.Claim?.none, tried: false, maybeWritten: false))

        public init(kind: OutboxKind, clientId: String, line: Int? = nil) {
            self.kind = kind
            self.clientId = clientId
            self.line = line
        }

        var claim: ChatStore.Claim? { state.withLock { $0.claim } }
        var maybeWritten: Bool { state.withLock { $0.maybeWritten } }
    }

    /// What an entry came to.
    public struct Result: Sendable {
        public var job: Job
        /// The entry as stored after the run (nil: it was dropped meanwhile).
        public var entry: OutboxEntry?
        /// Not sent by this run because another process is sending it (an entry settled already is not busy).
        public var busy: Bool
        public var attempts: Int
        public var error: StarlineError?
    }

    enum Delivered: Sendable {
        case sent(JSON)
        /// Not ours to send (being sent by a live process, already settled, dropped).
        case notClaimed
    }

    /// Runs `jobs` and reports each one through `report` (in order; an error it returns stops the run).
    public func run(_ jobs: [Job], configuration: BulkConfiguration,
                    report: @escaping @Sendable (Result) -> StarlineError?) -> BulkEngine.Summary {
        var sequential = configuration
        sequential.parallel = 1
        return BulkEngine.run(jobs, sequential, attempt: { [self] job in attempt(job) }, finished: { [self] result in
            report(finish(result))
        })
    }

    func attempt(_ job: Job) -> BulkAttempt<Delivered> {
        guard sameAccount() else { return .stopRun(Self.accountChanged()) }
        if !job.state.withLock({ $0.tried }) {
            job.state.withLock { $0.tried = true }
            do {
                guard let claim = try store.claim(job.kind, clientId: job.clientId, account: account, owner: owner, now: Timestamp.now().seconds) else {
                    return .done(.notClaimed)
                }
                job.state.withLock { $0.claim = claim; $0.maybeWritten = claim.needsLookup }
            } catch {
                return .stopRun(Self.starline(error))
            }
        }
        guard let entry = job.claim?.entry else { return .done(.notClaimed) }
        if job.maybeWritten {
            switch lookUp(entry) {
            case .success(let found?): return .done(.sent(found))
            case .success(nil): break  // not on the server: send it (same clientId)
            case .failure(let error): return classify(error, job)
            }
        }
        let (route, outcome) = api.attemptPut(entry)
        let reply: HTTPReply
        switch outcome {
        case .failure(let error): return classify(error, job)
        case .success(let r): reply = r
        }
        // W8: an answer for another account's session is not stored as this one's.
        guard sameAccount() else {
            job.state.withLock { $0.maybeWritten = true }
            return .stopRun(Self.accountChanged())
        }
        if (200...299).contains(reply.status) {
            guard let json = try? api.success(reply, route), json["id"]?.stringValue != nil else {
                job.state.withLock { $0.maybeWritten = true }
                return .transient(ChatAPI.malformed(route, "the sent \(entry.kind.rawValue) has no id"))
            }
            return .done(.sent(json))
        }
        if reply.status == 429 {
            return .throttled(retryAfter: reply.header("Retry-After").flatMap { RetryPolicy.parseRetryAfter($0) })
        }
        let error = PlatformAPI.error(status: reply.status, body: reply.body, headers: reply.headers, route: route)
        if error.exitStatus == .sessionEnded { return .stopRun(error) }
        return RetryPolicy.isRetryable(status: reply.status) ? .transient(error) : .failed(error)
    }

    /// A transport error: transient (the request may have been written unless the connection never opened),
    /// or a failure of the request itself.
    func classify(_ error: StarlineError, _ job: Job) -> BulkAttempt<Delivered> {
        guard error.code == .network || error.code == .timeout else {
            return error.exitStatus == .sessionEnded ? .stopRun(error) : .failed(error)
        }
        if !Self.neverSent(error) { job.state.withLock { $0.maybeWritten = true } }
        return .transient(error)
    }

    /// libcurl failed before a byte was sent: the host did not resolve (6), or the connection was refused (7).
    static func neverSent(_ error: StarlineError) -> Bool {
        guard let code = error.details?["curlCode"]?.intValue else { return false }
        return code == 5 || code == 6 || code == 7
    }

    /// The entry's echo on the server, found by clientId, or nil when the server has none.
    func lookUp(_ entry: OutboxEntry) -> Swift.Result<JSON?, StarlineError> {
        do {
            switch entry.kind {
            case .message:
                let found = try api.messages(conversation: entry.conversationId, clientId: entry.clientId)
                return .success(found.first { $0.clientId == entry.clientId && $0.senderId == account.userId }?.json)
            case .moment:
                // Moments have no lookup by clientId: the author's newest ones are searched (a few pages).
                var before: String?
                for _ in 0..<5 {
                    let page = try api.moments(before: before, limit: 200)
                    if let hit = page.first(where: { $0["clientId"]?.stringValue == entry.clientId && $0["authorId"]?.stringValue == account.userId }) {
                        return .success(hit)
                    }
                    guard page.count == 200, let last = page.last?["id"]?.stringValue else { break }
                    before = last
                }
                return .success(nil)
            }
        } catch {
            return .failure(Self.starline(error))
        }
    }

    /// Settles the entry of a finished job (unless it was never claimed) and builds its result.
    func finish(_ result: BulkItemResult<Job, Delivered>) -> Result {
        let job = result.item
        let now = Timestamp.now().seconds
        guard let claim = job.claim else {
            // Tried and not claimed: another process has it, or it was settled (sent, failed, dropped) already —
            // only the first is busy. Never tried: the run stopped first.
            let current = (try? store.outboxEntry(job.clientId, account: account)) ?? nil
            let busy = current?.state.isOpen == true && job.state.withLock { $0.tried }
            return Result(job: job, entry: current, busy: busy, attempts: 0, error: result.error)
        }
        let settlement: ChatStore.Settlement
        switch result.value {
        case .sent(let json)?: settlement = .sent(json)
        case .notClaimed?: settlement = .open(maybeWritten: job.maybeWritten, nil)
        case nil:
            let error = result.error ?? StarlineError(.internalError, "the send ended without a result")
            let permanent = result.failure == .failed && !error.retryable && error.code != .sessionChanged && error.exitStatus != .sessionEnded
                && error.code != .storage
            settlement = permanent ? .failed(error) : .open(maybeWritten: job.maybeWritten, error)
        }
        do {
            let entry = try store.settle(claim.entry, account: account, owner: owner, settlement, attempts: result.attempts, now: now)
            return Result(job: job, entry: entry, busy: false, attempts: result.attempts, error: entry.state == .sent ? nil : result.error)
        } catch {
            return Result(job: job, entry: claim.entry, busy: false, attempts: result.attempts, error: Self.starline(error))
        }
    }

    static func accountChanged() -> StarlineError {
        StarlineError(.sessionChanged, "the stored account changed during the send; it stopped (nothing was sent or stored for the new account; a message in flight stays in the old account's outbox as unknown)")
    }

    static func starline(_ error: any Error) -> StarlineError {
        (error as? StarlineError) ?? StarlineError(.internalError, "\(error)")
    }
}
