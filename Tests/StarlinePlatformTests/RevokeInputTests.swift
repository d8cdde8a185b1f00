import Foundation
import StarlineCore
@testable import SessionsCommands
import StarlinePlatform
import Testing
import StarlineBulk

/// What `sl-sessions revoke -` reads, in each format, with the line of every bad row.
@Suite struct RevokeInputTests {
    func parse(_ text: String, user: String? = nil) throws -> (format: RevokeInput.Format, items: [RevokeItem], malformed: [MalformedInput])
    {
        try RevokeInput.parse(Array(text.utf8), defaultUser: user)
    }

    @Test func plainLinesSkipBlanksAndCommentsAndKeepLineNumbers() throws {
        let r = try parse("ses_1\n\n# a comment\n  ses_2  \r\nbad id\nses_3")
        #expect(r.format == .lines)
        #expect(r.items == [RevokeItem(line: 1, id: "ses_1"), RevokeItem(line: 4, id: "ses_2"), RevokeItem(line: 6, id: "ses_3")])
        #expect(r.malformed.map(\.line) == [5])
    }

    @Test func theDefaultUserAppliesToItemsWithoutOne() throws {
        let r = try parse(#"{"id":"a","user":"bob"}"# + "\n" + #"{"id":"b"}"#, user: "carol")
        #expect(r.items == [RevokeItem(line: 1, id: "a", user: "bob"), RevokeItem(line: 2, id: "b", user: "carol")])
    }

    /// Exactly what `sl-sessions list --jsonl` prints, other fields and all.
    @Test func listOutputIsRevokeInput() throws {
        let line =
            #"{"id":"ses_1","appId":"workbench","device":{"name":"x","platform":"linux"},"createdAt":"2026-01-01T00:00:00Z","lastSeenAt":"2026-01-02T00:00:00Z","current":false,"user":"bob"}"#
        let r = try parse(line + "\n" + line.replacingAll("ses_1", with: "ses_2") + "\n")
        #expect(r.format == .jsonl)
        #expect(r.items.map(\.id) == ["ses_1", "ses_2"] && r.items.allSatisfy { $0.user == "bob" })
    }

    @Test func jsonLinesReportBadLines() throws {
        let r = try parse("{\"id\":\"a\"}\n{broken\n{\"user\":\"bob\"}\n[1]\n{\"id\":\"b\",\"user\":5}\n{\"id\":\"c d\"}\n")
        #expect(r.items.map(\.id) == ["a"])
        #expect(r.malformed.map(\.line) == [2, 3, 4, 5, 6])
    }

    @Test func aJSONArrayOfStringsOrObjects() throws {
        let r = try parse(#"  ["a", {"id":"b","user":"carol"}, 7, {"x":1}]"#)
        #expect(r.format == .json)
        #expect(r.items == [RevokeItem(line: 1, id: "a"), RevokeItem(line: 2, id: "b", user: "carol")])
        #expect(r.malformed.map(\.line) == [3, 4])
        let broken = Array(#"["a", "#.utf8)
        #expect(throws: StarlineError.self) { _ = try RevokeInput.parse(broken, defaultUser: nil) }
    }

    @Test func csvWithAHeaderQuotesAndCRLF() throws {
        let r = try parse(
            """
            \u{FEFF}Id,User,note\r\nses_1,bob,x\r\n\"ses_2\",\"carol\",\"a, \"\"quoted\"\" \
            note\"\r\nses_3,,y\r\nses_4,bob\r\n\"open,bob,z\r\n
            """)
        #expect(r.format == .csv)
        #expect(
            r.items == [
                RevokeItem(line: 2, id: "ses_1", user: "bob"), RevokeItem(line: 3, id: "ses_2", user: "carol"),
                RevokeItem(line: 4, id: "ses_3", user: nil)
            ])
        #expect(r.malformed.map(\.line) == [5, 6], "a short row and an unbalanced quote")
        #expect(throws: StarlineError.self) { _ = try RevokeInput.parse(Array("user,name\nbob,x\n".utf8), defaultUser: nil) }
    }

    @Test func idsAreValidatedTheSameEverywhere() throws {
        let tooLong = String(repeating: "a", count: 129)
        let r = RevokeInput.fromArguments(["ses_ok", "../etc", "a/b", "x?y", tooLong, "", "..", "ok-1.2:3@4"], defaultUser: nil)
        #expect(r.items.map(\.id) == ["ses_ok", "ok-1.2:3@4"])
        #expect(r.malformed.map(\.line) == [2, 3, 4, 5, 6, 7])
        let invalidUTF8 = try RevokeInput.parse([0x61, 0x0A, 0xFF, 0xFE, 0x0A, 0x62], defaultUser: nil)
        #expect(invalidUTF8.items.map(\.id) == ["a", "b"] && invalidUTF8.malformed.map(\.line) == [2])
    }

    @Test func overLongLinesAndLargeInputsAreBounded() throws {
        let long = String(repeating: "x", count: RevokeInput.maxLineBytes + 1)
        let r = try parse("a\n\(long)\nb\n")
        #expect(r.items.map(\.id) == ["a", "b"] && r.malformed.map(\.line) == [2])
        // A line of any length is dropped as it streams by, never held: the input as a whole has no limit.
        let huge = [UInt8](repeating: 0x61, count: 8 << 20) + Array("\nses_after".utf8)
        let streamed = try RevokeInput.parse(huge, defaultUser: nil)
        #expect(streamed.items.map(\.id) == ["ses_after"] && streamed.malformed.map(\.line) == [1])
    }

    @Test func twoHundredThousandLines() throws {
        let text = (1...200_000).map { "ses_\($0)" }.joined(separator: "\n")
        let r = try parse(text)
        #expect(r.items.count == 200_000 && r.items.last == RevokeItem(line: 200_000, id: "ses_200000"))
    }

    /// Duplicates are found by the ids themselves (an on-disk index, not a hash), each pointing at its first line.
    @Test func duplicatesPointAtTheirFirstLine() throws {
        let index = try BulkItemIndex()
        try index.finished(id: "c", user: nil, status: .revoked)
        let seen = try [(1, "a", nil), (2, "b", nil), (3, "a", nil), (4, "a", "bob"), (5, "c", nil), (6, "c", nil)].map {
            (line: Int, id: String, user: String?) in
            try index.see(id: id, user: user, line: line)
        }
        #expect(
            seen == [
                .first(finished: nil), .first(finished: nil), .duplicate(firstLine: 1), .first(finished: nil),
                .first(finished: .revoked), .duplicate(firstLine: 5)
            ])
        #expect(try index.distinctItems == 4)
    }

    /// A JSON array is read element by element as it arrives: commas and brackets inside strings and nested
    /// values do not split it, and a document that is not one array stops with DATA after the elements before.
    @Test func aJSONArrayStreamsElementByElement() throws {
        let r = try parse(#"[ "a" , {"id":"b","note":"x,]","user":"carol","x":[1,{"y":"]"}]}, "c\"d" ]"# + "\n")
        #expect(r.items.map(\.id) == ["a", "b"] && r.malformed.map(\.line) == [3])
        let stream = RevokeInputStream(LineReader(bytes: Array(#"["a","b"] x"#.utf8), name: "stdin", maxLineBytes: 100), defaultUser: nil)
        #expect(try stream.next() == .item(RevokeItem(line: 1, id: "a")))
        #expect(try stream.next() == .item(RevokeItem(line: 2, id: "b")))
        #expect(throws: StarlineError.self) { _ = try stream.next() }
    }

    /// GAM habit: a JSON line whose id is a number gets an error that says so.
    @Test func anIdThatIsNotAStringIsNamed() throws {
        let r = try parse(#"{"id":12345}"# + "\n" + #"{"id":"ok"}"# + "\n")
        #expect(r.items.map(\.id) == ["ok"])
        #expect(r.malformed.first?.reason.contains("is not a string (it is a number)") == true)
    }
}
