import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
@testable import StarlineWorkspace
@testable import TasksCommands

/// sl-tasks against hostile input: out-of-range input from every source is an error and never a trap or a
/// wrapped date, a symlinked workspace.json is written through, no-ops write nothing, numbers of unknown
/// fields keep their text, and imports are deterministic and strict.
@Suite struct HardeningTests {
    let home = TemporaryDirectory("sl-tasks-hardening")
    var dataDir: String { home.path + "/starline/data" }
    var workspacePath: String { dataDir + "/workspace.json" }
    static let now = "2026-11-30T08:00:00Z"

    func run(_ words: [String], stdin: [UInt8] = [], environment: [String: String] = [:]) -> (
        status: StarlineCore.ExitStatus, stdout: String, stderr: String
    ) {
        runTasks(words, home: home, stdin: stdin, environment: environment, now: Timestamp(rfc3339: Self.now))
    }

    func error(_ stderr: String) throws -> JSON { try firstError(stderr) }

    func write(_ text: String, to path: String? = nil) throws {
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        try text.write(toFile: path ?? workspacePath, atomically: false, encoding: .utf8)
    }

    func bytes(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { Array($0) } }

    /// Inode and modification time (nanoseconds): a rewrite changes both.
    func identity(_ path: String) -> [Int] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        return [Int(info.st_ino), Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec)]
    }

    // MARK: 11 — out of range, from every source

    @Test(
        "dates and durations beyond years 0001–9999 are usage errors naming the option; nothing is written",
        arguments: [
            (["add", "x", "--due", "+3000000d"], "due"), (["add", "x", "--due", "-3000000d"], "due"),
            (["add", "x", "--due", "+99999999999999h"], "due"), (["add", "x", "--now", "+3000000d"], "now"),
            (["list", "--due-within", "999999999w"], "due-within"), (["list", "--due-within", "99999999999w"], "due-within"),
            (["list", "--due-before", "-3000000d"], "due-before"), (["recent", "list", "--since", "+999999999w"], "since")
        ])
    func outOfRangeArguments(_ words: [String], _ option: String) throws {
        let r = run(words)
        #expect(r.status == .usage, "\(words): \(r.stderr)")
        #expect(try error(r.stderr)["details"]?["option"]?.stringValue == option)
        #expect(!FileManager.default.fileExists(atPath: workspacePath))
        // The largest span that stays in range still works.
        #expect(run(["add", "x", "--due", "+2000000d", "--now", Self.now]).status == .ok)
    }

    @Test("RFC 3339 and Taskwarrior dates outside years 0001–9999 do not parse, at either end and through an offset")
    func timestampBounds() {
        #expect(Timestamp(rfc3339: "0001-01-01T00:00:00Z")?.seconds == Timestamp.supportedRange.lowerBound)
        #expect(Timestamp(rfc3339: "9999-12-31T23:59:59Z")?.seconds == Timestamp.supportedRange.upperBound)
        #expect(Timestamp(rfc3339: "0001-01-01T00:00:00+01:00") == nil)
        #expect(Timestamp(rfc3339: "9999-12-31T23:59:59-01:00") == nil)
        #expect(Timestamp(rfc3339: "0000-06-01T00:00:00Z") == nil)
        #expect(Timestamp(taskwarrior: "00000101T000000Z") == nil)
        #expect(TimeSpan(parsing: "999999999w")?.added(to: Timestamp(seconds: 0)) == nil)
    }

    @Test("A time outside years 0001–9999 prints as the nearest one inside, never wrapped or trapping (fuzz-vault)")
    func timestampsOutsideTheRangePrintClamped() {
        for seconds in [Int64.min, -62_167_219_201, Timestamp.supportedRange.lowerBound - 1] {
            #expect(Timestamp(seconds: seconds).rfc3339 == "0001-01-01T00:00:00Z")
            #expect(Timestamp(seconds: seconds).taskwarrior == "00010101T000000Z")
        }
        for seconds in [Int64.max, 253_402_300_800, 320_000_000_000] {
            #expect(Timestamp(seconds: seconds).rfc3339 == "9999-12-31T23:59:59Z")
            #expect(Timestamp(seconds: seconds).taskwarrior == "99991231T235959Z")
        }
        #expect(Timestamp(seconds: Timestamp.supportedRange.lowerBound).rfc3339 == "0001-01-01T00:00:00Z")
    }

    @Test("visits at INT64_MAX: recent add of the same page is DATA_ERROR, the file untouched")
    func visitsOverflow() throws {
        for visits in ["9223372036854775807", "12345678901234567891"] {
            try write(
                #"{"version":1,"tasks":[],"websites":[],"recents":[{"url":"https://a.example/","title":null,"visits":\#(visits),"lastVisitedAt":"2026-01-01T00:00:00Z"}]}"#
            )
            let before = bytes(workspacePath)
            let r = run(["recent", "add", "https://a.example/"])
            #expect(r.status == .data, "\(visits): \(r.stderr)")
            #expect(try error(r.stderr)["details"]?["field"]?.stringValue == "visits")
            #expect(bytes(workspacePath) == before)
        }
    }

    @Test(
        "Netscape ADD_DATE beyond years 0001–9999 or beyond 64 bits is DATA_ERROR, not a wrapped date",
        arguments: ["1000000000000000", "10000000000000000", "-100000000000000", "99999999999999999999999"])
    func addDateOutOfRange(_ value: String) throws {
        let html = #"<DL><DT><A HREF="https://a.example/" ADD_DATE="\#(value)">A</A></DL>"#
        let r = run(["import", "-"], stdin: Array(html.utf8))
        #expect(r.status == .data, "\(r.stderr)")
        #expect(try error(r.stderr)["details"]?["field"]?.stringValue == "ADD_DATE")
        #expect(!FileManager.default.fileExists(atPath: workspacePath))
    }

    @Test("a bookmark file cut anywhere parses as far as it goes (every prefix, including one ending in <a)")
    func truncatedBookmarks() throws {
        let html =
            #"<DL><p><DT><A HREF="https://a.example/x" ADD_DATE="1764489600" ICON='d'>T&eacute;st &#8212; one</A><DT><a href=https://b.example/>B</a></DL>"#
        let scalars = Array(html.unicodeScalars)
        for n in 0...scalars.count {
            _ = try NetscapeBookmarks.parse(String(String.UnicodeScalarView(scalars[0..<n])))
        }
        #expect(try NetscapeBookmarks.parse("<dl><a").isEmpty)
        #expect(try NetscapeBookmarks.parse("<a href=\"https://a.example/\"").map(\.url) == ["https://a.example/"])
        #expect(run(["import", "-", "--format", "netscape"], stdin: Array("<DL><a".utf8)).status == .ok)
    }

    @Test("Taskwarrior dates out of range are DATA_ERROR naming the task")
    func taskwarriorDates() throws {
        for due in ["00000101T000000Z", "0001-01-01T00:30:00+01:00", "99991231T235960Z"] {
            let tw = #"[{"uuid":"c0ffee00-0000-4000-8000-000000000001","description":"x","status":"pending","due":"\#(due)"}]"#
            let r = run(["import", "-"], stdin: Array(tw.utf8))
            #expect(r.status == .data, "\(due): \(r.stderr)")
            #expect(r.stderr.contains("Taskwarrior task 1"))
        }
    }

    @Test(
        "JSON import: a time out of range or not a time is DATA_ERROR naming the record and field",
        arguments: [
            #"{"version":1,"tasks":[{"id":"x","title":"a","due":"0000-01-01T00:00:00Z"}]}"#,
            #"{"version":1,"tasks":[{"id":"x","title":"a","createdAt":"tomorrow"}]}"#,
            #"{"version":1,"websites":[{"url":"https://a.example/","createdAt":"9999-12-31T23:59:59-01:00"}]}"#,
            #"{"version":1,"recents":[{"url":"https://a.example/","visits":1,"lastVisitedAt":12}]}"#
        ])
    func jsonImportTimes(_ doc: String) throws {
        let r = run(["import", "-"], stdin: Array(doc.utf8))
        #expect(r.status == .data, "\(r.stderr)")
        #expect(try error(r.stderr)["details"]?["field"] != nil)
        #expect(!FileManager.default.fileExists(atPath: workspacePath))
    }
}
