import StarlineCore
import StarlinePlatform
import Testing
import StarlineBulk

/// The journal's records, typed (S16's crash-safe record of a bulk run): written by `revoke`, read by `--resume`,
/// `journal verify` and `journal merge` through one definition.
@Suite struct BulkJournalEntryTests {
    static let failure = BulkJournalEntry.Failure(code: "RATE_LIMITED", message: "slow down", serverCode: .string("TOO_MANY"))

    @Test("S16 an item's record keeps the result line's field order, adds at, and reads back as written")
    func s16EntryRoundTrip() throws {
        var entry = BulkJournalEntry(line: 7, id: "s_1", user: "u_1", status: .failed, attempts: 3, error: Self.failure)
        #expect(
            entry.json.serialized()
                == #"{"line":7,"id":"s_1","user":"u_1","status":"failed","attempts":3,"error":{"code":"RATE_LIMITED","message":"slow down","serverCode":"TOO_MANY"}}"#
        )
        entry.at = 1_800_000_000
        let line = entry.json.serialized()
        #expect(line.hasSuffix(#","at":"2027-01-15T08:00:00Z"}"#), "\(line)")
        let read = try #require(BulkJournalEntry(try JSON.parse(Array(line.utf8))))
        #expect(read.line == 7 && read.id == "s_1" && read.user == "u_1" && read.status == .failed && read.attempts == 3)
        #expect(read.error == Self.failure && read.at == 1_800_000_000 && !read.fromJournal)
        #expect(BulkJournal.item(try JSON.parse(Array(line.utf8)))?.status == .failed)
    }

    @Test("S16 headers, planned records, lines without an id and unknown statuses are not items")
    func s16OnlyItemsAreEntries() throws {
        let planned = BulkJournalPlan(line: 3, target: RevocationTarget(id: "s_9", user: nil)).json
        #expect(planned.serialized() == #"{"planned":{"line":3,"id":"s_9","user":null}}"#)
        #expect(BulkJournalEntry(planned) == nil && BulkJournalPlan(planned)?.target.id == "s_9")
        for text in [
            #"{"run":{"api":"http://x"}}"#, #"{"line":1,"id":null,"status":"failed","attempts":0}"#,
            #"{"line":1,"id":"s_1","status":"exploded","attempts":0}"#
        ] {
            #expect(BulkJournalEntry(try JSON.parse(Array(text.utf8))) == nil, "\(text)")
        }
        // A result line for input that named no session prints with "id":null, and is never an item.
        let unnamed = BulkJournalEntry(line: 2, id: nil, user: nil, status: .failed, attempts: 0).json
        #expect(unnamed.serialized().contains(#""id":null"#) && BulkJournal.item(unnamed) == nil)
    }

    @Test("S16 --resume continues only the run its journal describes; without --reason it keeps the journal's")
    func s16ResumeMatchesTheJournalsRun() throws {
        let journal = BulkJournalHeader(api: "http://127.0.0.1:1", caller: "u_admin", shard: "0/4", reason: "offboarding")
        let same = BulkJournalHeader(api: "http://127.0.0.1:1", caller: "u_admin", shard: "0/4", reason: nil)
        #expect(try journal.resumed(by: same, journal: "j.jsonl", reasonGiven: false) == "offboarding")
        let other = BulkJournalHeader(api: "http://127.0.0.1:1", caller: "u_other", shard: "0/4", reason: nil)
        do {
            _ = try journal.resumed(by: other, journal: "j.jsonl", reasonGiven: false)
            Issue.record("another caller's run was resumed")
        } catch let error as StarlineError {
            #expect(error.code == .journalMismatch)
            #expect(error.message.hasPrefix("the journal j.jsonl records a run by user 'u_admin', not 'u_other'"), "\(error.message)")
        }
        var otherReason = same
        otherReason.reason = "cleanup"
        #expect(throws: StarlineError.self) { try journal.resumed(by: otherReason, journal: "j.jsonl", reasonGiven: true) }
    }
}
