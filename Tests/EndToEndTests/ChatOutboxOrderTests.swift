import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// W5: the entries of one conversation leave the outbox in the order they were queued — under 503s, 429s,
/// connection resets and timeouts after the write, with two flushes and a send running at once — and an
/// entry that was refused (`failed`) holds back the rest of its conversation, and only of its conversation,
/// until it is retried or dropped. The built sl-chat against a real sl-devserver; faults are injected on
/// one entry's own route (`PUT …/messages/CLIENT_ID`), so the other entries are answered normally.
@Suite struct ChatOutboxOrderTests {
    static let putRoute = "PUT /chat/v1/conversations/{id}/messages/{clientId}"

    func harness() throws -> SessionToolsHarness {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("alice")
        return h
    }

    func chat(_ h: SessionToolsHarness, _ arguments: [String], stdin: [UInt8]? = nil) throws -> ToolRun {
        try h.run("sl-chat", arguments, stdin: stdin)
    }

    /// The server's texts of `conversation` starting with `prefix`, in the server's order (oldest first).
    func serverTexts(_ h: SessionToolsHarness, _ conversation: String, prefix: String) throws -> [String] {
        let alice = try h.server.login("alice")
        let messages =
            try h.server.request("GET", "/chat/v1/conversations/\(conversation)/messages?limit=200", token: alice.token).json()["messages"]?
            .arrayValue ?? []
        return messages.compactMap { $0["text"]?.stringValue }.filter { $0.hasPrefix(prefix) }
    }

    /// A fault on the PUT of one entry only.
    func fault(_ h: SessionToolsHarness, conversation: String, clientId: String, _ fields: [(String, JSON)]) throws {
        let route = "PUT /chat/v1/conversations/\(conversation)/messages/\(clientId)"
        #expect(try h.server.dev("POST", "/__dev/faults", .object([("route", .string(route))] + fields)).status == 201)
    }

    func clearFaults(_ h: SessionToolsHarness) throws {
        #expect(try h.server.dev("DELETE", "/__dev/faults").status == 200)
    }

    func outbox(_ h: SessionToolsHarness) throws -> [String: JSON] {
        var byId: [String: JSON] = [:]
        for record in try chat(h, ["outbox", "list"]).jsonLines() { byId[record["clientId"]?.stringValue ?? ""] = record }
        return byId
    }

    func queue(_ h: SessionToolsHarness, _ conversation: String, _ texts: [String], clientId: String) throws {
        let run = try chat(
            h, ["send", conversation, "--lines", "--queue", "--client-id", clientId], stdin: Array(texts.map { $0 + "\n" }.joined().utf8))
        #expect(run.status == 0, "\(run.stderrText)")
    }

    /// Line 1 of a `send --lines` does not get through (its attempts run out, or its answer is lost); the 19
    /// lines after it are held, not sent past it; once it gets through, all 20 are on the server in order.
    @Test(arguments: ["503", "429", "reset", "timeout-after-write"])
    func w5OneConversationLeavesInQueueOrderUnderFaults(_ kind: String) throws {
        let h = try harness()
        var options = ["--max-attempts", "2"]
        switch kind {
        case "503": try fault(h, conversation: "c_team", clientId: "ord.1", [("status", .int(503)), ("count", .int(8))])
        case "429":
            // More 429s than the run waits out (50), each with a Retry-After of 0 s.
            try fault(
                h, conversation: "c_team", clientId: "ord.1",
                [("status", .int(429)), ("count", .int(60)), ("headers", .object([("Retry-After", .string("0"))]))])
        case "reset": try fault(h, conversation: "c_team", clientId: "ord.1", [("reset", .bool(true)), ("count", .int(8))])
        default:
            // The server stores line 1, then answers after the client gave up: line 1 is unknown.
            try fault(h, conversation: "c_team", clientId: "ord.1", [("delayMs", .int(3000)), ("count", .int(1))])
            options = ["--max-attempts", "1", "--timeout", "1"]
        }
        let lines = (1...20).map { "ordered \($0)" }
        let sent = try chat(
            h, ["send", "c_team", "--lines", "--client-id", "ord"] + options, stdin: Array(lines.map { $0 + "\n" }.joined().utf8))
        #expect(sent.status == 8, "\(sent.stderrText)")
        let records = try sent.jsonLines()
        let first = records.first { $0["line"]?.intValue == 1 }
        #expect(["pending", "unknown"].contains(first?["state"]?.stringValue ?? "?"), "line 1 is still open: \(String(describing: first))")
        let held = records.filter { $0["heldBy"]?.stringValue == "ord.1" && $0["state"]?.stringValue == "pending" }.compactMap {
            $0["line"]?.intValue
        }
        #expect(held == Array(2...20), "every later line is held by line 1, not sent")
        #expect(records.last?["summary"]?["held"]?.intValue == 19)
        #expect(
            try serverTexts(h, "c_team", prefix: "ordered ").allSatisfy { $0 == "ordered 1" },
            "no later line reached the server while line 1 was open")
        let listed = try outbox(h)
        #expect((2...20).allSatisfy { listed["ord.\($0)"]?["heldBy"]?.stringValue == "ord.1" }, "outbox list names the holder")
        #expect(listed["ord.1"]?["heldBy"] == nil)

        try clearFaults(h)
        let flushed = try chat(h, ["outbox", "flush"])
        #expect(flushed.status == 0, "\(flushed.stderrText)")
        #expect(try serverTexts(h, "c_team", prefix: "ordered ") == lines, "in queue order, each once")
        #expect(try outbox(h).values.allSatisfy { $0["state"]?.stringValue == "sent" && $0["heldBy"] == nil })
    }

    /// Flush A's PUT of c_team's first entry is held at the server (a `hold` fault: unanswered until the test
    /// clears the faults), so A holds q.1 (`sending`) for as long as the test needs, however slow the machine.
    /// Meanwhile another conversation's entries are queued, and flush B and a send to c_team start. B sends
    /// the other conversation at once; neither B nor the send sends past q.1 — they wait for it, then take
    /// turns with A. Every entry is PUT once and the server has c_team's messages in queue order.
    @Test func w5TwoConcurrentFlushesAndARacingSendKeepOneConversationInOrder() throws {
        let h = try harness()
        let team = (1...20).map { "team \($0)" }, pair = (1...5).map { "pair \($0)" }
        try queue(h, "c_team", team, clientId: "q")
        try fault(h, conversation: "c_team", clientId: "q.1", [("hold", .bool(true)), ("count", .int(1))])
        // A waits for the held answer however long the test takes to let it go.
        let a = try h.spawn("sl-chat", ["outbox", "flush", "--timeout", "600"])
        #expect(
            try eventually { try h.counter(Self.putRoute) >= 1 && outbox(h)["q.1"]?["state"]?.stringValue == "sending" },
            "flush A's PUT of q.1 reached the server, which holds it")
        try queue(h, "c_alice_bob", pair, clientId: "p")
        let b = try h.spawn("sl-chat", ["outbox", "flush"])
        let c = try h.spawn("sl-chat", ["send", "c_team", "team late", "--client-id", "late"])
        #expect(try eventually { try serverTexts(h, "c_alice_bob", prefix: "pair ") == pair }, "the other conversation was sent")
        #expect(try outbox(h)["q.1"]?["state"]?.stringValue == "sending", "…while q.1 was held: it held back no other conversation")
        #expect(try serverTexts(h, "c_team", prefix: "team ").isEmpty, "nothing of c_team went past q.1")
        try clearFaults(h)  // the server goes on with q.1's PUT and answers it
        let ra = a.waitOrKill(seconds: 120), rb = b.waitOrKill(seconds: 120), rc = c.waitOrKill(seconds: 120)
        #expect(ra.status == 0 && rb.status == 0 && rc.status == 0, "\(ra.stderrText) \(rb.stderrText) \(rc.stderrText)")
        #expect(try rc.json()["state"]?.stringValue == "sent", "the send waited for the entries before its own")
        #expect(try serverTexts(h, "c_team", prefix: "team ") == team + ["team late"], "one conversation, in queue order")
        #expect(try serverTexts(h, "c_alice_bob", prefix: "pair ") == pair)
        #expect(try h.counter(Self.putRoute) == 20 + 5 + 1, "every entry PUT once")
        #expect(try outbox(h).values.allSatisfy { $0["state"]?.stringValue == "sent" })
    }

    /// A refused entry (`failed`) holds the rest of its conversation: flushes send none of them, `outbox list`
    /// names the holder, a new send waits behind it too (exit 7); `outbox retry --flush` sends it and what it
    /// held, in order. Dropping a failed holder releases the rest as well.
    @Test func w5AFailedEntryHoldsTheRestOfItsConversationUntilRetriedOrDroppedAndListNamesTheHolder() throws {
        let h = try harness()
        let held = (1...4).map { "held \($0)" }
        try queue(h, "c_team", held, clientId: "f")
        try queue(h, "c_alice_bob", ["free 1", "free 2"], clientId: "o")
        try fault(h, conversation: "c_team", clientId: "f.1", [("status", .int(422)), ("count", .int(1))])
        let flushed = try chat(h, ["outbox", "flush"])
        #expect(flushed.status == 8, "\(flushed.stderrText)")
        let records = try flushed.jsonLines()
        let byId = Dictionary(records.compactMap { r in r["clientId"]?.stringValue.map { ($0, r) } }, uniquingKeysWith: { a, _ in a })
        #expect(byId["f.1"]?["state"]?.stringValue == "failed")
        #expect(
            (2...4).allSatisfy { byId["f.\($0)"]?["heldBy"]?.stringValue == "f.1" && byId["f.\($0)"]?["state"]?.stringValue == "pending" })
        #expect(
            byId["o.1"]?["state"]?.stringValue == "sent" && byId["o.2"]?["state"]?.stringValue == "sent", "another conversation is not held"
        )
        let summary = records.last?["summary"]
        #expect(summary?["held"]?.intValue == 3 && summary?["failed"]?.intValue == 1 && summary?["sent"]?.intValue == 2)
        #expect(try serverTexts(h, "c_team", prefix: "held ").isEmpty)
        let listed = try outbox(h)
        #expect((2...4).allSatisfy { listed["f.\($0)"]?["heldBy"]?.stringValue == "f.1" })
        #expect(listed["f.1"]?["heldBy"] == nil && listed["o.1"]?["heldBy"] == nil)

        let puts = try h.counter(Self.putRoute)
        let again = try chat(h, ["outbox", "flush"])
        #expect(again.status == 8, "\(again.stderrText)")
        #expect(try h.counter(Self.putRoute) == puts, "a flush does not send past a failed entry")
        let send = try chat(h, ["send", "c_team", "held 5", "--client-id", "f.5"])
        #expect(send.status == 7, "\(send.stderrText)")
        #expect(send.stderrText.contains("f.1"), "the error names the holder: \(send.stderrText)")
        #expect(try send.json()["heldBy"]?.stringValue == "f.1")
        #expect(try h.counter(Self.putRoute) == puts)

        let retried = try chat(h, ["outbox", "retry", "f.1", "--flush"])
        #expect(retried.status == 0, "\(retried.stderrText)")
        #expect(try serverTexts(h, "c_team", prefix: "held ") == held + ["held 5"], "the retried entry first, then what it held, in order")

        try queue(h, "c_team", ["later 1", "later 2"], clientId: "g")
        try fault(h, conversation: "c_team", clientId: "g.1", [("status", .int(422)), ("count", .int(1))])
        #expect(try chat(h, ["outbox", "flush"]).status == 8)
        #expect(try outbox(h)["g.2"]?["heldBy"]?.stringValue == "g.1")
        #expect(try chat(h, ["outbox", "drop", "g.1"]).status == 0)
        let released = try chat(h, ["outbox", "flush"])
        #expect(released.status == 0, "\(released.stderrText)")
        #expect(try serverTexts(h, "c_team", prefix: "later ") == ["later 2"])
    }

    /// Entries of two conversations queued in turn; the first of c_team cannot get through. c_team's later
    /// entries are held by it; every c_alice_bob entry is sent in the same run, in order.
    @Test func w5AConversationHeldBackHoldsBackNoOther() throws {
        let h = try harness()
        for i in 1...5 {
            #expect(try chat(h, ["send", "c_team", "team \(i)", "--queue", "--client-id", "a.\(i)"]).status == 0)
            #expect(try chat(h, ["send", "c_alice_bob", "pair \(i)", "--queue", "--client-id", "b.\(i)"]).status == 0)
        }
        try fault(h, conversation: "c_team", clientId: "a.1", [("status", .int(503)), ("count", .int(8))])
        let flushed = try chat(h, ["outbox", "flush", "--max-attempts", "2"])
        #expect(flushed.status == 8, "\(flushed.stderrText)")
        let summary = try flushed.jsonLines().last?["summary"]
        #expect(summary?["sent"]?.intValue == 5 && summary?["pending"]?.intValue == 1 && summary?["held"]?.intValue == 4)
        #expect(try serverTexts(h, "c_alice_bob", prefix: "pair ") == (1...5).map { "pair \($0)" })
        #expect(try serverTexts(h, "c_team", prefix: "team ").isEmpty)
        let listed = try outbox(h)
        #expect((2...5).allSatisfy { listed["a.\($0)"]?["heldBy"]?.stringValue == "a.1" })
        #expect((1...5).allSatisfy { listed["b.\($0)"]?["state"]?.stringValue == "sent" && listed["b.\($0)"]?["heldBy"] == nil })
        try clearFaults(h)
        #expect(try chat(h, ["outbox", "flush"]).status == 0)
        #expect(try serverTexts(h, "c_team", prefix: "team ") == (1...5).map { "team \($0)" })
    }
}
