import StarlineCore
import StarlineSQLite

/// `sync`: pulls every event after the cache's cursor into the cache, page by page, each page and the
/// cursor after it committed in one transaction (a kill between pages loses nothing and repeats nothing).
public struct ChatSync: Sendable {
    public let api: ChatAPI
    public let store: ChatStore
    public let account: ChatAccount
    let sameAccount: @Sendable () -> Bool

    public init(api: ChatAPI, store: ChatStore, account: ChatAccount, sameAccount: @escaping @Sendable () -> Bool) {
        self.api = api
        self.store = store
        self.account = account
        self.sameAccount = sameAccount
    }

    public struct Report: Sendable {
        public var events = 0
        public var messages = 0
        public var pages = 0
        public var cursor: String?
        public var gaps: [JSON] = []
    }

    static let eventsPerCommit = 10_000

    public func run(pageSize: Int = 1000) throws -> Report {
        var report = Report()
        var cursor = try store.syncState(account: account).cursor
        // Every cursor of the run is remembered: one the server gave before is a cycle (DATA_ERROR).
        var chain = CursorChain(route: ChatEvents.syncRoute, start: cursor)
        // The next page is requested while this one is stored: the server builds it while we write.
        var prefetched: PageFetch?
        var pending: [JSON] = []
        while true {
            let answer = try prefetched.map { try $0.result() } ?? api.sync(since: cursor, limit: pageSize, timeout: 0)
            prefetched = nil
            guard sameAccount() else { throw OutboxDelivery.accountChanged() }
            let now = api.clock.now()
            switch answer {
            case .expired(let code):
                guard cursor != nil else { throw ChatAPI.malformed("GET /v1/sync", "the server refused a sync from the start (\(code))") }
                // A drain ends at its first empty page, so every gap of the run is "in a row".
                guard report.gaps.count < ChatEvents.maximumGapsInARow else { throw ChatEvents.tooManyGaps(report.gaps.count + 1) }
                report.gaps.append(ChatEvents.gap(after: cursor, serverCode: code, now: now))
                let batch = pending
                pending.removeAll()
                try store.transaction { db in
                    try ChatEvents.store(batch, account: account, db, now: now)  // what came before the gap
                    try ChatStore.forgetCoverage(account: account, db)
                    try ChatStore.setSyncState(account: account, cursor: nil, syncedAt: now, db)
                }
                cursor = nil
                chain.restart(at: nil)
            case .events(let events, let next):
                if !events.isEmpty && next == cursor {
                    throw ChatAPI.malformed("GET /v1/sync", "the cursor did not move past a page of events")
                }
                // Checked before the next page is asked for: a cycle makes no further request.
                if !events.isEmpty { try chain.advance(to: next) }
                if !events.isEmpty { prefetched = PageFetch { [api] in try api.sync(since: next, limit: pageSize, timeout: 0) } }
                pending += events
                report.pages += 1
                report.events += events.count
                report.messages += events.reduce(0) { $0 + ($1["type"]?.stringValue == "message" ? 1 : 0) }
                cursor = next
                report.cursor = next
                // Pages are committed a few thousand events at a time, each batch with the cursor after it:
                // a kill loses at most one batch of progress, which the next sync fetches again.
                if pending.count >= Self.eventsPerCommit || events.isEmpty {
                    let batch = pending
                    pending.removeAll(keepingCapacity: true)
                    // Not durable: the cursor commits with its events, so a batch lost in a power cut is fetched again.
                    try store.transaction(durable: false) { db in
                        try ChatEvents.store(batch, account: account, db, now: now)
                        try ChatStore.setSyncState(account: account, cursor: next, syncedAt: now, db)
                    }
                }
                if events.isEmpty { return report }
            }
        }
    }
}

/// A sync request running on a thread of its own while the caller stores the page before it.
final class PageFetch: Sendable {
    private let outcome = Locked<Result<SyncAnswer, StarlineError>?>(nil)

    init(_ fetch: @escaping @Sendable () throws -> SyncAnswer) {
        let outcome = self.outcome
        let body: @Sendable () -> Void = {
            let result: Result<SyncAnswer, StarlineError>
            do { result = .success(try fetch()) } catch {
                result = .failure((error as? StarlineError) ?? StarlineError(.internalError, "\(error)"))
            }
            outcome.withLockNotifying { $0 = result }
        }
        // No thread to be had: fetch on this one (the caller then waits no longer than it would have).
        if !WorkerThreads.detach(body) { body() }
    }

    func result() throws -> SyncAnswer {
        try outcome.await { $0 }!.get()
    }
}
