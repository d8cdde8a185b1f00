import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
@testable import StarlineWorkspace
@testable import TasksCommands

/// W1, the habits Taskwarrior users bring: short working-set numbers wherever an id goes, `due+2d` to
/// postpone from the task's own date, and `recur` acted on — a done recurring task brings its next instance.
/// In-process, with `--now` fixing the clock (the local zone is the test process's).
@Suite struct TaskwarriorHabitsTests {
    let home = TemporaryDirectory("sl-tasks-habits")
    static let now = "2026-11-30T08:00:00Z"

    func run(_ words: [String]) -> (status: StarlineCore.ExitStatus, stdout: String, stderr: String) {
        runTasks(words + ["--now", Self.now], home: home, environment: ["TZ": "UTC"])
    }

    func ok(_ words: [String]) throws -> JSON {
        let r = run(words)
        try #require(r.status == .ok, "sl-tasks \(words.joined(separator: " ")): \(r.stderr)")
        return try JSON.parse(r.stdout)
    }

    func list(_ words: [String] = []) throws -> [JSON] {
        let r = run(["list", "--jsonl"] + words)
        try #require(r.status == .ok, "\(r.stderr)")
        return try r.stdout.split(separator: "\n").map { try JSON.parse(String($0)) }
    }

    @Test("W1: working-set numbers 1…n name the open tasks wherever an id goes, and renumber as Taskwarrior does")
    func w1WorkingSetNumbers() throws {
        #expect(try ok(["add", "first"])["number"] == .int(1))
        #expect(try ok(["add", "second"])["number"] == .int(2))
        #expect(try ok(["add", "third", "--due", "+1d"])["number"] == .int(3))
        // Listed by due date, each with its number (the order of the file, not of the listing).
        #expect(try list().map { $0["number"]?.intValue ?? -1 } == [3, 1, 2])
        #expect(try ok(["show", "2"])["title"]?.stringValue == "second")
        let done = try ok(["done", "2"])
        #expect(done["title"]?.stringValue == "second" && done["number"] == .null)
        // "third" is now 2; a done task has no number (null in JSON, blank in a table).
        #expect(try ok(["edit", "2", "--title", "third, renamed"])["number"] == .int(2))
        #expect(try list(["--all"]).map { $0["number"] ?? .string("absent") } == [.int(2), .int(1), .null])
        // A number beyond the open tasks: NOT_FOUND (exit 6), saying which numbers exist.
        let missing = run(["done", "9"])
        #expect(missing.status.rawValue == 6)
        #expect(try firstError(missing.stderr)["message"]?.stringValue?.contains("numbered 1 to 2") == true, "\(missing.stderr)")
        // Eight digits or more are an id prefix, as before; a UUID still works.
        let id = try #require(try list().first?["id"]?.stringValue)
        #expect(try ok(["show", id])["number"] == .int(2))
        #expect(run(["show", "12345678"]).status.rawValue == 6)
        #expect(try ok(["rm", "1"])["number"] == .null)
        #expect(try list().map { $0["number"]?.intValue ?? -1 } == [1])
    }

    @Test("W1: edit --due due+2d moves the task's own due date; +2d and now+2d count from now")
    func w1RelativeEdits() throws {
        _ = try ok(["add", "report", "--due", "2026-12-10T09:00:00Z"])
        #expect(try ok(["edit", "1", "--due", "due+2d"])["due"]?.stringValue == "2026-12-12T09:00:00Z")
        #expect(try ok(["edit", "1", "--due", "due-1w"])["due"]?.stringValue == "2026-12-05T09:00:00Z")
        #expect(try ok(["edit", "1", "--due", "now+2d"])["due"]?.stringValue == "2026-12-02T08:00:00Z")
        #expect(try ok(["edit", "1", "--due", "+2d"])["due"]?.stringValue == "2026-12-02T08:00:00Z")
        // A task without a due date has nothing to move; add and list have no task to count from.
        _ = try ok(["add", "someday"])
        let nothing = run(["edit", "2", "--due", "due+2d"])
        #expect(nothing.status == .usage && nothing.stderr.contains("no due date to move"), "\(nothing.stderr)")
        #expect(run(["add", "x", "--due", "due+1d"]).status == .usage)
        #expect(run(["list", "--due-before", "due+1d"]).status == .usage)
        #expect(run(["edit", "1", "--due", "due+3000000d"]).status == .usage)
    }

    @Test("W1: a done recurring task brings its next instance, due one period on and after now; until ends it")
    func w1RecurrenceMakesTheNextInstance() throws {
        let added = try ok(["add", "water the plants", "--due", "2026-11-28T09:00:00Z", "--recur", "weekly", "-t", "home"])
        #expect(added["recur"]?.stringValue == "weekly")
        let done = try ok(["done", "1"])
        let next = try #require(done["next"])
        // 2026-11-28 is two days before --now: one week on is 2026-12-05, after now.
        #expect(next["due"]?.stringValue == "2026-12-05T09:00:00Z")
        #expect(next["title"] == added["title"] && next["tags"] == added["tags"] && next["recur"]?.stringValue == "weekly")
        #expect(next["id"] != added["id"] && next["done"] == .bool(false) && next["number"] == .int(1))
        #expect(try list().map { $0["due"]?.stringValue } == ["2026-12-05T09:00:00Z"])
        // Finished four weeks late, a weekly task comes back at its next date after now, not four times overdue.
        _ = try ok(["add", "late", "--due", "2026-11-02T09:00:00Z", "--recur", "1w"])
        #expect(try ok(["done", "2"])["next"]?["due"]?.stringValue == "2026-11-30T09:00:00Z")
        // until: no instance past it; the run says why on stderr.
        _ = try ok(["add", "ends", "--due", "2026-11-29T09:00:00Z", "--recur", "daily"])
        let store = WorkspaceStore(path: home.path + "/starline/data/workspace.json")
        _ = try store.update { ws in
            let i = try ws.taskIndex("3")
            ws.tasks[i].set("until", .string("2026-11-30T08:30:00Z"))
            return ((), true)
        }
        let ended = run(["done", "3"])
        #expect(ended.status == .ok && ended.stderr.contains("no next task"), "\(ended.stderr)")
        #expect(try JSON.parse(ended.stdout)["next"] == nil)
        // A recurring task needs a due date; an unknown period is refused where it is typed.
        #expect(run(["add", "x", "--recur", "weekly"]).status == .usage)
        #expect(run(["add", "x", "--due", "+1d", "--recur", "every so often"]).status == .usage)
        #expect(run(["add", "x", "--due", "+1d", "--recur", "5m"]).status == .usage, "m: minutes or months?")
        // --no-recur stops it: done then makes nothing.
        _ = try ok(["add", "stop", "--due", "+1d", "--recur", "daily"])
        let open = try list().count
        #expect(try ok(["edit", String(open), "--no-recur"])["recur"] == nil)
        #expect(try ok(["done", String(open)])["next"] == nil)
    }

    @Test("W1: periods as Taskwarrior writes them, in calendar steps of the local zone")
    func w1RecurrencePeriods() throws {
        let parsed: [(String, Recurrence.Step)] = [
            ("daily", .days(1)), ("weekdays", .weekdays), ("weekly", .days(7)), ("biweekly", .days(14)), ("monthly", .months(1)),
            ("quarterly", .months(3)), ("yearly", .months(12)), ("annual", .months(12)), ("3d", .days(3)), ("2w", .days(14)),
            ("2wks", .days(14)), ("6mo", .months(6)), ("1q", .months(3)), ("2y", .months(24)), ("12h", .hours(12)),
            ("P1D", .days(1)), ("P2W", .days(14)), ("P1M", .months(1)), ("P1Y", .months(12)), ("PT6H", .hours(6)), (" Weekly ", .days(7))
        ]
        for (text, step) in parsed { #expect(Recurrence(parsing: text)?.step == step, "\(text)") }
        for bad in ["", "m", "5m", "0d", "1001d", "-1d", "d", "P", "PT1D", "P1H", "fortnightly", "1.5d", "99999d"] {
            #expect(Recurrence(parsing: bad) == nil, "\(bad)")
        }
        setenv("TZ", "UTC", 1)
        LocalCalendar.configure()
        func t(_ s: String) -> Timestamp { Timestamp(rfc3339: s)! }
        let now = t("2026-11-30T08:00:00Z")
        // A month keeps the day of the month, the 31st becoming the last day of a shorter one.
        #expect(Recurrence(step: .months(1)).nextDue(after: t("2026-10-31T09:00:00Z"), now: now) == t("2026-11-30T09:00:00Z"))
        #expect(Recurrence(step: .months(2)).nextDue(after: t("2026-10-31T09:00:00Z"), now: now) == t("2026-12-31T09:00:00Z"))
        #expect(Recurrence(step: .months(1)).nextDue(after: t("2027-01-31T09:00:00Z"), now: now) == t("2027-02-28T09:00:00Z"))
        // Weekdays skip the weekend: Friday's next is Monday.
        #expect(Recurrence(step: .weekdays).nextDue(after: t("2026-12-04T09:00:00Z"), now: now) == t("2026-12-07T09:00:00Z"))
        #expect(Recurrence(step: .weekdays).nextDue(after: t("2026-11-27T09:00:00Z"), now: now) == t("2026-11-30T09:00:00Z"))
        // Years behind is a jump, not a walk; past year 9999 there is no next.
        #expect(Recurrence(step: .hours(1)).nextDue(after: t("0001-01-01T00:30:00Z"), now: now) == t("2026-11-30T08:30:00Z"))
        #expect(Recurrence(step: .months(1)).nextDue(after: t("1900-01-15T00:00:00Z"), now: now) == t("2026-12-15T00:00:00Z"))
        #expect(Recurrence(step: .months(24)).nextDue(after: t("9999-01-01T00:00:00Z"), now: t("9999-06-01T00:00:00Z")) == nil)
    }
}
