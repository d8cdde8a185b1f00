import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
import StarlineTestSupport
import Testing

/// `sl-memory import`, the built executable, on packages the test seals itself with the suite's age code at a
/// low scrypt work factor (fast, and scrypt's own memory does not hide the import's): the file is opened once
/// and both passes read that descriptor, the import is one transaction that commits only after the last byte,
/// memory stays bounded whatever the titles weigh, and 10,000 notes are one change of the vault.
/// (Here rather than in EndToEndTests, which does not link StarlineCrypto.)
@Suite("sl-memory import: one descriptor, one transaction, bounded memory")
struct MemoryImportTests {
    static let code = "TEST-SHAR-ECOD-E000-0000-0001"

    /// One user's vault under a temporary home.
    final class Home: @unchecked Sendable {
        let home = TemporaryDirectory("import-home")
        let runtime = TemporaryDirectory("import-runtime")
        let passphrase = "import test passphrase"
        var environment: [String: String] = [:]

        init() throws {
            chmod(runtime.path, 0o700)
            environment = [
                "STARLINE_MEMORY_PASSPHRASE": passphrase, "XDG_RUNTIME_DIR": runtime.path,
                "STARLINE_MEMORY_SHARE_CODE": MemoryImportTests.code
            ]
            try ok(["init"])
        }

        func run(_ arguments: [String], environment extra: [String: String] = [:]) throws -> ToolRun {
            try Tools.run("sl-memory", arguments, home: home.path, environment: environment.merging(extra) { $1 })
        }

        @discardableResult
        func ok(_ arguments: [String], environment extra: [String: String] = [:]) throws -> JSON {
            let run = try self.run(arguments, environment: extra)
            guard run.status == 0 else {
                throw StarlineError(.data, "sl-memory \(arguments.joined(separator: " ")) exited \(run.status): \(run.stderrText)")
            }
            return try run.json()
        }

        /// Runs a list command (list, search) and requires exit 0; its records, JSON Lines as every list prints piped.
        func list(_ arguments: [String], environment extra: [String: String] = [:]) throws -> [JSON] {
            let run = try self.run(arguments, environment: extra)
            guard run.status == 0 else {
                throw StarlineError(.data, "sl-memory \(arguments.joined(separator: " ")) exited \(run.status): \(run.stderrText)")
            }
            return try run.jsonLines()
        }

        func titles() throws -> [String] { try list(["list"]).compactMap { $0["title"]?.stringValue }.sorted() }

        /// The manifest counter: +1 with every committed change.
        func counter() throws -> Int64 { try ok(["verify"])["counter"]?.intValue ?? -1 }
    }

    struct Note {
        var title: String
        var body: String
        var attachments: [(name: String, bytes: [UInt8])] = []
    }

    static let time = "2025-03-04T05:06:07Z"

    /// The JSON Lines package of `notes` (docs/formats.md, "Memory export").
    static func plaintext(_ notes: [Note]) -> [UInt8] {
        var lines: [JSON] = [
            .object([
                ("format", .string("starline-memory-export")), ("version", .int(1)), ("exportedAt", .string(time)),
                ("notes", .int(Int64(notes.count)))
            ])
        ]
        var attachments = 0
        for (i, note) in notes.enumerated() {
            let files = note.attachments.map {
                JSON.object([
                    ("name", .string($0.name)), ("size", .int(Int64($0.bytes.count))),
                    ("blake2b", .string(GenericHash.hash($0.bytes, length: 32).map { String(format: "%02x", $0) }.joined()))
                ])
            }
            lines.append(
                .object([
                    (
                        "note",
                        .object([
                            ("id", .string("n\(i)")), ("title", .string(note.title)), ("body", .string(note.body)), ("tags", .array([])),
                            ("createdAt", .string(time)), ("updatedAt", .string(time)), ("attachments", .array(files))
                        ])
                    )
                ]))
            for file in note.attachments where !file.bytes.isEmpty {
                lines.append(.object([("data", .string(Base64.encode(file.bytes)))]))
                attachments += 1
            }
            attachments += note.attachments.filter(\.bytes.isEmpty).count
        }
        lines.append(.object([("end", .object([("notes", .int(Int64(notes.count))), ("attachments", .int(Int64(attachments)))]))]))
        return Array(lines.map { $0.serialized() + "\n" }.joined().utf8)
    }

    static func seal(_ plaintext: [UInt8]) throws -> [UInt8] {
        try AgeEncryptor.encrypt(plaintext, passphrase: SecretBytes(copying: Array(code.utf8)), workFactor: 10)
    }

    /// Notes whose package spans several 64 KiB age chunks, so a chunk near the end fails after earlier ones passed.
    static func notes(_ prefix: String, count: Int = 40) -> [Note] {
        (0..<count).map { Note(title: "\(prefix) \($0)", body: String(repeating: "\(prefix) body \($0) ", count: 300)) }
    }

    static func write(_ bytes: [UInt8], to path: String) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }

    #if arch(x86_64)
    static let readSyscall = 0
    #else
    static let readSyscall = 63
    #endif

    /// Runs `import FILE` with the vault passphrase on a FIFO the test holds: the tool opens FILE, checks all of
    /// it (pass 1), then blocks reading the passphrase (descriptor 3) before it opens the vault and imports
    /// (pass 2). `between` runs while it is blocked there — seen in /proc/PID/syscall, not guessed with a sleep.
    func importBlockedBetweenPasses(_ h: Home, file: String, between: () throws -> Void) throws -> ToolRun {
        let fifo = h.home.file("passphrase.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let running = try Tools.spawn(
            "/bin/sh", ["-c", "exec '\(Tools.path("sl-memory"))' import '\(file)' --passphrase-fd 3 3<'\(fifo)'"],
            home: h.home.path, environment: h.environment)
        // The shell's open for reading waits for a writer; a non-blocking open for writing succeeds once it waits.
        var writer: Int32 = -1
        let deadline = MonotonicClock.nanoseconds() + 30_000_000_000
        while writer < 0 && MonotonicClock.nanoseconds() < deadline {
            writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer < 0 { usleep(10_000) }
        }
        try #require(writer >= 0, "the tool never opened the passphrase FIFO")
        var blocked = false
        while !blocked && MonotonicClock.nanoseconds() < deadline {
            let syscall = (try? String(contentsOfFile: "/proc/\(running.pid)/syscall", encoding: .utf8)) ?? ""
            blocked = syscall.hasPrefix("\(Self.readSyscall) 0x3 ")
            if !blocked { usleep(10_000) }
        }
        guard blocked else {
            close(writer)
            let run = running.waitOrKill(seconds: 5)
            Issue.record("the tool never blocked reading the passphrase: exit \(run.status) \(run.stderrText)")
            return run
        }
        try between()
        let line = Array((h.passphrase + "\n").utf8)
        #expect(line.withUnsafeBytes { FileBytes.write(fd: writer, $0) })
        close(writer)
        return running.waitOrKill(seconds: 60)
    }

    @Test(
        "W3 import: the file is opened once: another package renamed over the path between the passes is never read",
        .requiresRoot("watches sl-memory block in read(2) through /proc/PID/syscall; it makes itself undumpable, so only root may"))
    func swappedBetweenPasses() throws {
        let h = try Home()
        let file = h.home.file("export.age"), planted = h.home.file("planted.age")
        try Self.write(try Self.seal(Self.plaintext(Self.notes("original"))), to: file)
        // The attacker's package: valid chunks of their notes, then cut short.
        var theirs = try Self.seal(Self.plaintext(Self.notes("planted")))
        theirs.removeLast(100)
        try Self.write(theirs, to: planted)
        let run = try importBlockedBetweenPasses(h, file: file) {
            #expect(rename(planted, file) == 0)
        }
        #expect(run.status == 0, "\(run.stderrText)")
        let titles = try h.titles()
        #expect(!titles.contains { $0.hasPrefix("planted") }, "notes of the file swapped in were added: \(titles.prefix(3))")
        #expect(titles == Self.notes("original").map(\.title).sorted())
    }

    @Test(
        """
        W3 import: the file changed in place between the passes — its last chunk damaged, or another valid package — \
        adds nothing (exit 12)
        """,
        .requiresRoot("watches sl-memory block in read(2) through /proc/PID/syscall; it makes itself undumpable, so only root may"),
        arguments: ["damaged last chunk", "another package"])
    func changedInPlaceBetweenPasses(_ change: String) throws {
        let h = try Home()
        let file = h.home.file("export.age")
        let original = try Self.seal(Self.plaintext(Self.notes("original")))
        try Self.write(original, to: file)
        let before = try h.counter()
        let run = try importBlockedBetweenPasses(h, file: file) {
            // The same inode, as its owner (or anyone allowed to write it) can change it.
            let fd = open(file, O_WRONLY | (change == "another package" ? O_TRUNC : 0))
            #expect(fd >= 0)
            defer { close(fd) }
            if change == "another package" {
                let other = try Self.seal(Self.plaintext(Self.notes("other")))
                #expect(other.withUnsafeBytes { FileBytes.write(fd: fd, $0) })
            } else {
                let garbage = [UInt8](repeating: 0x5A, count: 8)
                #expect(garbage.withUnsafeBytes { pwrite(fd, $0.baseAddress, 8, off_t(original.count - 24)) } == 8)
            }
        }
        #expect(run.status == 12, "\(run.stderrText)")
        #expect(try h.titles().isEmpty, "a failed import added notes")
        #expect(try h.counter() == before, "a failed import committed a change")
    }

    @Test(
        """
        W3 import: a package whose last chunk is damaged adds nothing, and neither does one whose note lists an \
        attachment name twice
        """)
    func damagedPackagesAddNothing() throws {
        let h = try Home()
        var damaged = try Self.seal(Self.plaintext(Self.notes("damaged")))
        damaged[damaged.count - 20] ^= 0x01
        let damagedFile = h.home.file("damaged.age")
        try Self.write(damaged, to: damagedFile)
        let first = try h.run(["import", damagedFile])
        #expect(first.status == 12, "\(first.stderrText)")
        // Both attachments check (size, BLAKE2b); the vault refuses the second name, which the old import found
        // only after it had added the note and its first attachment.
        let twice = Note(title: "twice", body: "b", attachments: [("a.txt", Array("one".utf8)), ("a.txt", Array("two".utf8))])
        let twiceFile = h.home.file("twice.age")
        try Self.write(try Self.seal(Self.plaintext([Note(title: "before", body: "b"), twice])), to: twiceFile)
        let second = try h.run(["import", twiceFile])
        #expect(second.status == 12, "\(second.stderrText)")
        #expect(try h.titles().isEmpty)
    }

    @Test("W3 import: imported notes keep version 1 and their times, with their attachments, in one change")
    func notesKeepTheirTimes() throws {
        let h = try Home()
        let file = h.home.file("export.age")
        let photo = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try Self.write(
            try Self.seal(
                Self.plaintext([
                    Note(title: "with files", body: "b", attachments: [("photo.jpg", photo), ("empty", [])]),
                    Note(title: "plain", body: "c")
                ])), to: file)
        let before = try h.counter()
        #expect(try h.ok(["import", file])["imported"]?["attachments"]?.intValue == 2)
        #expect(try h.counter() == before + 1)
        let notes = try h.list(["list"])
        #expect(notes.count == 2)
        for note in notes {
            #expect(note["version"]?.intValue == 1)
            #expect(note["updatedAt"]?.stringValue == Self.time)
        }
        let id = try #require(notes.first { $0["title"]?.stringValue == "with files" }?["id"]?.stringValue)
        #expect(try h.run(["get", id, "photo.jpg"]).stdout == photo)
        #expect(try h.run(["get", id, "empty"]).stdout.isEmpty)
        #expect(try h.ok(["verify"])["ok"] == .bool(true))
    }

    @Test("W3 import: --dry-run of 400 notes with 2 MiB titles stays under 200 MB peak RSS and lists each title cut short")
    func boundedMemoryForLargeTitles() throws {
        let h = try Home()
        let file = h.home.file("titles.age")
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        let encryptor = try AgeEncryptor(
            passphrase: SecretBytes(copying: Array(Self.code.utf8)), workFactor: 10, output: .fileDescriptor(fd, name: file))
        let title = [UInt8](repeating: UInt8(ascii: "t"), count: 2 << 20)
        let count = 400
        try encryptor.write(
            Array(
                (JSON.object([
                    ("format", .string("starline-memory-export")), ("version", .int(1)), ("exportedAt", .string(Self.time)),
                    ("notes", .int(Int64(count)))
                ]).serialized() + "\n").utf8))
        for i in 0..<count {
            try encryptor.write(Array("{\"note\":{\"id\":\"n\(i)\",\"title\":\"\(i) ".utf8))
            try encryptor.write(title)
            try encryptor.write(
                Array(
                    "\",\"body\":\"b\",\"tags\":[],\"createdAt\":\"\(Self.time)\",\"updatedAt\":\"\(Self.time)\",\"attachments\":[]}}\n"
                        .utf8))
        }
        try encryptor.write(Array("{\"end\":{\"notes\":\(count),\"attachments\":0}}\n".utf8))
        try encryptor.finish()
        close(fd)
        // ru_maxrss of the one child python3 runs: its peak resident size, in KiB.
        let script =
            "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], stdout=open('\(h.home.file("out.json"))', 'wb')); print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        let environment = h.environment.merging(["HOME": h.home.path, "STARLINE_HOME": h.home.path + "/starline"]) { $1 }
        let run = try Tools.shell(
            "python3 -c \"\(script)\" '\(Tools.path("sl-memory"))' import --dry-run '\(file)'", environment: environment)
        let fields = run.stdoutText.split(separator: " ").map { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1 }
        #expect(fields.first == 0, "\(run.stdoutText) \(run.stderrText)")
        let peak = fields.last ?? -1
        #expect(peak > 0 && peak < 200 * 1024, "peak RSS \(peak) KiB for 400 titles of 2 MiB")
        let result = try JSON.parse(Array(try Data(contentsOf: URL(fileURLWithPath: h.home.file("out.json")))))
        #expect(result["wouldImport"]?["notes"]?.intValue == Int64(count))
        let listed = result["notes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(listed.count == count)
        #expect(listed.allSatisfy { $0.unicodeScalars.count <= 201 && $0.hasSuffix("…") })
        #expect(try h.titles().isEmpty)
    }

    @Test("W3 import: 10,000 exported notes import as one change of the vault (counter +1), whole and verified")
    func tenThousandNotes() throws {
        let source = try Home()
        let lines = (0..<10_000).map { "note number \($0) about topic\($0 % 100)" }
        let fill = try Tools.run(
            "sl-memory", ["add", "--lines", "--jsonl"], stdin: Array((lines.joined(separator: "\n") + "\n").utf8),
            home: source.home.path, environment: source.environment)
        #expect(fill.status == 0, "\(fill.stderrText)")
        let file = source.home.file("export.age")
        let export = try source.run(["export", "-o", file, "--show-secrets"])
        #expect(export.status == 0, "\(export.stderrText)")
        let code = try #require(try export.json()["shareCode"]?.stringValue)
        let target = try Home()
        let before = try target.counter()
        let running = try Tools.spawn(
            "sl-memory", ["import", file], home: target.home.path,
            environment: target.environment.merging(["STARLINE_MEMORY_SHARE_CODE": code]) { $1 })
        let run = running.waitOrKill(seconds: 600)
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(try run.json()["imported"]?["notes"]?.intValue == 10_000)
        #expect(try target.counter() == before + 1, "one transaction for the whole import")
        let verify = try target.ok(["verify"])
        #expect(verify["ok"] == .bool(true))
        #expect(verify["records"]?.intValue == 10_000)
        #expect(try target.list(["search", "topic7"]).count == 100)
    }

    @Test(
        """
        W3 import: a FIFO or device is refused at once: as the export, the share code file (also another user's \
        file), and a file to attach
        """, .requiresRoot("gives the share code file to another uid (chown 65534)"))
    func nonRegularInputsRefused() throws {
        let h = try Home()
        let fifo = h.home.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let file = h.home.file("export.age")
        try Self.write(try Self.seal(Self.plaintext([Note(title: "one", body: "b")])), to: file)
        // Nobody writes the FIFO: opening it for reading would wait forever.
        let asExport = try Tools.spawn("sl-memory", ["import", fifo], home: h.home.path, environment: h.environment).waitOrKill(seconds: 30)
        #expect(asExport.status == 2, "\(asExport.stderrText)")
        let asCode = try h.run(["import", file, "--share-code-file", fifo])
        #expect(asCode.status == 10 && asCode.errorCode == "INSECURE_PERMISSIONS", "\(asCode.stderrText)")
        let devCode = try h.run(["import", file, "--share-code-file", "/dev/zero"])
        #expect(devCode.status == 10 && devCode.errorCode == "INSECURE_PERMISSIONS", "\(devCode.stderrText)")
        // Another user's file that the tool can read (private to them, root could; readable by all, anyone): a
        // secret is never taken from it.
        let foreign = h.home.file("code")
        try Self.write(Array((Self.code + "\n").utf8), to: foreign)
        chmod(foreign, ToolUser.dropped == nil ? 0o600 : 0o644)
        #expect(chown(foreign, 65534, 65534) == 0)
        let asForeign = try h.run(["import", file, "--share-code-file", foreign])
        #expect(asForeign.status == 10 && asForeign.errorCode == "INSECURE_PERMISSIONS", "\(asForeign.stderrText)")
        let passphraseForeign = try h.run(["list", "--passphrase-file", foreign])
        #expect(passphraseForeign.status == 10 && passphraseForeign.errorCode == "INSECURE_PERMISSIONS", "\(passphraseForeign.stderrText)")
        #expect(chown(foreign, 0, 0) == 0 && chmod(foreign, 0o600) == 0)
        #expect(try h.ok(["import", file, "--share-code-file", foreign])["imported"]?["notes"]?.intValue == 1)
        let id = try #require(try h.list(["list"]).first?["id"]?.stringValue)
        let attach = try Tools.spawn("sl-memory", ["attach", id, fifo], home: h.home.path, environment: h.environment).waitOrKill(
            seconds: 30)
        #expect(attach.status == 2, "\(attach.stderrText)")
    }
}
