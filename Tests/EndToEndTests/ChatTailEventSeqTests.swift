import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// `sl-chat tail` names the event's number `eventSeq`, so it is not mistaken for the message's `seq`
/// (`.message.seq`), the number `history --after` takes; `seq` stays beside it for compatibility.
@Suite struct ChatTailEventSeqTests {
    @Test func w4TailRecordsCarryEventSeqAndHistoryAfterTakesTheMessagesSeq() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("alice")
        for text in ["first", "second"] {
            let sent = try h.run("sl-chat", ["send", "c_team", text])
            #expect(sent.status == 0, "\(sent.stderrText)")
        }
        let tail = try h.run("sl-chat", ["tail", "c_team"])
        #expect(tail.status == 0, "\(tail.stderrText)")
        let messages = try tail.jsonLines().filter { $0["type"]?.stringValue == "message" }
        #expect(messages.count == 2, "\(tail.stdoutText)")
        for record in messages {
            // eventSeq comes first, is a number, and equals the older name's value.
            #expect(record.objectValue?.first?.0 == "eventSeq", "\(record.serialized())")
            #expect(record["eventSeq"]?.intValue != nil && record["eventSeq"] == record["seq"], "\(record.serialized())")
        }
        let last = try #require(messages.last)
        let messageSeq = try #require(last["message"]?["seq"]?.intValue)
        let eventSeq = try #require(last["eventSeq"]?.intValue)
        // In the seeded server they differ (seed messages have no events): the two numbers are not interchangeable.
        #expect(messageSeq != eventSeq)

        // history --after takes the message's seq: after the previous message's seq comes exactly the last one.
        let before = try #require(messages.first?["message"]?["seq"]?.intValue)
        let page = try h.run("sl-chat", ["history", "c_team", "--after", String(before)]).jsonLines()
        #expect(page.map { $0["text"]?.stringValue } == ["second"], "\(page)")
        #expect(try h.run("sl-chat", ["history", "c_team", "--after", String(messageSeq)]).jsonLines().isEmpty)
    }
}
