import Foundation
import StarlineCore
@testable import StarlineWorkspace
import StarlineTestSupport
import Testing

/// `sl-tasks list` prints most tasks of a well-formed file straight from their stored bytes (`TaskListing`,
/// `StoredTaskText`). These tests hold that path to the general one: every filter, every output form, on
/// files whose tasks have each oddity that could make the stored bytes differ from what the JSON writer
/// prints.
extension TaskFilter {
    /// For each done mode (open, only done, all): no other filter, --overdue, --no-due, --due-within `dueWithin`,
    /// and one more that `last` makes from the plain one.
    static func samples(now: Timestamp, dueWithin: TimeSpan, last: (inout TaskFilter) -> Void) -> [TaskFilter] {
        var filters: [TaskFilter] = []
        for done in [TaskFilter.DoneMode.open, .only, .all] {
            var f = TaskFilter(now: now)
            f.done = done
            filters.append(f)
            var overdue = f
            overdue.overdue = true
            filters.append(overdue)
            var noDue = f
            noDue.noDue = true
            filters.append(noDue)
            var within = f
            within.dueWithin = dueWithin
            filters.append(within)
            var other = f
            last(&other)
            filters.append(other)
        }
        return filters
    }
}

@Suite struct TaskListingTests {
    let now = Timestamp(rfc3339: "2026-11-30T08:00:00Z")!

    /// String values, as stored (JSON text without the quotes): some the writer prints as they are, some it
    /// prints differently (a `\u` or `\/` escape, DEL, C1 and bidi controls, zero-width characters, U+2028).
    static let strings = [
        "plain", "", "with \\\"quotes\\\" and \\\\", "line\\nbreak\\ttab\\r\\b\\f", "caf\u{E9} \u{2014} \u{65E5}\u{672C} \u{1F600}",
        "slash \\/ escaped", "caf\\u00e9", "del \u{7F}", "c1 \u{85}", "bidi \u{202E}x", "zero\u{200B}width", "sep \u{2028}",
        "arabic \u{61C}mark", "bom \u{FEFF}", "nbsp\u{A0}", "\\u0041"
    ]

    static let times = [
        "\"2026-11-29T08:00:00Z\"", "\"2026-12-01T08:00:00Z\"", "null", "\"2026-11-30T08:30:00+01:00\"",
        "\"2026-11-29T08:00:00.5Z\"", "\"next week\"", "\"2026-11-29T08:00:00\\u005a\"", "\"2026-11-28T00:00:00z\""
    ]

    /// One stored task: mostly in the shape sl-tasks writes, sometimes with one oddity.
    static func task(_ i: Int, _ random: inout SeededRandom) -> String {
        func pick(_ values: [String]) -> String { values[Int(random.next() % UInt64(values.count))] }
        // Three strings in four from the ones the writer prints as they are stored (the first five), so that
        // many tasks take the byte path and many do not.
        let string = { (r: inout SeededRandom) -> String in
            "\"" + strings[Int(r.next() % UInt64(r.next() % 4 == 0 ? strings.count : 5))] + "\""
        }
        var members: [(String, String)] = [
            ("id", "\"id-\(i)\""), ("title", string(&random)), ("notes", string(&random)),
            ("tags", pick(["[]", "[\"work\"]", "[ \"work\" , \"q4\" ]", "[\"caf\u{E9}\"]", "[\"\\u0077ork\"]"])),
            ("due", pick(times)), ("done", pick(["false", "false", "true"])),
            ("doneAt", pick(["null", "\"2026-11-29T07:00:00Z\""])), ("createdAt", "\"2026-11-01T00:00:00Z\""),
            ("updatedAt", pick(["\"2026-11-02T00:00:00Z\"", "\"2026-11-02T01:00:00+01:00\"", "null"]))
        ]
        switch random.next() % 24 {
        case 0: members.append(("extra", pick(["1", "1.50", "{\"a\": [1e3]}", "\"x\""])))
        case 1: members.swapAt(1, 2)
        case 2: members.removeLast()
        case 3: members.append(("recur", "\"weekly\""))
        case 4: members.append(("due", pick(times)))
        case 5: members[5].1 = pick(["null", "\"yes\"", "0"])
        case 6: members.insert(("number", "7"), at: 1)
        case 7: members[3].1 = "[1, \"a\"]"
        default: break
        }
        let pretty = random.next() % 2 == 0
        let separator = pretty ? ",\n      " : ","
        let body = members.map { "\"\($0.0)\"" + (pretty ? ": " : ":") + $0.1 }.joined(separator: separator)
        return pretty ? "{\n      \(body)\n    }" : "{\(body)}"
    }

    static func workspace(seed: UInt64, count: Int) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        let tasks = (0..<count).map { task($0, &random) }.joined(separator: ",\n    ")
        return Array("{\n  \"version\": 1,\n  \"tasks\": [\n    \(tasks)\n  ],\n  \"websites\": []\n}\n".utf8)
    }

    func filters() -> [TaskFilter] {
        TaskFilter.samples(now: now, dueWithin: TimeSpan(seconds: 3 * 86400)) { $0.tags = ["work"] }
    }

    @Test("W1: a listing printed from the stored bytes is byte for byte what decoding every task and writing it gives")
    func w1StoredBytesPrintAsDecodedRecords() throws {
        let bytes = TaskListingTests.workspace(seed: 34, count: 600)
        let scan = try #require(WorkspaceScanner.scan(bytes, collectTasks: true))
        let tasks = try Workspace(json: try JSON.parse(bytes)).tasks
        var stored = 0
        var printedFromBytes = 0
        for filter in filters() {
            let records = filter.apply(tasks).map { TaskRecord.output($0.task, number: $0.number) }
            var lines: [UInt8] = []
            for record in records {
                record.write(to: &lines, style: .compact, indent: 0)
                lines.append(0x0A)
            }
            let array = JSONWriter.document(.array(records), pretty: false)
            let listing = try filter.listing(bytes: bytes, slices: scan.tasks)
            var fastLines: [UInt8] = []
            try listing.writeCompact(lines: true, into: &fastLines)
            var fastArray: [UInt8] = []
            try listing.writeCompact(lines: false, into: &fastArray)
            #expect(String(decoding: fastLines, as: UTF8.self) == String(decoding: lines, as: UTF8.self))
            #expect(String(decoding: fastArray, as: UTF8.self) == String(decoding: array, as: UTF8.self))
            #expect(try listing.records() == records)
            for entry in listing.entries {
                guard case .stored(let range) = entry.source else { continue }
                stored += 1
                var out: [UInt8] = []
                if bytes.withUnsafeBufferPointer({
                    StoredTaskText.appendCompact(UnsafeBufferPointer(rebasing: $0[range]), number: entry.number, to: &out)
                }) {
                    printedFromBytes += 1
                } else {
                    #expect(out.isEmpty)
                }
            }
        }
        // Both paths ran: most tasks went out as bytes, and the odd ones were left to the writer.
        #expect(stored > 1_000)  // over the 15 filters
        #expect(printedFromBytes > 100 && printedFromBytes < stored, "\(printedFromBytes) of \(stored) printed from their bytes")
    }

    @Test("W1: each oddity sends a task to the general path, and a task sl-tasks wrote is printed from its bytes")
    func w1StoredTaskTextRefusesWhatTheWriterWouldChange() throws {
        let shaped = """
            {"id": "a", "title": "T", "notes": "", "tags": ["x", "y"], "due": "2026-11-29T08:00:00Z", "done": false, \
            "doneAt": null, "createdAt": "2026-11-01T00:00:00Z", "updatedAt": "2026-11-01T00:00:00Z"}
            """
        func compact(_ text: String, number: Int? = 3) -> String? {
            var out: [UInt8] = []
            let ok = Array(text.utf8).withUnsafeBufferPointer { StoredTaskText.appendCompact($0, number: number, to: &out) }
            return ok ? String(decoding: out, as: UTF8.self) : nil
        }
        let expected = TaskRecord.output(try JSON.parse(shaped), number: 3).serialized()
        #expect(compact(shaped) == expected)
        #expect(compact(shaped, number: nil) == TaskRecord.output(try JSON.parse(shaped), number: .some(nil)).serialized())
        let odd = [
            shaped.replacingOccurrences(of: "\"T\"", with: "\"caf\\u00e9\""),
            shaped.replacingOccurrences(of: "\"T\"", with: "\"a\\/b\""),
            shaped.replacingOccurrences(of: "\"T\"", with: "\"\u{202E}\""),
            shaped.replacingOccurrences(of: "\"T\"", with: "\"\u{7F}\""),
            shaped.replacingOccurrences(of: "\"T\"", with: "\"\u{85}\""),
            shaped.replacingOccurrences(of: "08:00:00Z\"", with: "08:00:00+00:00\""),
            shaped.replacingOccurrences(of: "\"done\": false", with: "\"done\": 0"),
            shaped.replacingOccurrences(of: "[\"x\", \"y\"]", with: "[1]"),
            shaped.replacingOccurrences(of: "}", with: ", \"recur\": \"weekly\"}"),
            shaped.replacingOccurrences(of: "\"notes\": \"\", ", with: "")
        ]
        for text in odd {
            #expect(try JSON.parse(text).objectValue != nil)
            #expect(compact(text) == nil, "\(text)")
        }
    }
}
