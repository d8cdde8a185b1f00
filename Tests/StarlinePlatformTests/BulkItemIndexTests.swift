import Foundation
import StarlineCore
@testable import StarlinePlatform
import Testing
@testable import StarlineBulk

/// The on-disk item index of a bulk run: exact across its in-memory batches and the database behind them.
@Suite struct BulkItemIndexTests {
    /// Past several batches, a repeat is found whether its first line is still waiting in memory or already
    /// in the database, and points at that first line; the journal's finished items (flushed before the
    /// input starts) are answered with their status.
    @Test func duplicatesAndFinishedItemsAreExactAcrossBatches() throws {
        let index = try BulkItemIndex()
        let n = BulkItemIndex.batchLimit * 3 + 17
        for i in stride(from: 0, to: n, by: 7) {
            try index.finished(id: "ses_\(i)", user: "carol", status: i % 2 == 0 ? .revoked : .notFound)
        }
        for i in 0..<n {
            let seen = try index.see(id: "ses_\(i)", user: "carol", line: i + 1)
            let expected: BulkItemIndex.Seen = i % 7 == 0 ? .first(finished: i % 2 == 0 ? .revoked : .notFound) : .first(finished: nil)
            #expect(seen == expected, "line \(i + 1)")
            if seen != expected { return }
        }
        for i in [0, 1, 7, BulkItemIndex.batchLimit, n - 1] {
            #expect(try index.see(id: "ses_\(i)", user: "carol", line: n + 1 + i) == .duplicate(firstLine: i + 1))
        }
        // The same id of another user (or of the caller's own sessions) is another item.
        #expect(try index.see(id: "ses_1", user: nil, line: 3 * n) == .first(finished: nil))
        #expect(try index.see(id: "ses_1", user: "dave", line: 3 * n + 1) == .first(finished: nil))
        #expect(try index.distinctItems == n + 2)
    }

    /// Tallies of many journals add up per item, across batches.
    @Test func talliesAddUpAcrossBatches() throws {
        let index = try BulkItemIndex()
        let n = BulkItemIndex.batchLimit + 100
        for i in 0..<n { _ = try index.see(id: "s\(i)", user: nil, line: i + 1) }
        for _ in 0..<2 { for i in 0..<n where i % 3 == 0 { try index.tally(id: "s\(i)", user: nil, status: .revoked) } }
        try index.tally(id: "extra", user: nil, status: .revoked)
        try index.tally(id: "s1", user: nil, status: .failed)
        try index.tally(id: "s1", user: nil, status: .notFound)
        try index.tally(id: "s2", user: nil, status: .skipped)
        var doubled = 0, missing = 0, unplanned = 0
        var last: [String: BulkItemStatus] = [:]
        try index.forEachItem { id, _, line, finals, failed, status in
            if line == nil { unplanned += 1 } else if finals == 2 { doubled += 1 } else if finals == 0 { missing += 1 }
            if id == "s1" { #expect(finals == 1 && failed == 1) }
            if let status { last[id] = status }
        }
        #expect(doubled == (n + 2) / 3 && missing == n - (n + 2) / 3 - 1 && unplanned == 1)
        #expect(last["s1"] == .notFound && last["s0"] == .revoked && last["s2"] == nil, "the last final status of each item")
    }
}
