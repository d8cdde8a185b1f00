import StarlineCore
import StarlineHTTP
import StarlineBulk

/// Delivers outbox entries through the bulk engine (one rate gate for the run: a 429's Retry-After pauses
/// every send; backoff with jitter for network errors and 5xx).
///
/// W5, one conversation leaves in queue order: each conversation is a lane (`OutboxLanes`) whose entries
/// go one at a time, in the order they were queued, and a message is claimed only when every message queued
/// before it in its conversation is sent (`ChatStore.claim`, one transaction under the store's lock). One
/// that is not is *held*: left pending and reported with the entry holding it. When the holder is being
/// sent by another live process (a concurrent flush or send), the held one waits for it to be settled and
/// tries again, so two processes take turns along one conversation and never pass each other. Other
/// conversations are other lanes: they go on meanwhile. Moments share one lane and hold nothing.
///
/// Each entry is claimed by this process just before its first attempt, and settled once: `sent` with the
/// server's record, `failed` for a refusal, or back to `pending` / `unknown` when no answer settled it. An
/// entry that may have reached the server is never sent blind: its echo is looked up by clientId first.
public final class OutboxDelivery: Sendable {
    public let api: ChatAPI
    public let store: ChatStore
    public let account: ChatAccount
    let owner: ProcessIdentity
    /// S14/W8: true while the stored session is still the one this run sends with.
    let sameAccount: @Sendable () -> Bool
    /// How long an entry waits for an earlier one of its conversation that another live process is sending.
    let holderWait: Double
    /// A line for stderr (a wait for another process).
    let notice: @Sendable (String) -> Void

    /// Conversations delivered side by side.
    public static let maxParallelConversations = 4

    public init(
        api: ChatAPI, store: ChatStore, account: ChatAccount, owner: ProcessIdentity = .current,
        holderWait: Double = 120, notice: @escaping @Sendable (String) -> Void = { _ in },
        sameAccount: @escaping @Sendable () -> Bool
    ) {
        self.api = api
        self.store = store
        self.account = account
        self.owner = owner
        self.holderWait = holderWait
        self.notice = notice
        self.sameAccount = sameAccount
    }

    /// One entry of a run: claimed on its first attempt; remembers whether a request may have gone out.
    public final class Job: Sendable {
        public let clientId: String
        public let kind: OutboxKind
        /// The conversation of a message ("" for a moment): the lane it goes in.
        public let conversationId: String
        /// The input line it came from (`send --lines`), for the result line.
        public let line: Int?
        /// Queued before the command's own entries, and delivered first to keep its conversation's order.
        public let earlier: Bool
        let state = Locked((claim: ChatStore.Claim?.none, tried: false, maybeWritten: false, heldBy: OutboxEntry?.none))

        public init(kind: OutboxKind, clientId: String, conversationId: String, line: Int? = nil, earlier: Bool = false) {
            self.kind = kind
            self.clientId = clientId
            self.conversationId = kind == .message ? conversationId : ""
            self.line = line
            self.earlier = earlier
        }

        public convenience init(_ entry: OutboxEntry, line: Int? = nil, earlier: Bool = false) {
            self.init(kind: entry.kind, clientId: entry.clientId, conversationId: entry.conversationId, line: line, earlier: earlier)
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
        /// Not sent because this earlier entry of its conversation was not sent (W5); it stays pending.
        public var heldBy: OutboxEntry?
    }

    enum Delivered: Sendable {
        case sent(JSON)
        /// Not ours to send (being sent by a live process, already settled, dropped).
        case notClaimed
        /// An earlier entry of its conversation is not sent (W5).
        case held(OutboxEntry)
    }

    /// Runs `jobs` and reports each one through `report` (one lane per conversation, in queue order within
    /// each; an error `report` returns stops the run).
    public func run(
        _ jobs: [Job], configuration: BulkConfiguration,
        report: @escaping @Sendable (Result) -> StarlineError?
    ) -> BulkEngine.Summary {
        let lanes = OutboxLanes(jobs)
        var configuration = configuration
        configuration.parallel = max(1, min(lanes.count, Self.maxParallelConversations))
        let bulk = BulkRun<Int, Delivered>(configuration)
        return bulk.run(
            source: { lanes.next() }, workers: configuration.parallel,
            attempt: { [self] index in
                attempt(jobs[index], bulk)
            },
            finished: { [self] result in
                // The entry is settled in chat.db before its lane hands out the next one.
                defer { lanes.finished(result.item) }
                return report(finish(jobs[result.item], result))
            })
    }

    func attempt(_ job: Job, _ run: BulkRun<Int, Delivered>) -> BulkAttempt<Delivered> {
        guard sameAccount() else { return .stopRun(Self.accountChanged()) }
        if !job.state.withLock({ $0.tried }) {
            job.state.withLock { $0.tried = true }
            do {
                switch try claim(job, run) {
                case .claimed(let claim):
                    job.state.withLock {
                        $0.claim = claim; $0.maybeWritten = claim.needsLookup
                    }
                case .held(let holder):
                    job.state.withLock { $0.heldBy = holder }
                    return .done(.held(holder))
                case .unavailable: return .done(.notClaimed)
                }
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
            return .throttled(retryAfter: reply.header("Retry-After").flatMap { RetryPolicy.parseRetryAfter($0, now: api.clock.now()) })
        }
        let error = PlatformHTTP.error(status: reply.status, body: reply.body, headers: reply.headers, route: route, now: api.clock.now())
        if error.exitStatus == .sessionEnded { return .stopRun(error) }
        return RetryPolicy.isRetryable(status: reply.status) ? .transient(error) : .failed(error)
    }

    /// Claims the job's entry. While it is held by an earlier entry that another live process is sending, waits
    /// for that process to settle it (reading chat.db, no lock held) and tries again — up to `holderWait`
    /// seconds, or until the run stops; then it is reported held.
    func claim(_ job: Job, _ run: BulkRun<Int, Delivered>) throws -> ChatStore.ClaimOutcome {
        let clock = run.configuration.clock
        let deadline = clock.now() &+ UInt64(min(max(0, holderWait), 86_400) * 1e9)
        var announced = false
        while true {
            let outcome = try store.claim(job.kind, clientId: job.clientId, account: account, owner: owner, now: api.clock.now())
            guard case .held(let holder) = outcome, holder.state == .sending, let sender = holder.owner, sender != owner, sender.isAlive,
                run.stopError == nil, clock.now() < deadline
            else { return outcome }
            if !announced {
                announced = true
                notice(
                    "\(job.clientId) waits for \(holder.clientId), queued before it in \(holder.conversationId), which process \(sender.pid) is sending"
                )
            }
            while run.stopError == nil, clock.now() < deadline, sender.isAlive,
                let current = try store.outboxEntry(holder.clientId, account: account), current.kind == .message,
                current.state == .sending, current.owner == sender
            {
                clock.sleep(100_000_000)
            }
        }
    }

    /// A transport error: transient (the request may have been written unless the connection never opened),
    /// the end of the run when every send would meet it (an untrusted certificate: the entry stays pending,
    /// not `failed`, for the flush after the trust is fixed), or a failure of the request itself.
    func classify(_ error: StarlineError, _ job: Job) -> BulkAttempt<Delivered> {
        if RetryPolicy.failsEveryRequest(error) { return .stopRun(error) }
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
                    if let hit = page.first(where: {
                        $0["clientId"]?.stringValue == entry.clientId && $0["authorId"]?.stringValue == account.userId
                    }) {
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
    func finish(_ job: Job, _ result: BulkItemResult<Int, Delivered>) -> Result {
        let now = api.clock.now()
        guard let claim = job.claim else {
            // Tried and not claimed: held by an earlier entry, another process has it, or it was settled (sent,
            // failed, dropped) already — only the second is busy. Never tried: the run stopped first.
            let current = (try? store.outboxEntry(job.clientId, account: account)) ?? nil
            let heldBy = job.state.withLock { $0.heldBy }
            let busy = heldBy == nil && current?.state.isOpen == true && job.state.withLock { $0.tried }
            return Result(job: job, entry: current, busy: busy, attempts: 0, error: result.error, heldBy: heldBy)
        }
        let settlement: ChatStore.Settlement
        switch result.value {
        case .sent(let json)?: settlement = .sent(json)
        case .notClaimed?, .held?: settlement = .open(maybeWritten: job.maybeWritten, nil)
        case nil:
            let error = result.error ?? StarlineError(.internalError, "the send ended without a result")
            // A 429 storm the run stopped waiting out is not a refusal: the entry stays queued.
            let permanent =
                result.failure == .failed && !error.retryable && error.code != .sessionChanged && error.exitStatus != .sessionEnded
                && error.code != .storage && error.code != .rateLimited && !RetryPolicy.failsEveryRequest(error)
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
        StarlineError(
            .sessionChanged,
            """
            the stored account changed during the send; it stopped (nothing was sent or stored for the new account; a \
            message in flight stays in the old account's outbox as unknown)
            """)
    }

    static func starline(_ error: any Error) -> StarlineError {
        (error as? StarlineError) ?? StarlineError(.internalError, "\(error)")
    }
}
