import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// Every cursor or page chain remembers what it has seen: a server whose cursors go round in a cycle of any
/// length (c1 → c2 → c1 …) stops `sl-chat sync`, `sl-chat tail` (also following), the history pages a gap is
/// backfilled from and `sl-sessions list --all-users` with DATA_ERROR (exit 12) naming the route and the
/// cursor; a follower whose server answers at once with nothing backs off instead of asking in a hot loop.
/// The server is hostile, written here; the session is a real one from sl-devserver.
@Suite struct CursorCycleTests {
    /// A `read` event (a type the cache passes on untouched) with its seq and cursor.
    static func event(seq: Int, cursor: String) -> JSON {
        .object([
            ("seq", .int(seq)), ("type", .string("read")), ("cursor", .string(cursor)),
            ("read", .object([("conversationId", .string("c_x")), ("lastReadSeq", .int(seq))]))
        ])
    }

    static func message(seq: Int) -> JSON {
        .object([
            ("id", .string("m\(seq)")), ("clientId", .string("k\(seq)")), ("conversationId", .string("c_x")), ("senderId", .string("bob")),
            ("text", .string("message \(seq)")), ("createdAt", .string("2025-01-01T00:00:00Z")), ("seq", .int(seq))
        ])
    }

    /// `GET /chat/v1/sync` whose cursors go round `cycle`: without `since` the first, after each the next, after
    /// the last the first again; each page has one event (or none, `emptyPages`).
    static func cyclingSync(_ cycle: [String], emptyPages: Bool = false) -> HostileHTTPServer.Handler {
        { request in
            guard request.path == "/chat/v1/sync" else { return (404, HostileHTTPServer.error("NOT_FOUND")) }
            let index = request.query["since"].flatMap { cycle.firstIndex(of: $0) }.map { ($0 + 1) % cycle.count } ?? 0
            let events: [JSON] = emptyPages ? [] : [event(seq: index + 1, cursor: cycle[index])]
            return (200, .object([("events", .array(events)), ("cursor", .string(cycle[index]))]))
        }
    }

    /// A signed-in alice (the session from a real devserver) whose chat base is `hostile`.
    func harness(_ hostile: HostileHTTPServer) throws -> (SessionToolsHarness, [String: String]) {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("alice")
        return (h, ["STARLINE_CHAT_BASE_URL": hostile.baseURL + "/chat"])
    }

    /// Runs sl-chat, killing it after 30 s: on the old code it never ended.
    func chat(_ h: SessionToolsHarness, _ arguments: [String], _ environment: [String: String]) throws -> ToolRun {
        try h.spawn("sl-chat", arguments, environment: environment).waitOrKill(seconds: 30)
    }

    /// The error object: the line of stderr that is one (a follower's notices may come before it).
    func error(_ run: ToolRun) -> JSON? {
        run.stderrText.split(separator: "\n").lazy.compactMap { try? JSON.parse(String($0)) }.first { $0["error"] != nil }?["error"]
    }

    func expectCycle(_ run: ToolRun, route: String, cursor: String, _ what: String) throws {
        #expect(run.status == 12, "\(what): \(run.stderrText.prefix(400))")
        #expect(error(run)?["code"]?.stringValue == "DATA_ERROR", "\(what): \(run.stderrText.prefix(400))")
        let details = error(run)?["details"]
        #expect(details?["route"]?.stringValue == route, "\(what): \(run.stderrText.prefix(400))")
        #expect(details?["cursor"]?.stringValue == cursor, "\(what): \(run.stderrText.prefix(400))")
    }

    @Test("sync: a cursor cycle of length 2 or 3 is DATA_ERROR after one round", arguments: [["c1", "c2"], ["c1", "c2", "c3"]])
    func syncStopsAtACursorCycle(_ cycle: [String]) throws {
        let hostile = try HostileHTTPServer(Self.cyclingSync(cycle))
        let (h, env) = try harness(hostile)
        let run = try chat(h, ["sync"], env)
        try expectCycle(run, route: "GET /v1/sync", cursor: "c1", "sync over \(cycle)")
        #expect(hostile.count("/chat/v1/sync") <= cycle.count + 2, "it stopped at the first cursor that came back")
    }

    @Test(
        "tail, drained and following: a cursor cycle is DATA_ERROR", arguments: [["tail"], ["tail", "--follow"], ["tail", "--cursor", "t"]])
    func tailStopsAtACursorCycle(_ arguments: [String]) throws {
        let hostile = try HostileHTTPServer(Self.cyclingSync(["c1", "c2", "c3"]))
        let (h, env) = try harness(hostile)
        let run = try chat(h, arguments, env)
        try expectCycle(run, route: "GET /v1/sync", cursor: "c1", "\(arguments)")
        // Each event was delivered once: the cycle stopped the run before the first one came round again.
        let seqs = try run.jsonLines().compactMap { $0["seq"]?.intValue }
        #expect(seqs == [1, 2, 3], "\(arguments): \(run.stdoutText)")
    }

    @Test("tail --follow: empty answers whose cursors go round are a cycle too")
    func followStopsAtACycleOfEmptyPages() throws {
        let hostile = try HostileHTTPServer(Self.cyclingSync(["c1", "c2"], emptyPages: true))
        let (h, env) = try harness(hostile)
        let run = try chat(h, ["tail", "--follow"], env)
        try expectCycle(run, route: "GET /v1/sync", cursor: "c1", "tail --follow over empty pages")
    }

    @Test("tail --follow: a server answering at once with an empty page and the same cursor is asked with growing pauses")
    func followBacksOffFromAnswersWithoutProgress() throws {
        let hostile = try HostileHTTPServer { request in
            (200, .object([("events", .array([])), ("cursor", .string("c1"))]))
        }
        let (h, env) = try harness(hostile)
        let follower = try h.spawn("sl-chat", ["tail", "--follow"], environment: env)
        let askedThrice = eventually { hostile.count("/chat/v1/sync") >= 3 }
        follower.signal(SIGTERM)
        let run = follower.waitOrKill(seconds: 30)
        #expect(askedThrice, "it keeps asking: \(run.stderrText.prefix(400))")
        // A hot loop asks again at once; the pauses (0.25–0.5 s, then 0.5–1 s, doubling) keep each gap above 0.2 s.
        let arrivals = hostile.requests.filter { $0.path == "/chat/v1/sync" }.prefix(3).map(\.arrived)
        let gaps = zip(arrivals.dropFirst(), arrivals).map { Double($0 - $1) / 1e9 }
        #expect(gaps.count == 2 && gaps.allSatisfy { $0 >= 0.2 }, "seconds between requests: \(gaps)")
        #expect(run.stderrText.contains("no new event"), "\(run.stderrText.prefix(400))")
    }

    @Test("the history pages a gap is backfilled from: a full page that does not move past `after` is DATA_ERROR")
    func backfillStopsWhenHistoryPagesDoNotMoveOn() throws {
        let hostile = try HostileHTTPServer { request in
            switch request.path {
            case "/chat/v1/sync":
                // One event, then the cursor is expired: a gap, backfilled from history.
                if request.query["since"] == nil {
                    return (200, .object([("events", .array([Self.event(seq: 1, cursor: "c1")])), ("cursor", .string("c1"))]))
                }
                return (410, HostileHTTPServer.error("CURSOR_EXPIRED"))
            case "/chat/v1/conversations/c_x/messages":
                // The same full page whatever `after` says.
                return (200, .object([("messages", .array((1...200).map { Self.message(seq: $0) }))]))
            default:
                return (404, HostileHTTPServer.error("NOT_FOUND"))
            }
        }
        let (h, env) = try harness(hostile)
        let run = try chat(h, ["tail", "c_x"], env)
        #expect(run.status == 12, "\(run.stderrText.prefix(400))")
        #expect(error(run)?["code"]?.stringValue == "DATA_ERROR")
        #expect(error(run)?["details"]?["route"]?.stringValue == "GET /v1/conversations/{id}/messages")
        #expect(hostile.count("/chat/v1/conversations/c_x/messages") == 2, "the second page was refused, and no third asked for")
        let backfilled = try run.jsonLines().filter { $0["backfill"] == .bool(true) }
        #expect(backfilled.count == 200, "the first page once, nothing again")
    }

    @Test(
        """
        sl-sessions list --all-users: a user-list cursor cycle of length 3 is DATA_ERROR naming the route and the \
        cursor
        """)
    func adminListingStopsAtACycleOfThree() throws {
        let cycle = ["k1", "k2", "k3"]
        let hostile = try HostileHTTPServer { request in
            if request.path == "/api/admin/users" {
                let index = request.query["cursor"].flatMap { cycle.firstIndex(of: $0) }.map { ($0 + 1) % cycle.count } ?? 0
                return (200, .object([("users", .array([.object([("id", .string("u\(index)"))])])), ("nextCursor", .string(cycle[index]))]))
            }
            if request.path.hasPrefix("/api/admin/users/") { return (200, .object([("sessions", .array([]))])) }
            return (404, HostileHTTPServer.error("NOT_FOUND"))
        }
        let home = TemporaryDirectory("admin-cycle")
        let run = try Tools.spawn(
            "sl-sessions", ["list", "--all-users"], home: home.path,
            environment: ["STARLINE_TOKEN": "hostile-test-token", "STARLINE_API_BASE_URL": hostile.baseURL]
        ).waitOrKill(seconds: 30)
        try expectCycle(run, route: "GET /api/admin/users", cursor: "k1", "admin listing")
        #expect(hostile.count("/api/admin/users") == 4)
    }
}
