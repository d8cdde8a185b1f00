import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
@testable import StarlineWorkspace
@testable import TasksCommands

/// A symlinked workspace.json is written through, a no-op writes nothing, numbers
/// of unknown fields survive a rewrite with their text.
@Suite struct StoreHardeningTests {
    let home = TemporaryDirectory("sl-tasks-store-hardening")
    var dataDir: String { home.path + "/starline/data" }
    var workspacePath: String { dataDir + "/workspace.json" }
    static let now = "2026-11-30T08:00:00Z"

    func run(_ words: [String], stdin: [UInt8] = [], environment: [String: String] = [:]) -> (
        status: StarlineCore.ExitStatus, stdout: String, stderr: String
    ) {
        runTasks(words, home: home, stdin: stdin, environment: environment, now: Timestamp(rfc3339: Self.now))
    }

    func bytes(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { Array($0) } }

    /// Inode and modification time (nanoseconds): a rewrite changes both.
    func identity(_ path: String) -> [Int] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        return [Int(info.st_ino), Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec)]
    }

    func isSymlink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
    }

    // MARK: 14 — a symlinked workspace.json

    @Test("a symlinked workspace.json stays a link: writes go to its target, with the lock and .bak beside the target")
    func symlinkWrittenThrough() throws {
        let dotfiles = home.path + "/dotfiles/starline"
        try FileManager.default.createDirectory(atPath: dotfiles, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        let target = dotfiles + "/workspace.json"
        try #"{"version":1,"tasks":[],"websites":[],"recents":[]}"#.write(toFile: target, atomically: false, encoding: .utf8)
        // Relative, as stow makes them.
        try FileManager.default.createSymbolicLink(atPath: workspacePath, withDestinationPath: "../../dotfiles/starline/workspace.json")
        #expect(run(["add", "one", "--now", Self.now]).status == .ok)
        #expect(run(["add", "two", "--now", Self.now]).status == .ok)
        let id = try #require(try JSON.parse(run(["list", "--jsonl"]).stdout.split(separator: "\n")[0].description)["id"]?.stringValue)
        #expect(run(["done", id]).status == .ok)  // the general path too
        #expect(isSymlink(workspacePath))
        let ws = try JSON.parse(try #require(bytes(target)))
        #expect(ws["tasks"]?.arrayValue?.count == 2)
        #expect(FileManager.default.fileExists(atPath: target + ".bak"))
        #expect(FileManager.default.fileExists(atPath: target + ".lock"))
        #expect(!FileManager.default.fileExists(atPath: workspacePath + ".bak"))
        #expect(!FileManager.default.fileExists(atPath: workspacePath + ".lock"))
    }

    @Test("a dangling symlink names the file to create")
    func danglingSymlink() throws {
        let elsewhere = home.path + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: workspacePath, withDestinationPath: elsewhere + "/ws.json")
        #expect(run(["add", "one"]).status == .ok)
        #expect(isSymlink(workspacePath))
        #expect(try JSON.parse(try #require(bytes(elsewhere + "/ws.json")))["tasks"]?.arrayValue?.count == 1)
    }

    // MARK: 15 — a no-op writes nothing

    @Test("commands that change nothing write nothing: inode, mtime and .bak stay; the record is printed unchanged")
    func noOpsWriteNothing() throws {
        let added = try JSON.parse(run(["add", "t", "-t", "a", "--now", "2026-11-01T00:00:00Z"]).stdout)
        let id = try #require(added["id"]?.stringValue)
        #expect(run(["edit", id, "--title", "X", "--now", "2026-11-02T00:00:00Z"]).status == .ok)
        let file = identity(workspacePath), backup = bytes(workspacePath + ".bak")
        let stored = try JSON.parse(try #require(bytes(workspacePath)))["tasks"]?[0]
        for words in [
            ["edit", id, "--title", "X"], ["edit", id, "--untag", "absent"], ["edit", id, "--tag", "a"],
            ["edit", id, "--no-due"], ["edit", id, "--notes", ""], ["undo", id]
        ] {
            let r = run(words + ["--now", "2026-11-03T00:00:00Z"])
            #expect(r.status == .ok, "\(words): \(r.stderr)")
            #expect(try JSON.parse(r.stdout)["updatedAt"]?.stringValue == "2026-11-02T00:00:00Z", "\(words)")
            // The record as stored, with its working-set number (1: the only task, open; null once done).
            let stays = try #require(stored)
            #expect(try JSON.parse(r.stdout) == TaskRecord.output(stays, number: TaskRecord.isDone(stays) ? .some(nil) : 1), "\(words)")
            #expect(identity(workspacePath) == file, "\(words) rewrote the file")
            #expect(bytes(workspacePath + ".bak") == backup, "\(words) rotated the backup")
        }
    }

    @Test("re-importing one's own export (json and taskwarrior) changes nothing and writes nothing")
    func reimportOwnExport() throws {
        _ = run(["add", "a", "--due", "2026-12-01T10:00:00Z", "-t", "x", "--notes", "n", "--now", Self.now])
        let b = try JSON.parse(run(["add", "b", "--now", Self.now]).stdout)
        _ = run(["done", try #require(b["id"]?.stringValue), "--now", Self.now])
        _ = run(["sites", "add", "https://example.com/a", "--title", "A", "--now", Self.now])
        _ = run(["recent", "add", "https://example.com/r", "--now", Self.now])
        let file = identity(workspacePath), backup = bytes(workspacePath + ".bak")
        for format in ["json", "taskwarrior", "netscape"] {
            let exported = run(["export", "-f", format])
            let r = run(["import", "-", "-f", format, "--now", "2026-12-01T00:00:00Z"], stdin: Array(exported.stdout.utf8))
            #expect(r.status == .ok, "\(format): \(r.stderr)")
            let counts = try JSON.parse(r.stdout)
            #expect(counts["tasks"]?["added"]?.intValue == 0 && counts["tasks"]?["updated"]?.intValue == 0, "\(format): \(counts)")
            #expect(counts["tasks"]?["unchanged"]?.intValue == (format == "netscape" ? 0 : 2), "\(format): \(counts)")
            #expect(counts["recents"]?["updated"]?.intValue == 0, "\(format): \(counts)")
            #expect(identity(workspacePath) == file, "\(format) rewrote the file")
            #expect(bytes(workspacePath + ".bak") == backup, "\(format) rotated the backup")
        }
    }

    // MARK: 16 — numbers of unknown fields

    static let numbers = [
        "1e400", "12345678901234567891", "-12345678901234567891", "3.14159265358979323846", "-0", "1E-400", "0.1", "1.5", "100"
    ]

    @Test("numbers in unknown fields survive a rewrite with their meaning (huge, tiny, long, negative zero)")
    func unknownNumbersSurvive() throws {
        let list = Self.numbers.joined(separator: ",")
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        try
            #"{"version":1,"x-top":[\#(list)],"tasks":[{"id":"c0ffee00-0000-4000-8000-000000000001","title":"t","notes":"","tags":[],"due":null,"done":false,"doneAt":null,"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z","x":[\#(list)],"big":18446744073709551616}],"websites":[],"recents":[]}"#
            .write(toFile: workspacePath, atomically: false, encoding: .utf8)
        #expect(run(["edit", "c0ffee00", "--title", "u"]).status == .ok)
        let text = String(decoding: try #require(bytes(workspacePath)), as: UTF8.self)
        for n in Self.numbers where n != "1.5" && n != "0.1" && n != "100" { #expect(text.contains(n), "\(n) lost: \(text)") }
        #expect(text.contains("18446744073709551616"))
        #expect(!text.contains("e+19"))
        // Read back: the same values.
        let task = try #require(try JSON.parse(text)["tasks"]?[0])
        #expect(task["title"]?.stringValue == "u")
        #expect(task["x"] == (try JSON.parse("[\(list)]")))
        #expect(try JSON.parse(text)["x-top"] == (try JSON.parse("[\(list)]")))
    }

    @Test("JSON keeps a number's text only when a Double would change it")
    func numberText() throws {
        #expect(try JSON.parse("1.5") == .double(1.5))
        #expect(try JSON.parse("1.50") == .double(1.5))
        #expect(try JSON.parse("1e2") == .double(100))
        #expect(try JSON.parse("7") == .int(7))
        #expect(try JSON.parse("1e400") == .number("1e400"))
        #expect(try JSON.parse("12345678901234567891") == .number("12345678901234567891"))
        #expect(try JSON.parse("-0") == .number("-0"))
        #expect(try JSON.parse("[1e400,12345678901234567891]").serialized() == "[1e400,12345678901234567891]")
        #expect(JSON.number("-0").intValue == 0)
        #expect(JSON.number("1e400").doubleValue == .infinity)
        #expect(JSON.number("1.50e3") == JSON.number("1500"))
    }
}
