import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// W4–W8: the built sl-chat against a real sl-devserver (faults injected through its control routes),
/// signed in with the real flows, with real files under a temporary STARLINE_HOME.
@Suite struct SLChatTests {
    static let putRoute = "PUT /chat/v1/conversations/{id}/messages/{clientId}"
    static let putFault = "PUT /chat/v1/conversations/*/messages/*"

    func harness(as user: String = "alice", server: DevServerProcess? = nil) throws -> SessionToolsHarness {
        let h = try SessionToolsHarness(server: try server ?? DevServerProcess())
        try h.storeLogin(user)
        return h
    }

    func chat(_ h: SessionToolsHarness, _ arguments: [String], stdin: [UInt8]? = nil, environment: [String: String] = [:]) throws -> ToolRun
    {
        try h.run("sl-chat", arguments, stdin: stdin, environment: environment)
    }

    /// The server's messages of `conversation` (as alice, a member of both seed conversations).
    func serverMessages(_ h: SessionToolsHarness, _ conversation: String = "c_team") throws -> [JSON] {
        let alice = try h.server.login("alice")
        return try h.server.request("GET", "/chat/v1/conversations/\(conversation)/messages?limit=200", token: alice.token).json()[
            "messages"]?.arrayValue ?? []
    }

    func fault(_ h: SessionToolsHarness, _ fields: [(String, JSON)]) throws {
        #expect(try h.server.dev("POST", "/__dev/faults", .object(fields)).status / 100 == 2)
    }

    func outbox(_ h: SessionToolsHarness, _ extra: [String] = []) throws -> [JSON] {
        try chat(h, ["outbox", "list"] + extra).jsonLines()
    }

    // MARK: Sending (W5)

    @Test func w5SendWithAClientIdIsIdempotentAndAReusedKeyWithOtherTextIsRefused() throws {
        let h = try harness()
        let first = try chat(h, ["send", "c_team", "deploy done", "--client-id", "deploy-42"])
        #expect(first.status == 0, "\(first.stderrText)")
        #expect(try first.json()["state"]?.stringValue == "sent")
        let again = try chat(h, ["send", "c_team", "deploy done", "--client-id", "deploy-42"])
        let againId = try again.json()["message"]?["id"], firstId = try first.json()["message"]?["id"]
        #expect(again.status == 0 && againId == firstId)
        #expect(try again.json()["busy"] == nil, "a settled entry is not one another process is sending")
        let other = try chat(h, ["send", "c_team", "something else", "--client-id", "deploy-42"])
        // A conflict with what is stored (exit 12, as CONFLICT), not a usage error; the message says what to do.
        #expect(other.status == 12)
        #expect(other.errorCode == "CLIENT_ID_CONFLICT" && other.stderrText.contains("give it a new client id"))
        #expect(try serverMessages(h).filter { $0["clientId"]?.stringValue == "deploy-42" }.count == 1)
        #expect(try h.counter(Self.putRoute) == 1, "the second send of a sent entry makes no request")
    }

    @Test func w5TimeoutAfterTheWriteIsUnknownAndSettledByTheEchoNotBySendingBlind() throws {
        let h = try harness()
        // The server stores the message, then answers after the client gave up.
        try fault(h, [("route", .string(Self.putFault)), ("delayMs", .int(3000)), ("count", .int(1))])
        let sent = try chat(h, ["send", "c_team", "report", "--client-id", "r1", "--max-attempts", "1", "--timeout", "1"])
        #expect(sent.status == 7, "\(sent.stderrText)")
        #expect(try outbox(h).first?["state"]?.stringValue == "unknown")
        let flushed = try chat(h, ["outbox", "flush"])
        #expect(flushed.status == 0, "\(flushed.stderrText)")
        #expect(try flushed.jsonLines().first?["state"]?.stringValue == "sent")
        #expect(try h.counter(Self.putRoute) == 1, "settled by the lookup: no second PUT")
        #expect(try serverMessages(h).filter { $0["clientId"]?.stringValue == "r1" }.count == 1)
    }

    @Test func w5ServerErrorBurstsAndRateLimitsAreRetried() throws {
        let h = try harness()
        try fault(h, [("route", .string(Self.putFault)), ("status", .int(503)), ("count", .int(3))])
        let run = try chat(h, ["send", "c_team", "after the storm"])
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(try run.json()["attempts"]?.intValue == 4)
        try fault(
            h,
            [
                ("route", .string(Self.putFault)), ("status", .int(429)), ("count", .int(1)),
                ("headers", .object([("Retry-After", .string("1"))]))
            ])
        let lines = try chat(h, ["send", "c_team", "--lines"], stdin: Array("one\ntwo\nthree\n".utf8))
        #expect(lines.status == 0, "\(lines.stderrText)")
        let records = try lines.jsonLines()
        #expect(records.filter { $0["state"]?.stringValue == "sent" }.map { $0["line"]?.intValue } == [1, 2, 3])
        #expect((records.last?["summary"]?["throttledMs"]?.intValue ?? 0) > 0, "the 429's Retry-After paused the run")
        let texts = try serverMessages(h).compactMap { $0["text"]?.stringValue }
        #expect(Array(texts.suffix(3)) == ["one", "two", "three"], "in order, each once")
    }

    @Test func w5ARefusalIsFailedWithTheServersCodeAndRetryQueuesItAgain() throws {
        let h = try harness()
        let run = try chat(h, ["send", "c_nowhere", "lost?"])
        #expect(run.status == 6, "\(run.stderrText)")
        let entry = try #require(try outbox(h).first)
        #expect(entry["state"]?.stringValue == "failed" && entry["error"]?["code"]?.stringValue == "NOT_FOUND")
        let retried = try chat(h, ["outbox", "retry", entry["clientId"]?.stringValue ?? ""])
        let retriedState = try retried.json()["state"]?.stringValue
        #expect(retried.status == 0 && retriedState == "pending")
        let dropped = try chat(h, ["outbox", "drop", entry["clientId"]?.stringValue ?? ""])
        let left = try outbox(h)
        #expect(dropped.status == 0 && left.isEmpty)
    }

    @Test func w5QueuedSendsSurviveAServerRestartAndAreFlushedOnce() throws {
        let db = TemporaryDirectory("chat-db")
        let port = try Self.freePort()
        var server = try DevServerProcess(["--port", String(port), "--db", db.file("dev.db")])
        let h = try harness(server: server)
        for text in ["a", "b", "c"] { #expect(try chat(h, ["send", "c_team", text, "--queue"]).status == 0) }
        server.stop()
        let offline = try chat(h, ["outbox", "flush", "--max-attempts", "2"])
        #expect(offline.status == 8, "\(offline.stderrText)")
        #expect(try outbox(h).allSatisfy { $0["state"]?.stringValue == "pending" }, "nothing reached a server: pending, not failed")
        server = try DevServerProcess(["--port", String(port), "--db", db.file("dev.db")])
        let h2 = try SessionToolsHarness(server: server, home: h.home)
        let flushed = try chat(h2, ["outbox", "flush"])
        #expect(flushed.status == 0, "\(flushed.stderrText)")
        #expect(try outbox(h2).allSatisfy { $0["state"]?.stringValue == "sent" })
        let texts = try serverMessages(h2).compactMap { $0["text"]?.stringValue }
        #expect(Array(texts.suffix(3)) == ["a", "b", "c"])
    }

    @Test func w5TwoFlushesAtOnceNeverSendOneEntryTwice() throws {
        let h = try harness()
        let texts = (1...40).map { "queued \($0)" }.joined(separator: "\n")
        #expect(try chat(h, ["send", "c_team", "--lines", "--queue"], stdin: Array(texts.utf8)).status == 0)
        let a = try h.spawn("sl-chat", ["outbox", "flush"]), b = try h.spawn("sl-chat", ["outbox", "flush"])
        let ra = a.wait(), rb = b.wait()
        #expect(ra.status == 0 && rb.status == 0, "\(ra.stderrText) \(rb.stderrText)")
        #expect(try h.counter(Self.putRoute) == 40, "each entry was PUT exactly once")
        #expect(try outbox(h, ["--state", "sent"]).count == 40)
        #expect(try serverMessages(h).filter { $0["text"]?.stringValue?.hasPrefix("queued ") == true }.count == 40)
    }

    @Test func w5KillDuringASendLeavesAnOutboxThatALaterFlushCompletes() throws {
        let h = try harness()
        try fault(h, [("route", .string(Self.putFault)), ("delayMs", .int(4000)), ("count", .int(1))])
        let sending = try h.spawn("sl-chat", ["send", "c_team", "in flight", "--client-id", "k1"])
        #expect(eventually { (try? h.counter(Self.putRoute)) == 1 }, "the PUT reached the server")
        sending.signal(SIGKILL)
        _ = sending.wait()
        #expect(try outbox(h).first?["state"]?.stringValue == "sending", "left claimed by a process that is gone")
        let flushed = try chat(h, ["outbox", "flush"])
        #expect(flushed.status == 0, "\(flushed.stderrText)")
        #expect(try outbox(h).first?["state"]?.stringValue == "sent")
        #expect(try serverMessages(h).filter { $0["clientId"]?.stringValue == "k1" }.count == 1)
    }

    // MARK: Identity (S14, S15, W4, W8)

    @Test func s14W8AnAccountSwitchDuringASendIsSessionChangedAndNothingIsTheNewAccounts() throws {
        let h = try harness()
        try fault(h, [("route", .string(Self.putFault)), ("delayMs", .int(2500)), ("count", .int(1))])
        let sending = try h.spawn("sl-chat", ["send", "c_team", "from alice"])
        // The switch lands while the PUT is held at the server (2.5 s), not before it was sent.
        #expect(eventually { (try? h.counter(Self.putRoute)) == 1 }, "the PUT reached the server")
        try h.storeLogin("bob")
        let run = sending.wait()
        #expect(run.status == 11, "\(run.stderrText)")
        #expect(try outbox(h).isEmpty, "bob's outbox holds nothing of alice's send")
        try h.storeLogin("alice")
        let mine = try outbox(h)
        #expect(mine.count == 1 && mine.first?["state"]?.stringValue == "unknown")
        #expect(try chat(h, ["outbox", "flush"]).status == 0)
        let onServer = try serverMessages(h).filter { $0["text"]?.stringValue == "from alice" }
        #expect(onServer.count == 1 && onServer.first?["senderId"]?.stringValue == "alice")
    }

    @Test func s15ARevokedSessionIsClearedByAChatRequest() throws {
        let h = try harness()
        let session = try h.status()["session"]?["id"]?.stringValue ?? ""
        let admin = try h.server.login("alice")
        #expect(try h.server.request("DELETE", "/api/sessions/\(session)", token: admin.token).status == 200)
        let run = try chat(h, ["conversations"])
        #expect(run.status == 4, "\(run.stderrText)")
        #expect(try h.status()["session"] == .null)
    }

    @Test(arguments: [
        "http://chat.example.com", "https://user@chat.thestarline.cn", "https://chat.thestarline.cn/?q=1",
        "https://chat.thestarline.cn/#f", "ftp://127.0.0.1/chat"
    ])
    func w4EveryBaseURLSourceRejectsUnsafeOverrides(_ bad: String) throws {
        let h = try harness()
        let before = try h.server.dev("GET", "/__dev/counters").json()["counters"]
        let flag = try chat(h, ["conversations", "--chat", bad])
        let env = try chat(h, ["conversations"], environment: ["STARLINE_CHAT_BASE_URL": bad])
        let config = h.home.path + "/starline/config"
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        try #"{"defaultProfile":"p","profiles":{"p":{"chat":"\#(bad)"}}}"#.write(
            toFile: config + "/config.json", atomically: true, encoding: .utf8)
        let profile = try h.run("sl-chat", ["conversations"], environment: ["STARLINE_CHAT_BASE_URL": ""])
        for (source, run) in [("flag", flag), ("env", env), ("profile", profile)] {
            #expect(run.status == 2, "\(source): \(run.stderrText)")
            #expect(run.errorCode == "INVALID_URL", "\(source)")
        }
        #expect(
            try h.server.dev("GET", "/__dev/counters").json()["counters"]?["GET /chat/v1/conversations"]
                == before?["GET /chat/v1/conversations"])
    }

    // MARK: Reading, sync and tail

    @Test func readsSayWhereTheyCameFromAndOfflineNeverTouchesTheNetwork() throws {
        let h = try harness()
        let live = try chat(h, ["conversations"]).jsonLines()
        #expect(!live.isEmpty && live.allSatisfy { $0["source"]?.stringValue == "server" })
        #expect(try chat(h, ["sync"]).status == 0)
        let page = try chat(h, ["history", "c_team", "--limit", "200"]).jsonLines()
        #expect(!page.isEmpty && page.allSatisfy { $0["source"]?.stringValue == "server" })
        h.server.stop()
        let cached = try chat(h, ["conversations", "--offline"])
        let cachedLines = try cached.jsonLines()
        #expect(cached.status == 0 && cachedLines.allSatisfy { $0["source"]?.stringValue == "cache" })
        let history = try chat(h, ["history", "c_team", "--limit", "200", "--offline"])
        #expect(history.status == 0, "\(history.stderrText)")
        #expect(try history.jsonLines().map { $0["id"] } == page.map { $0["id"] })
        // Paging both ways from the cache.
        if page.count >= 2, let second = page[1]["seq"]?.intValue, let first = page[0]["seq"]?.intValue {
            let older = try chat(h, ["history", "c_team", "--before", String(second), "--offline"]).jsonLines()
            #expect(older.map { $0["seq"] } == [.int(first)])
            let newer = try chat(h, ["history", "c_team", "--after", String(first), "--limit", "1", "--offline"]).jsonLines()
            #expect(newer.map { $0["seq"] } == [.int(second)])
        }
        let unread = try chat(h, ["unread", "--offline"])
        let unreadLines = try unread.jsonLines()
        #expect(unread.status == 0 && unreadLines.allSatisfy { $0["source"]?.stringValue == "cache" })
    }

    @Test func unreadAndHistoryMarkNothingReadAndReadMovesTheMark() throws {
        let h = try harness()
        try bobSends(h, ["u1", "u2"])
        func unread() throws -> Int64? {
            try chat(h, ["unread", "--max-age", "0"]).jsonLines().first { $0["conversationId"]?.stringValue == "c_team" }?["unread"]?
                .intValue
        }
        let before = try #require(try unread())
        #expect(before >= 2)
        let page = try chat(h, ["history", "c_team", "--max-age", "0"]).jsonLines()
        #expect(try unread() == before, "neither unread nor history marks anything read")
        let newest = try #require(page.last?["id"]?.stringValue)
        let marked = try chat(h, ["read", "c_team", "--up-to", newest])
        #expect(marked.status == 0, "\(marked.stderrText)")
        #expect(try marked.json()["unread"]?.intValue == 0)
        #expect(try unread() == nil, "nothing unread is listed")
        #expect(try chat(h, ["read", "c_team"]).status == 2, "--up-to is required")
    }

    @Test func aFreshCacheAnswersWithoutARequestAndSaysSo() throws {
        let h = try harness()
        #expect(try chat(h, ["sync"]).status == 0)
        #expect(try chat(h, ["history", "c_team"]).status == 0)  // fetched once: the cache now covers the newest page
        let requests = try h.counter("GET /chat/v1/conversations/{id}/messages")
        let cached = try chat(h, ["history", "c_team", "--max-age", "1h"])
        let cachedPage = try cached.jsonLines()
        #expect(cached.status == 0 && !cachedPage.isEmpty)
        #expect(cachedPage.allSatisfy { $0["source"]?.stringValue == "cache" && $0["freshAsOf"]?.stringValue != nil })
        #expect(try h.counter("GET /chat/v1/conversations/{id}/messages") == requests, "served from the cache")
        let live = try chat(h, ["history", "c_team", "--max-age", "0"])
        #expect(try live.jsonLines().allSatisfy { $0["source"]?.stringValue == "server" })
    }

    @Test func tailFollowReconnectsAfterAServerRestart() throws {
        let db = TemporaryDirectory("chat-db")
        let port = try Self.freePort()
        var server = try DevServerProcess(["--port", String(port), "--db", db.file("dev.db")])
        let h = try harness(server: server)
        try bobSends(h, ["before"])
        let following = try h.spawn("sl-chat", ["tail", "c_team", "--follow", "--cursor", "f"])
        defer { following.signal(SIGTERM); _ = following.wait() }
        #expect(following.waitForStdout { $0.contains("\"before\"") })
        server.stop()
        #expect(following.waitForStderr { $0.contains("reconnecting") }, "it noticed and retries")
        server = try DevServerProcess(["--port", String(port), "--db", db.file("dev.db")])
        let h2 = try SessionToolsHarness(server: server, home: h.home)
        try bobSends(h2, ["after"])
        #expect(following.waitForStdout(seconds: 40) { $0.contains("\"after\"") }, "\(following.stderrSoFar)")
        #expect(following.stdoutSoFar.components(separatedBy: "\"before\"").count == 2, "nothing delivered twice")
    }

    @Test func syncCommitsTheCursorWithTheEventsAndMergesTheEchoOfAQueuedSend() throws {
        let h = try harness()
        #expect(try chat(h, ["send", "c_team", "queued then sent elsewhere", "--queue", "--client-id", "q1"]).status == 0)
        // The same message reaches the server by another way (another device with the same outbox key).
        let alice = try h.server.login("alice")
        #expect(
            try h.server.request(
                "PUT", "/chat/v1/conversations/c_team/messages/q1", token: alice.token,
                body: .json(.object([("text", .string("queued then sent elsewhere"))]))
            ).status == 201)
        let sync = try chat(h, ["sync"])
        #expect(sync.status == 0, "\(sync.stderrText)")
        #expect((try sync.json()["messages"]?.intValue ?? 0) >= 1)
        #expect(try outbox(h).first?["state"]?.stringValue == "sent", "merged with its echo by clientId")
        #expect(try chat(h, ["sync"]).json()["events"]?.intValue == 0, "the cursor was committed")
        #expect(try h.counter(Self.putRoute) == 1, "the outbox did not send it again")
    }

    func bobSends(_ h: SessionToolsHarness, _ texts: [String]) throws {
        let bob = try h.server.login("bob")
        for (i, text) in texts.enumerated() {
            let id = "bob-\(text.hashValue & 0xffffff)-\(i)"
            #expect(
                try h.server.request(
                    "PUT", "/chat/v1/conversations/c_team/messages/\(id)", token: bob.token,
                    body: .json(.object([("text", .string(text))]))
                ).status == 201)
        }
    }

    func messageTexts(_ run: ToolRun) throws -> [String] {
        try run.jsonLines().filter { $0["type"]?.stringValue == "message" }.compactMap { $0["message"]?["text"]?.stringValue }
    }

    @Test func tailWithACursorDeliversEveryEventOnceAndOneConsumerAtATime() throws {
        let h = try harness()
        try bobSends(h, ["m1", "m2", "m3"])
        #expect(try messageTexts(try chat(h, ["tail", "c_team", "--cursor", "log"])) == ["m1", "m2", "m3"])
        try bobSends(h, ["m4"])
        #expect(try messageTexts(try chat(h, ["tail", "c_team", "--cursor", "log"])) == ["m4"])
        #expect(try messageTexts(try chat(h, ["tail", "c_team", "--cursor", "log"])) == [])
        let following = try h.spawn("sl-chat", ["tail", "c_team", "--cursor", "log", "--follow"])
        defer { following.signal(SIGTERM); _ = following.wait() }
        try bobSends(h, ["m5"])
        // Once it printed m5 it holds the cursor and is following: a second consumer is refused at once.
        #expect(following.waitForStdout { $0.contains("\"m5\"") }, "follower: \(following.stderrSoFar)")
        let busy = try chat(h, ["tail", "c_team", "--cursor", "log"])
        #expect(busy.status == 10 && busy.errorCode == "CURSOR_IN_USE", "\(busy.stderrText)")
        try bobSends(h, ["m6"])
        #expect(following.waitForStdout { $0.contains("\"m6\"") }, "the follower goes on")
        #expect(following.stdoutSoFar.components(separatedBy: "\"m4\"").count == 1, "nothing the cursor had delivered is repeated")
    }

    @Test func aNewCursorFromNowStartsAtTheEndOfTheStream() throws {
        let h = try harness()
        try bobSends(h, ["old1", "old2"])
        #expect(try messageTexts(try chat(h, ["tail", "c_team", "--cursor", "fresh", "--from", "now"])) == [])
        try bobSends(h, ["new1"])
        #expect(
            try messageTexts(try chat(h, ["tail", "c_team", "--cursor", "fresh", "--from", "now"])) == ["new1"],
            "--from only places a new cursor")
        #expect(
            try messageTexts(try chat(h, ["tail", "c_team", "--cursor", "other"])) == ["old1", "old2", "new1"],
            "a new cursor starts at the start by default")
        let mismatch = try chat(h, ["tail", "c_alice_bob", "--cursor", "fresh"])
        #expect(mismatch.status == 2, "a cursor follows the conversation it was made for: \(mismatch.stderrText)")
    }

    @Test func tailConsumerKilledBetweenPrintAndCommitSeesThePageAgain() throws {
        let h = try harness()
        try bobSends(h, ["k1", "k2"])
        let killed = try chat(h, ["tail", "c_team", "--cursor", "c"], environment: ["STARLINE_TEST_TAIL_KILL_AFTER_PRINT": "1"])
        #expect(killed.killedBy == SIGKILL)
        #expect(try messageTexts(killed) == ["k1", "k2"], "printed and flushed before it died")
        #expect(
            try messageTexts(try chat(h, ["tail", "c_team", "--cursor", "c"])) == ["k1", "k2"], "at least once: the uncommitted page again")
        #expect(try messageTexts(try chat(h, ["tail", "c_team", "--cursor", "c"])) == [], "and then never twice")
    }

    @Test func tailReportsAGapAfterEventExpiryAndBackfillsEachMessageOnce() throws {
        let h = try harness(server: try DevServerProcess(["--event-retention", "10"]))
        try bobSends(h, ["g1", "g2"])  // 6 events: one per member of c_team
        #expect(try messageTexts(try chat(h, ["tail", "c_team", "--cursor", "g"])) == ["g1", "g2"])
        let more = (3...14).map { "g\($0)" }
        try bobSends(h, more)
        let run = try chat(h, ["tail", "c_team", "--cursor", "g"])
        #expect(run.status == 0, "\(run.stderrText)")
        let lines = try run.jsonLines()
        #expect(lines.first?["type"]?.stringValue == "gap" && lines.first?["reason"]?.stringValue == "CURSOR_EXPIRED")
        #expect(
            try messageTexts(run) == more, "every missed message once, in order: backfilled, then none repeated from the retained events")
        #expect(lines.contains { $0["backfill"] == .bool(true) })
        #expect(try messageTexts(try chat(h, ["tail", "c_team", "--cursor", "g"])) == [])
    }

    // MARK: Friends and moments

    @Test func w6FriendLinkRoundTripThroughAQRCode() throws {
        let h = try harness()
        let link = try chat(h, ["friend-link", "create"])
        #expect(link.status == 0, "\(link.stderrText)")
        let url = try link.json()["url"]?.stringValue ?? ""
        #expect(url.hasPrefix(h.server.chatBase + "/f/"))
        let png = h.home.file("invite.png")
        #expect(try h.run("sl-qr", ["encode", "-o", png, url]).status == 0)
        let scanned = try h.run("sl-qr", ["decode", png])
        #expect(try scanned.json()["kind"]?.stringValue == "friendLink")
        try h.storeLogin("carol")
        let redeemed = try chat(h, ["friend-link", "redeem", "-"], stdin: scanned.stdout)
        #expect(redeemed.status == 0, "\(redeemed.stderrText)")
        #expect(try redeemed.json()["friend"]?["id"]?.stringValue == "alice")
        #expect(try chat(h, ["friends"]).jsonLines().contains { $0["id"]?.stringValue == "alice" })
        // Again (a rerun): a success that changes nothing.
        let again = try chat(h, ["friend-link", "redeem", url])
        let againFriends = (try? again.json())?["alreadyFriends"]
        #expect(again.status == 0 && againFriends == .bool(true), "\(again.stderrText)")
        // Each failure of the link has its own code and exit status.
        let users = try h.server.dev("POST", "/__dev/users", .object([("count", .int(1)), ("prefix", .string("dave"))])).json()
        try h.storeLogin(try #require(users["users"]?.arrayValue?.first?.stringValue))
        let used = try chat(h, ["friend-link", "redeem", url])
        #expect(used.status == 12 && used.errorCode == "FRIEND_LINK_USED", "a used link: \(used.stderrText)")
        #expect(used.stderrText.contains("ask for a new one"))
        let unknown = try chat(h, ["friend-link", "redeem", h.server.chatBase + "/f/unknownCode123"])
        #expect(unknown.status == 6 && unknown.errorCode == "FRIEND_LINK_NOT_FOUND", "\(unknown.stderrText)")
        try h.storeLogin("alice")
        let own = try chat(h, ["friend-link", "redeem", url])
        #expect(own.status == 2 && own.errorCode == "OWN_FRIEND_LINK", "\(own.stderrText)")
    }

    @Test(arguments: [
        "https://chat.thestarline.cn.evil.example/f/abcdefgh1234", "http://127.0.0.1:1/chat/f/abcdefgh1234",
        "short", #"{"kind":"url","text":"https://example.com"}"#, "https://chat.thestarline.cn/f/abcdefgh1234?x=1",
        // A link of the default service while the dev server is configured: its code means nothing here.
        "https://chat.thestarline.cn/f/abcdefgh1234", "chat.thestarline.cn.evil.example/f/abcdefgh1234"
    ])
    func w6FriendLinkRedeemRefusesAnythingElseBeforeAnyRequest(_ input: String) throws {
        let h = try harness()
        let run = try chat(h, ["friend-link", "redeem", input])
        #expect(run.status == 2, "\(input): \(run.stderrText)")
        #expect(run.errorCode == "INVALID_FRIEND_LINK")
        #expect(try h.counter("POST /chat/v1/friend-links/{code}/redeem") == 0)
        // An address is told which chat service was expected, not how long a code may be.
        if input.contains("/"), !input.hasPrefix("{") {
            #expect(!run.stderrText.contains("8 to 64") && run.stderrText.contains(h.server.chatBase), "\(input): \(run.stderrText)")
        }
    }

    @Test func w7MomentsUseTheChatIdentityAndArePostedThroughTheOutboxIdempotently() throws {
        let h = try harness()
        let first = try chat(h, ["moments", "post", "shipped", "--client-id", "m-1"])
        #expect(first.status == 0, "\(first.stderrText)")
        let posted = try first.json()
        #expect(posted["kind"]?.stringValue == "moment" && posted["state"]?.stringValue == "sent")
        #expect(try chat(h, ["moments", "post", "shipped", "--client-id", "m-1"]).status == 0)
        #expect(try chat(h, ["moments", "post", "other", "--client-id", "m-1"]).status == 12)
        let feed = try chat(h, ["moments", "list"]).jsonLines()
        #expect(feed.filter { $0["clientId"]?.stringValue == "m-1" }.count == 1)
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
