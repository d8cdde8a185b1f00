import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// `GET /chat/v1/sync?timeout=N` waits on the server's lock condition: woken at once by events for its user,
/// re-waiting when woken by events for others, answering empty at its deadline.
@Suite struct DevServerLongPollTests {
    /// Polls `/chat/v1/sync` on a thread of its own; `finish()` waits for the answer and the time it took.
    final class Poll: @unchecked Sendable {
        private let done = DispatchGroup()
        private let outcome = Locked<(HTTPResult?, Duration)>((nil, .zero))

        init(_ server: DevServerProcess, token: String, since: String, timeout: Int) {
            done.enter()
            Thread.detachNewThread { [self] in
                let clock = ContinuousClock(), started = clock.now
                let result = try? server.request("GET", "/chat/v1/sync?since=\(since)&timeout=\(timeout)", token: token)
                outcome.withLock { $0 = (result, clock.now - started) }
                done.leave()
            }
        }

        func finish() throws -> (events: [JSON], elapsed: Duration) {
            done.wait()
            let (result, elapsed) = outcome.withLock { $0 }
            return (try #require(result).json()["events"]?.arrayValue ?? [], elapsed)
        }
    }

    func cursor(_ server: DevServerProcess, _ token: String) throws -> String {
        try #require(try server.request("GET", "/chat/v1/sync", token: token).json()["cursor"]?.stringValue)
    }

    @Test("a send wakes every long poll of its members at once; another user's poll waits on to its deadline")
    func sendWakesMembersOnly() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice"), bob = try server.login("bob"), carol = try server.login("carol")
        let cursors = try [alice, bob, carol].map { try cursor(server, $0.token) }
        let asked = try server.requests("GET /chat/v1/sync")
        let polls = [
            Poll(server, token: alice.token, since: cursors[0], timeout: 30),
            Poll(server, token: bob.token, since: cursors[1], timeout: 30)
        ]
        let bystander = Poll(server, token: carol.token, since: cursors[2], timeout: 3)
        #expect(try server.waitForRequests("GET /chat/v1/sync", atLeast: asked + 3), "the three polls reached the server")
        let sent = ContinuousClock().now
        #expect(
            try server.request(
                "PUT", "/chat/v1/conversations/c_alice_bob/messages/lp1", token: alice.token,
                body: .json(.object([("text", .string("wake"))]))
            ).status == 201)
        for poll in polls {
            let (events, _) = try poll.finish()
            #expect(events.compactMap { $0["message"]?["text"]?.stringValue } == ["wake"])
        }
        // Well before the 30 s deadline: the send's broadcast woke them.
        #expect(ContinuousClock().now - sent < .seconds(10))
        let (events, elapsed) = try bystander.finish()
        #expect(events.isEmpty)
        #expect(elapsed >= .milliseconds(2_900))
    }

    @Test("with no event a long poll answers empty at its deadline, not before")
    func timesOutAtItsDeadline() throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        let (events, elapsed) = try Poll(server, token: bob.token, since: cursor(server, bob.token), timeout: 1).finish()
        #expect(events.isEmpty)
        #expect(elapsed >= .milliseconds(950))
        #expect(elapsed < .seconds(10))
        let (immediate, quick) = try Poll(server, token: bob.token, since: cursor(server, bob.token), timeout: 0).finish()
        #expect(immediate.isEmpty)
        #expect(quick < .seconds(5))
    }

    @Test(
        """
        --max-poll-wait cuts a poll's timeout: asked for 30 s, it answers empty at the cap; a timeout out of range is \
        still 400
        """)
    func maxPollWaitCutsTheTimeout() throws {
        let server = try DevServerProcess(["--max-poll-wait", "1"])
        let bob = try server.login("bob")
        let (events, elapsed) = try Poll(server, token: bob.token, since: cursor(server, bob.token), timeout: 30).finish()
        #expect(events.isEmpty)
        #expect(elapsed >= .milliseconds(950), "still a long poll, held to the cap")
        #expect(elapsed < .seconds(20), "held \(elapsed): the 30 s asked for, not the 1 s cap")
        #expect(try server.request("GET", "/chat/v1/sync?timeout=31", token: bob.token).errorCode == "INVALID_REQUEST")
    }
}
