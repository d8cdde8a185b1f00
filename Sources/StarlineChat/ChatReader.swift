import StarlineCore

/// The reads of sl-chat — conversations, a page of history, friends, moments — each the same way: served from
/// the cache when the freshness policy allows, otherwise fetched, checked against the account (W8), stored, and
/// returned with where it came from (`ReadSource`). Network and persistence meet here, not in the commands
/// (W9): a command binds its options, asks, and prints.
public struct ChatReader: Sendable {
    /// When the cache may answer: always with `offline`, else when it was refreshed within `maxAge` seconds
    /// (0: always ask the server).
    public struct Freshness: Sendable {
        public var offline: Bool
        public var maxAge: Int64

        public init(offline: Bool, maxAge: Int64) {
            self.offline = offline
            self.maxAge = maxAge
        }

        /// True when data fetched at `at` may be served from the cache `now`.
        public func allowsCache(fetchedAt at: Int64?, now: Int64) -> Bool {
            if offline { return true }
            guard let at, maxAge > 0 else { return false }
            return now - at <= maxAge && now >= at
        }
    }

    /// S14 and S15 around every request: `sameAccount` is asked after the answer, before anything is stored or
    /// returned; `sessionEnded` turns an answer that ended the session into the run's error (clearing the stored
    /// session only if it is still the one the request carried). On the main actor, where the session client
    /// keeps its state: the reads run there, as the chat commands do.
    public struct AccountGuard: Sendable {
        public let sameAccount: @Sendable () -> Bool
        public let sessionEnded: @MainActor @Sendable (StarlineError) -> StarlineError

        public init(
            sameAccount: @escaping @Sendable () -> Bool, sessionEnded: @escaping @MainActor @Sendable (StarlineError) -> StarlineError
        ) {
            self.sameAccount = sameAccount
            self.sessionEnded = sessionEnded
        }

        /// Runs `body` (a request and what follows it) under S14 and S15.
        @MainActor public func run<T>(_ body: () throws -> T) throws -> T {
            do {
                let result = try body()
                try check()
                return result
            } catch let error as StarlineError where error.exitStatus == .sessionEnded {
                try check()
                throw sessionEnded(error)
            }
        }

        public func check() throws {
            guard sameAccount() else {
                throw StarlineError(.sessionChanged, "the stored account changed while the request was in flight; its result was discarded")
            }
        }
    }

    public let api: ChatAPI
    let store: ChatStore
    public let account: ChatAccount
    public let accountGuard: AccountGuard

    public init(api: ChatAPI, store: ChatStore, account: ChatAccount, accountGuard: AccountGuard) {
        self.api = api
        self.store = store
        self.account = account
        self.accountGuard = accountGuard
    }

    /// The conversation list.
    @MainActor
    public func conversations(_ freshness: Freshness, now: Int64) throws -> (conversations: [JSON], source: ReadSource) {
        let cached = try store.conversations(account: account)
        if freshness.allowsCache(fetchedAt: cached.fetchedAt, now: now) {
            guard cached.fetchedAt != nil else {
                throw StarlineError(
                    .noResult,
                    "nothing is cached for \(account.userId) at \(account.chatBase) yet; run sl-chat conversations (or sync) once online")
            }
            return (cached.conversations, ReadSource(.cache, freshAsOf: cached.fetchedAt))
        }
        let conversations = try accountGuard.run { try api.conversations() }
        try store.storeConversations(conversations, account: account, now: now)
        return (conversations, ReadSource(.server, freshAsOf: now))
    }

    /// A page of a conversation's messages: from the cache when it holds the whole page and was synced recently
    /// enough, else from the server — whose answer must be of that conversation (W8) before it is stored.
    @MainActor
    public func history(_ conversation: String, page: HistoryPage, _ freshness: Freshness, now: Int64) throws
        -> (messages: [ChatMessage], source: ReadSource)
    {
        let synced = try store.syncState(account: account).syncedAt
        if freshness.allowsCache(fetchedAt: synced, now: now),
            let cached = try store.cachedHistory(page, account: account, conversation: conversation)
        {
            return (cached, ReadSource(.cache, freshAsOf: synced))
        }
        if freshness.offline {
            throw StarlineError(.noResult, "this page of \(conversation) is not in the cache (run sl-chat sync or history once online)")
        }
        let messages = try accountGuard.run {
            try api.messages(conversation: conversation, before: page.before, after: page.after, limit: page.limit)
        }
        guard messages.allSatisfy({ $0.conversationId == conversation }) else { throw Self.wrongConversation(conversation) }
        try store.storeHistory(messages, page: page, account: account, conversation: conversation, now: now)
        return (messages, ReadSource(.server, freshAsOf: now))
    }

    /// The friend list: the cache with `offline`, else the server's (which replaces the cached one).
    @MainActor
    public func friends(offline: Bool, now: Int64) throws -> (friends: [JSON], source: ReadSource) {
        if offline { return (try store.friends(account: account), ReadSource(.cache, freshAsOf: nil)) }
        let friends = try accountGuard.run { try api.friends() }
        try store.storeFriends(friends, account: account)
        return (friends, ReadSource(.server, freshAsOf: now))
    }

    /// A page of the moments feed, newest first, from the server (and kept in the cache).
    @MainActor
    public func moments(before: String?, limit: Int, now: Int64) throws -> (moments: [JSON], source: ReadSource) {
        let moments = try accountGuard.run { try api.moments(before: before, limit: limit) }
        try store.storeMoments(moments, account: account, now: now)
        return (moments, ReadSource(.server, freshAsOf: now))
    }

    /// Redeems a friend link (`POST /v1/friend-links/{code}/redeem`) and keeps the friend it names in the cached
    /// friend list, so `friends --offline` knows them at once; a cache that cannot be written does not undo the
    /// redemption, which the server has made.
    @MainActor
    public func redeemFriendLink(code: String) throws -> JSON {
        let answer = try accountGuard.run { try api.redeemFriendLink(code: code) }
        if let friend = answer["friend"], friend["id"]?.stringValue != nil {
            try? store.addFriends([friend], account: account)
        }
        return answer
    }

    static func wrongConversation(_ conversation: String) -> StarlineError {
        StarlineError(.data, "the server answered with messages of another conversation than \(conversation); nothing was stored")
    }
}
