import Foundation
import StarlineChat
import StarlineCore
import StarlinePlatform
import StarlineTestSupport
import Testing
import StarlineHTTP

/// The chat reads in the domain (ChatReader), in-process over a scripted transport and a real chat.db: one
/// freshness policy, and W8/S14/S15 applied before anything is stored.
@MainActor @Suite struct ChatReaderTests {
    nonisolated static let now: Int64 = 1_790_000_000
    static let conversations = #"{"conversations":[{"id":"c_team","kind":"group","title":"Team","unread":2}]}"#

    let home = TemporaryDirectory("chat-reader")
    let sameAccount = Locked(true)
    let ended = Locked<[String]>([])

    func reader(_ transport: ScriptedTransport) throws -> ChatReader {
        let base = try BaseURL(validating: "http://127.0.0.1:8080")
        let paths = StarlinePaths(
            config: home.file("config"), state: home.file("state"), data: home.file("data"), runtime: home.file("runtime"))
        let api = ChatAPI(
            base: base, token: "t", transport: transport, timeout: 5,
            clock: RetryClock(StarlineClock.system.withWallTime { Timestamp(seconds: Self.now) }))
        let (same, ended) = (sameAccount, ended)
        return ChatReader(
            api: api, store: try ChatStore(paths: paths), account: ChatAccount(chatBase: base, userId: "u_alice"),
            accountGuard: ChatReader.AccountGuard(
                sameAccount: { same.withLock { $0 } },
                sessionEnded: { error in
                    ended.withLock { $0.append(error.code.rawValue) }
                    return StarlineError(.sessionRevoked, "cleared: \(error.message)")
                }))
    }

    @Test("W4 a read within --max-age is served from the cache, once fetched; --max-age 0 asks the server again")
    func w4FreshnessDecidesCacheOrServer() throws {
        let stub = ScriptedTransport().expect("GET", "/v1/conversations", json: Self.conversations, times: 2)
        let reader = try reader(stub)
        let fresh = ChatReader.Freshness(offline: false, maxAge: 60)
        let first = try reader.conversations(fresh, now: Self.now)
        #expect(first.source.origin == .server && first.conversations.count == 1)
        let second = try reader.conversations(fresh, now: Self.now + 30)
        #expect(second.source.origin == .cache && second.source.freshAsOf == Self.now)
        #expect(second.conversations.first?["title"]?.stringValue == "Team")
        // Older than --max-age, or --max-age 0: the server again.
        #expect(try reader.conversations(fresh, now: Self.now + 61).source.origin == .server)
        #expect(stub.received.count == 2)
        let noCache = try reader.conversations(ChatReader.Freshness(offline: true, maxAge: 0), now: Self.now + 62)
        #expect(noCache.source.origin == .cache)
    }

    @Test("W9 redeeming a friend link in the domain keeps the friend in the cache: friends --offline knows them at once")
    func w9RedeemCachesTheFriend() throws {
        let answer = #"{"friend":{"id":"u_bob","name":"bob"},"alreadyFriends":false}"#
        let stub = ScriptedTransport().expect("POST", "/v1/friend-links/AbCdEfGh1234/redeem", json: answer)
        let first = try reader(stub)
        #expect(try first.redeemFriendLink(code: "AbCdEfGh1234")["alreadyFriends"] == .bool(false))
        let cached = try first.friends(offline: true, now: Self.now)
        #expect(cached.source.origin == .cache && cached.friends.compactMap { $0["id"]?.stringValue } == ["u_bob"])
        // An answer after the account changed is discarded: nothing more is cached.
        let again = ScriptedTransport().expect(
            "POST", "/v1/friend-links/ZzZzZzZz9999/redeem", json: #"{"friend":{"id":"u_carol","name":"carol"},"alreadyFriends":false}"#)
        let changed = try reader(again)
        sameAccount.withLock { $0 = false }
        #expect(throws: StarlineError.self) { try changed.redeemFriendLink(code: "ZzZzZzZz9999") }
        sameAccount.withLock { $0 = true }
        #expect(try changed.friends(offline: true, now: Self.now).friends.compactMap { $0["id"]?.stringValue } == ["u_bob"])
    }

    @Test("W4 offline with nothing cached is NO_RESULT, and asks nothing")
    func w4OfflineWithNothingCached() throws {
        let reader = try reader(ScriptedTransport())
        #expect(throws: StarlineError.self) { try reader.conversations(.init(offline: true, maxAge: 60), now: Self.now) }
        do {
            _ = try reader.friends(offline: true, now: Self.now)
        } catch {
            Issue.record("friends offline with an empty cache is an empty list: \(error)")
        }
    }

    @Test("S14 an answer that arrives after the stored account changed is discarded before anything is stored")
    func s14AnAccountChangeDiscardsTheAnswer() throws {
        let stub = ScriptedTransport().expect("GET", "/v1/conversations", json: Self.conversations)
        let reader = try reader(stub)
        sameAccount.withLock { $0 = false }
        do {
            _ = try reader.conversations(.init(offline: false, maxAge: 60), now: Self.now)
            Issue.record("a changed account's answer was returned")
        } catch let error as StarlineError {
            #expect(error.code == .sessionChanged)
        }
        sameAccount.withLock { $0 = true }
        // Nothing was cached from it.
        #expect(throws: StarlineError.self) { try reader.conversations(.init(offline: true, maxAge: 60), now: Self.now) }
    }

    @Test("S15 an answer that ends the session goes through the session's clearing; W8 a stray page is not stored")
    func s15EndedSessionAndW8StrayPage() throws {
        let stray = #"{"messages":[{"id":"m_x","conversationId":"c_other","text":"not ours","seq":5}]}"#
        let stub = ScriptedTransport()
            .expect("GET", "/v1/friends", status: 401, json: #"{"error":{"code":"UNAUTHORIZED","message":"token revoked"}}"#)
            .expect("GET", "/v1/conversations/c_team/messages?limit=2", json: stray)
        let reader = try reader(stub)
        do {
            _ = try reader.friends(offline: false, now: Self.now)
            Issue.record("a 401 was not an error")
        } catch let error as StarlineError {
            #expect(error.message.hasPrefix("cleared: ") && ended.withLock { $0.count == 1 }, "\(error.message)")
        }
        let page = HistoryPage(before: nil, after: nil, limit: 2)
        do {
            _ = try reader.history("c_team", page: page, .init(offline: false, maxAge: 0), now: Self.now)
            Issue.record("a page of another conversation was returned")
        } catch let error as StarlineError {
            #expect(error.code == .data)
        }
        #expect(throws: StarlineError.self) { try reader.history("c_team", page: page, .init(offline: true, maxAge: 0), now: Self.now) }
    }
}
