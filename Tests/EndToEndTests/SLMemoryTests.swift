import Foundation
import StarlineCore
import StarlineSQLite
import StarlineTestSupport
import Testing

/// sl-memory, the built executable, against real files under a temporary STARLINE_HOME (W2, W3).
@Suite struct SLMemoryTests {
    /// One user's home: the vault, its pin and the agent's runtime directory live under it.
    final class Home: @unchecked Sendable {
        let home = TemporaryDirectory("memory-home")
        let runtime = TemporaryDirectory("memory-runtime")
        var environment: [String: String] = [:]
        let passphrase = "correct horse battery staple"

        init() {
            chmod(runtime.path, 0o700)
            environment = ["STARLINE_MEMORY_PASSPHRASE": passphrase, "XDG_RUNTIME_DIR": runtime.path]
        }

        var vault: String { home.path + "/starline/data/memory" }

        func run(_ arguments: [String], stdin: [UInt8]? = nil, environment extra: [String: String] = [:]) throws -> ToolRun {
            var env = environment
            for (k, v) in extra { env[k] = v }
            return try Tools.run("sl-memory", arguments, stdin: stdin, home: home.path, environment: env)
        }

        /// Runs and requires exit 0; the JSON document printed.
        @discardableResult
        func ok(_ arguments: [String], stdin: [UInt8]? = nil, environment extra: [String: String] = [:]) throws -> JSON {
            let run = try self.run(arguments, stdin: stdin, environment: extra)
            guard run.status == 0 else {
                throw StarlineError(.data, "sl-memory \(arguments.joined(separator: " ")) exited \(run.status): \(run.stderrText)")
            }
            return try run.json()
        }

        /// Runs a list command (list, search) and requires exit 0; its records, JSON Lines as every list prints piped.
        func list(_ arguments: [String], environment extra: [String: String] = [:]) throws -> [JSON] {
            let run = try self.run(arguments, stdin: nil, environment: extra)
            guard run.status == 0 else {
                throw StarlineError(.data, "sl-memory \(arguments.joined(separator: " ")) exited \(run.status): \(run.stderrText)")
            }
            return try run.jsonLines()
        }

        func initialize() throws { try ok(["init"]) }
    }

    @Test(
        """
        W2 notes: add from arguments and stdin, list, show, edit (version +1), search by every word, rm — and no \
        plaintext on disk
        """)
    func w2NotesRoundTrip() throws {
        let h = Home()
        try h.initialize()
        let first = try h.ok(["add", "--title", "Router", "--tag", "home", "the", "admin", "password", "is", "zebra-quartz"])
        let id = try #require(first["id"]?.stringValue)
        #expect(first["version"]?.intValue == 1)
        let second = try h.ok(["add", "-", "--title", "Invoice", "--tag", "work"], stdin: Array("paid by transfer, zebra account\n".utf8))
        #expect(second["body"]?.stringValue == "paid by transfer, zebra account\n")
        let list = try h.list(["list"])
        #expect(list.count == 2)
        #expect(list.allSatisfy { $0["body"] == nil }, "list carries no bodies")
        #expect(try h.ok(["show", String(id.prefix(6))])["body"]?.stringValue == "the admin password is zebra-quartz")
        #expect(try h.list(["search", "zebra"]).count == 2)
        #expect(try h.list(["search", "zebra", "transfer"]).compactMap { $0["title"]?.stringValue } == ["Invoice"])
        #expect(try h.list(["search", "router"]).count == 1, "titles are indexed")
        let edited = try h.ok(["edit", id, "--body", "rotated", "--tag", "home", "--tag", "network"])
        #expect(edited["version"]?.intValue == 2)
        #expect(edited["tags"]?.arrayValue?.compactMap(\.stringValue).sorted() == ["home", "network"])
        #expect(try h.list(["search", "zebra-quartz"]).isEmpty == true, "the index follows the edit")
        #expect(try h.ok(["rm", id])["removed"]?.stringValue == id)
        #expect(try h.ok(["list", "--jsonl"])["title"]?.stringValue == "Invoice")
        // Nothing readable on disk: the database and its WAL.
        var bytes = (try? Data(contentsOf: URL(fileURLWithPath: h.vault + "/vault.db"))) ?? Data()
        bytes += (try? Data(contentsOf: URL(fileURLWithPath: h.vault + "/vault.db-wal"))) ?? Data()
        #expect(bytes.count > 0)
        #expect(bytes.range(of: Data("transfer".utf8)) == nil)
        #expect(bytes.range(of: Data("Invoice".utf8)) == nil)
    }

    @Test(
        """
        W2 a wrong passphrase is exit 13; a damaged header is exit 12 (corruption, not a wrong passphrase); a missing \
        vault is exit 6, never an empty list
        """)
    func w2WrongPassphraseAndCorruption() throws {
        let h = Home()
        let missing = try h.run(["list"])
        #expect(missing.status == 6)
        #expect(missing.errorCode == "VAULT_NOT_FOUND")
        #expect(missing.stdout.isEmpty)
        try h.initialize()
        try h.ok(["add", "secret note"])
        let wrong = try h.run(["list"], environment: ["STARLINE_MEMORY_PASSPHRASE": "not it"])
        #expect(wrong.status == 13)
        #expect(wrong.errorCode == "WRONG_PASSPHRASE")
        // Flip one byte of the header row.
        do {
            let db = try SQLiteDatabase(path: h.vault + "/vault.db")
            let row = try #require(try db.queryFirst("SELECT bytes FROM vault_header WHERE id = 1"))
            var header = try #require(row.blob("bytes"))
            header[header.count / 2] ^= 0x01
            try db.run("UPDATE vault_header SET bytes = ? WHERE id = 1", [.blob(header)])
        }
        let damaged = try h.run(["list"])
        #expect(damaged.status == 12)
        #expect(damaged.errorCode == "VAULT_CORRUPT")
        #expect(damaged.stdout.isEmpty)
    }

    @Test(
        """
        W2 without a passphrase, agent or terminal the vault is LOCKED (exit 13) and says how to unlock; a passphrase \
        file others can read is refused
        """)
    func w2LockedAndPassphraseFile() throws {
        let h = Home()
        try h.initialize()
        let locked = try h.run(["list"], environment: ["STARLINE_MEMORY_PASSPHRASE": ""])
        #expect(locked.status == 13)
        #expect(locked.errorCode == "LOCKED")
        #expect(locked.stderrText.contains("sl-memory unlock"))
        let file = h.home.file("pass")
        try (h.passphrase + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o644)
        let readable = try h.run(["list", "--passphrase-file", file], environment: ["STARLINE_MEMORY_PASSPHRASE": ""])
        #expect(readable.status == 10)
        #expect(readable.errorCode == "INSECURE_PERMISSIONS")
        chmod(file, 0o600)
        #expect(try h.run(["list", "--passphrase-file", file], environment: ["STARLINE_MEMORY_PASSPHRASE": ""]).status == 0)
    }

    @Test("W2 passwd re-wraps the key: the old passphrase stops working, the notes stay; rekey keeps them too")
    func w2PasswdAndRekey() throws {
        let h = Home()
        try h.initialize()
        try h.ok(["add", "kept across passwd"])
        let change = try h.run(
            ["passwd", "--passphrase-fd", "0"], stdin: Array("\(h.passphrase)\nnew passphrase\n".utf8),
            environment: ["STARLINE_MEMORY_PASSPHRASE": ""])
        #expect(change.status == 0, "\(change.stderrText)")
        #expect(try h.run(["list"]).status == 13)
        let new = ["STARLINE_MEMORY_PASSPHRASE": "new passphrase"]
        #expect(try h.list(["list"], environment: new).count == 1)
        let rekey = try h.ok(["rekey"], environment: new)
        #expect(rekey["recordsMoved"]?.intValue == 1)
        #expect(try h.list(["search", "passwd"], environment: new).count == 1)
        #expect(try h.ok(["verify"], environment: new)["ok"] == .bool(true))
    }

    @Test(
        """
        W2 attachments stream in and out byte for byte; a flipped byte in the file is VAULT_CORRUPT naming it, and \
        verify lists it
        """)
    func w2Attachments() throws {
        let h = Home()
        try h.initialize()
        let note = try h.ok(["add", "with a file"])
        let id = try #require(note["id"]?.stringValue)
        let payload = (0..<(1 << 20) + 12345).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 13) }
        let file = h.home.file("scan.bin")
        _ = FileManager.default.createFile(atPath: file, contents: Data(payload))
        let attached = try h.ok(["attach", id, file])
        #expect(attached["attachments"]?.arrayValue?.first?["size"]?.intValue == Int64(payload.count))
        let out = try h.run(["get", id, "scan.bin"])
        #expect(out.status == 0)
        #expect(out.stdout == payload)
        let copy = h.home.file("copy.bin")
        #expect(try h.ok(["get", id, "scan.bin", "-o", copy])["file"]?.stringValue == copy)
        #expect(FileManager.default.contents(atPath: copy) == Data(payload))
        // The recorded digest is what sha256sum says of the file get wrote.
        let sum = try Tools.runInstalled("/usr/bin/sha256sum", [copy])
        #expect(sum.status == 0 && attached["attachments"]?.arrayValue?.first?["sha256"]?.stringValue == String(sum.stdoutText.prefix(64)))
        // Damage the stored file.
        let stored = try #require(try FileManager.default.contentsOfDirectory(atPath: h.vault + "/attachments").first)
        let path = h.vault + "/attachments/" + stored
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes[bytes.count / 2] ^= 0x40
        try bytes.write(to: URL(fileURLWithPath: path))
        let damaged = try h.run(["get", id, "scan.bin", "-o", h.home.file("bad.bin")])
        #expect(damaged.status == 12)
        #expect(damaged.errorCode == "VAULT_CORRUPT")
        #expect(damaged.stderrText.contains("scan.bin"))
        #expect(!FileManager.default.fileExists(atPath: h.home.file("bad.bin")), "-o leaves nothing behind")
        let verify = try h.run(["verify"])
        #expect(verify.status == 12)
        #expect(try verify.json()["problems"]?.arrayValue?.first?["kind"]?.stringValue == "attachmentCorrupt")
    }

    @Test("W2 a whole vault restored from an older copy is ROLLBACK_DETECTED (exit 12) until verify --accept-rollback")
    func w2Rollback() throws {
        let h = Home()
        try h.initialize()
        try h.ok(["add", "first"])
        let backup = h.home.file("backup")
        #expect(try Tools.shell("cp -a '\(h.vault)' '\(backup)'").status == 0)
        try h.ok(["add", "second"])
        #expect(try Tools.shell("rm -rf '\(h.vault)' && cp -a '\(backup)' '\(h.vault)'").status == 0)
        let rolled = try h.run(["list"])
        #expect(rolled.status == 12)
        #expect(rolled.errorCode == "ROLLBACK_DETECTED")
        #expect(try h.ok(["verify", "--accept-rollback"])["accepted"] == .bool(true))
        #expect(try h.list(["list"]).count == 1)
    }

    @Test(
        """
        W2 an unchanged vault leaves a 0600 pin.fingerprint beside the pin; a record rolled back behind it (mtime put \
        back with touch -d) is still exit 12 naming it
        """)
    func openFingerprint() throws {
        let h = Home()
        try h.initialize()
        let id = try #require(try h.ok(["add", "version", "one"])["id"]?.stringValue)
        let db = h.vault + "/vault.db"
        let old = try Tools.shell("sqlite3 '\(db)' \"SELECT hex(sealed) FROM records WHERE id = '\(id)'\"").stdoutText
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try h.ok(["edit", id, "--body", "version two"])
        let fingerprint = h.home.path + "/starline/state/memory/pin.fingerprint"
        // The first open after a change checks in full and leaves the fingerprint once the change is a clock tick old.
        for _ in 0..<100 where permissionBits(fingerprint) == nil {
            usleep(20_000)
            try h.ok(["show", id])
        }
        #expect(permissionBits(fingerprint) == 0o600)
        #expect(try h.ok(["show", id])["body"]?.stringValue == "version two")

        let mtime = try Tools.shell("stat -c %y '\(db)'").stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let tamper = "UPDATE records SET version = 1, sealed = X'\(old)' WHERE id = '\(id)'"
        #expect(try Tools.shell("sqlite3 '\(db)' \"\(tamper)\" && touch -d '\(mtime)' '\(db)'*").status == 0)
        let shown = try h.run(["show", id])
        #expect(shown.status == 12)
        #expect(shown.errorCode == "VAULT_CORRUPT")
        #expect(try shown.error()["error"]?["details"]?["record"]?.stringValue == id)
    }

    @Test(
        """
        init derives the passphrase key at the interactive cost (2 passes over 64 MiB) unless the debug build's test \
        hook says least
        """)
    func initKeyCost() throws {
        let real = try Home().ok(["init"], environment: ["STARLINE_TEST_CHEAP_KEYS": ""])
        #expect(real["kdf"]?["opsLimit"]?.intValue == 2 && real["kdf"]?["memLimitBytes"]?.intValue == 64 << 20, "\(real)")
        let cheap = try Home().ok(["init"])
        #expect(cheap["kdf"]?["opsLimit"]?.intValue == 1 && cheap["kdf"]?["memLimitBytes"]?.intValue == 8 << 10, "\(cheap)")
    }

    @Test(
        """
        W3 export is an age file that age -d opens with the share code; import checks it whole, adds its notes and \
        attachments; wrong code 13, damaged 12 with nothing added
        """)
    func w3ExportImport() throws {
        let h = Home()
        try h.initialize()
        let note = try h.ok(["add", "--title", "Export me", "--tag", "t1", "exported body"])
        let id = try #require(note["id"]?.stringValue)
        let file = h.home.file("photo.jpg")
        let photo = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        _ = FileManager.default.createFile(atPath: file, contents: Data(photo))
        try h.ok(["attach", id, file])
        let exportPath = h.home.file("memory.age")
        // The export's real cost (the other tests' tools run with STARLINE_TEST_CHEAP_KEYS, Tools.spawn).
        let export = try h.run(["export", "-o", exportPath, "--show-secrets"], environment: ["STARLINE_TEST_CHEAP_KEYS": ""])
        #expect(export.status == 0, "\(export.stderrText)")
        let result = try export.json()
        let code = try #require(result["shareCode"]?.stringValue)
        #expect(result["workFactor"]?.intValue == 18)
        #expect(export.stderrText.contains("Share code: \(code)"))
        let redacted = try h.run(["export", "-o", h.home.file("again.age")])
        #expect(try redacted.json()["shareCode"] == nil, "the code is on stderr only without --show-secrets")
        #expect(redacted.stderrText.contains("Share code: "))
        // The real age opens it.
        let opened = h.home.file("opened.jsonl")
        let age = try Tools.shell("python3 '\(Self.agePty)' '\(code)' age -d -o '\(opened)' '\(exportPath)'")
        #expect(age.status == 0, "\(age.stderrText)")
        let plaintext = try String(contentsOfFile: opened, encoding: .utf8)
        #expect(plaintext.hasPrefix("{\"format\":\"starline-memory-export\""))
        #expect(plaintext.contains("exported body"))
        // Import into another user's vault.
        let other = Home()
        try other.initialize()
        let wrong = try other.run(["import", exportPath], environment: ["STARLINE_MEMORY_SHARE_CODE": "0000-0000-0000-0000-0000-0000"])
        #expect(wrong.status == 13)
        var truncated = try #require(FileManager.default.contents(atPath: exportPath))
        truncated.removeLast(100)
        let damagedPath = other.home.file("damaged.age")
        try truncated.write(to: URL(fileURLWithPath: damagedPath))
        let damaged = try other.run(["import", damagedPath], environment: ["STARLINE_MEMORY_SHARE_CODE": code])
        #expect(damaged.status == 12)
        #expect(try other.list(["list"]).isEmpty == true, "a damaged export adds nothing")
        let imported = try other.ok(
            ["import", exportPath], environment: ["STARLINE_MEMORY_SHARE_CODE": code.lowercased().replacingOccurrences(of: "-", with: "")])
        #expect(imported["imported"]?["notes"]?.intValue == 1)
        #expect(imported["imported"]?["attachments"]?.intValue == 1)
        let copy = try #require(try other.list(["list"]).first)
        #expect(copy["title"]?.stringValue == "Export me")
        #expect(copy["createdAt"] == note["createdAt"])
        let newID = try #require(copy["id"]?.stringValue)
        #expect(try other.run(["get", newID, "photo.jpg"]).stdout == photo)
        #expect(try other.ok(["verify"])["ok"] == .bool(true))
    }

    @Test(
        """
        W2 kill -9 at random instants during adds: the vault always verifies, and holds every add that reported \
        success
        """)
    func w2KillNineDuringWrites() throws {
        let h = Home()
        try h.initialize()
        // With the unlock agent holding the key, an add derives no key: its time is opening the vault and writing.
        // (With a passphrase, Argon2id takes most of a run, and kills landing there would prove nothing.)
        try h.ok(["unlock", "--ttl", "10m"])
        defer { _ = try? h.run(["lock"]) }
        var environment = h.environment
        environment["STARLINE_MEMORY_PASSPHRASE"] = ""
        // How long an add takes here when nothing stops it; the kills are spread over that time.
        var durations: [Double] = []
        for i in 0..<3 {
            let start = Date()
            let run = try Tools.run("sl-memory", ["add", "timed \(i)"], home: h.home.path, environment: environment)
            durations.append(Date().timeIntervalSince(start))
            #expect(run.status == 0, "\(run.stderrText)")
        }
        let typical = durations.sorted()[1]
        var random = SeededRandom(seed: 302)
        var succeeded = 3, killed = 0
        // The kills are spread over twice `spread`, which follows the load: shorter after an add that finished,
        // longer after one that was killed. Under the full suite an add can take several times what it took when
        // measured, or less; a fixed spread then killed every add, or none.
        var spread = typical
        for i in 0..<24 {
            let running = try Tools.spawn(
                "sl-memory", ["add", "note \(i)", "--title", "kill \(i)"], home: h.home.path, environment: environment)
            usleep(UInt32(min(spread, 5) * 2_000_000 * Double(random.next() % 1_000) / 1_000))
            running.signal(SIGKILL)
            let run = running.wait()
            if run.status == 0 {
                succeeded += 1
                spread *= 0.7
            } else {
                killed += 1
                spread *= 1.3
            }
        }
        let verify = try h.run(["verify"])
        #expect(verify.status == 0, "\(verify.stdoutText) \(verify.stderrText)")
        let count = try h.list(["list"]).count
        #expect(count >= succeeded && count <= succeeded + killed)
        // Proof that the kills fell across the runs (not all before or after them): both outcomes, many kills.
        #expect(killed >= 6 && succeeded > 3, "\(killed) adds killed, \(succeeded - 3) finished; a run took \(typical) s alone")
    }

    @Test(
        """
        W3 export --verify and --share-code-fd; import --dry-run adds nothing, --share-code-file is \
        permission-checked, and a package that age -p encrypted imports
        """)
    func w3ExportOptionsAndAgeInterop() throws {
        let h = Home()
        try h.initialize()
        try h.ok(["add", "--title", "One", "first note"])
        try h.ok(["add", "--title", "Two", "second note"])
        let path = h.home.file("out.age")
        let codeFile = h.home.file("code")
        // --share-code-fd 3: the shell points descriptor 3 at a file.
        let export = try Tools.shell(
            "env HOME='\(h.home.path)' STARLINE_HOME='\(h.home.path)/starline' STARLINE_MEMORY_PASSPHRASE='\(h.passphrase)' '\(Tools.path("sl-memory"))' export -o '\(path)' --armor --verify --share-code-fd 3 3>'\(codeFile)'"
        )
        #expect(export.status == 0, "\(export.stderrText)")
        #expect(try export.json()["verified"] == .bool(true))
        #expect(!export.stderrText.contains("Share code:"), "the code went to descriptor 3")
        let code = try String(contentsOfFile: codeFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(code.count == 29)
        #expect(try String(contentsOfFile: path, encoding: .utf8).hasPrefix("-----BEGIN AGE ENCRYPTED FILE-----"))
        let other = Home()
        try other.initialize()
        chmod(codeFile, 0o644)
        #expect(try other.run(["import", path, "--share-code-file", codeFile]).status == 10)
        chmod(codeFile, 0o600)
        let dry = try other.ok(["import", path, "--share-code-file", codeFile, "--dry-run"])
        #expect(dry["notes"]?.arrayValue?.compactMap(\.stringValue).sorted() == ["One", "Two"])
        #expect(try other.list(["list"]).isEmpty == true)
        // Decrypt with age, re-encrypt the package with age -p under a passphrase of our own, import that.
        let plain = other.home.file("package.jsonl"), again = other.home.file("again.age")
        #expect(try Tools.shell("python3 '\(Self.agePty)' '\(code)' age -d -o '\(plain)' '\(path)'").status == 0)
        let reencrypt = try Tools.shell("python3 '\(Self.agePty)' 'my own words' age -p -o '\(again)' '\(plain)'")
        #expect(reencrypt.status == 0, "\(reencrypt.stderrText)")
        let imported = try other.ok(["import", again], environment: ["STARLINE_MEMORY_SHARE_CODE": "my own words"])
        #expect(imported["imported"]?["notes"]?.intValue == 2)
        #expect(try other.list(["search", "second"]).first?["title"]?.stringValue == "Two")
    }

    /// With no terminal to prompt on (setsid: no controlling terminal) and no share code given, import says how
    /// to give one with the options it has, not another command's --password-fd.
    @Test func w3ImportWithoutTerminalNamesTheShareCodeOptions() throws {
        let h = Home()
        try h.initialize()
        try h.ok(["add", "--title", "One", "first note"])
        let path = h.home.file("out.age")
        let export = try Tools.shell(
            "env HOME='\(h.home.path)' STARLINE_HOME='\(h.home.path)/starline' STARLINE_MEMORY_PASSPHRASE='\(h.passphrase)' '\(Tools.path("sl-memory"))' export -o '\(path)' --share-code-fd 3 3>/dev/null"
        )
        #expect(export.status == 0, "\(export.stderrText)")
        let other = Home()
        try other.initialize()
        let run = try Tools.shell(
            "env -u STARLINE_MEMORY_SHARE_CODE HOME='\(other.home.path)' STARLINE_HOME='\(other.home.path)/starline' STARLINE_MEMORY_PASSPHRASE='\(other.passphrase)' setsid -w '\(Tools.path("sl-memory"))' import '\(path)' < /dev/null"
        )
        #expect(run.status == 2, "\(run.stderrText)")
        let message = try #require(try run.error()["error"]?["message"]?.stringValue)
        #expect(
            message.contains("--share-code-fd") && message.contains("STARLINE_MEMORY_SHARE_CODE") && !message.contains("--password-fd"),
            "\(message)")
    }

    @Test("W2 search over 10,000 notes (added with --lines in one transaction) finds exactly the notes holding every word")
    func w2SearchTenThousandNotes() throws {
        let h = Home()
        try h.initialize()
        var lines = (0..<10_000).map { "note number \($0) about topic\($0 % 100) and common words" }
        lines[4_321] = "the one with the needle-in-a-haystack marker"
        let added = try h.run(["add", "--lines", "--jsonl"], stdin: Array((lines.joined(separator: "\n") + "\n").utf8))
        #expect(added.status == 0, "\(added.stderrText)")
        #expect(try added.jsonLines().count == 10_000)
        #expect(try h.list(["search", "needle-in-a-haystack"]).count == 1)
        #expect(try h.list(["search", "topic7", "common"]).count == 100)
        #expect(try h.list(["search", "topic7", "needle-in-a-haystack"]).isEmpty == true)
    }

    @Test(
        """
        W2 a 1 GiB attachment streams in and out with bounded memory (peak RSS within 16 MiB of the same command on \
        one byte)
        """)
    func w2GigabyteAttachment() throws {
        let h = Home()
        try h.initialize()
        let id = try #require(try h.ok(["add", "big"])["id"]?.stringValue)
        // ru_maxrss of the one child each python3 runs: the peak resident size, in KiB.
        func peak(_ command: String) throws -> Int {
            let script = """
                import resource, subprocess, sys; r = subprocess.run(['sh', '-c', sys.argv[1]]); print(r.returncode, \
                resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
                """
            let run = try Tools.shell(
                "env HOME='\(h.home.path)' STARLINE_HOME='\(h.home.path)/starline' STARLINE_MEMORY_PASSPHRASE='\(h.passphrase)' python3 -c \"\(script)\" \"\(command)\""
            )
            let fields = run.stdoutText.split(separator: " ").map { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1 }
            #expect(fields.first == 0, "\(command): \(run.stdoutText) \(run.stderrText)")
            return fields.last ?? -1
        }
        let sl = Tools.path("sl-memory")
        // The same commands on one byte: what the run costs anyway (the Argon2id key alone is 64 MiB).
        let baseAttach = try peak("head -c 1 /dev/zero | '\(sl)' attach \(id) - --name one.bin > /dev/null")
        let baseGet = try peak("'\(sl)' get \(id) one.bin | wc -c | grep -qx 1")
        let attachPeak = try peak("head -c 1073741824 /dev/zero | '\(sl)' attach \(id) - --name zeros.bin > /dev/null")
        let getPeak = try peak(
            "'\(sl)' get \(id) zeros.bin | cmp -s - /dev/zero -n 1073741824 && '\(sl)' get \(id) zeros.bin | wc -c | grep -qx 1073741824")
        // Streaming adds a few chunk buffers, whatever the size.
        #expect(attachPeak - baseAttach < 16 * 1024, "attach peak RSS \(attachPeak) KiB for 1 GiB, \(baseAttach) KiB for 1 byte")
        #expect(getPeak - baseGet < 16 * 1024, "get peak RSS \(getPeak) KiB for 1 GiB, \(baseGet) KiB for 1 byte")
        let sizes = try h.ok(["show", id])["attachments"]?.arrayValue?.map { ($0["name"]?.stringValue ?? "", $0["size"]?.intValue ?? -1) }
        #expect(sizes?.first { $0.0 == "zeros.bin" }?.1 == 1 << 30)
    }

    static let agePty = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("StarlineCryptoTests/agepty.py").path
}
