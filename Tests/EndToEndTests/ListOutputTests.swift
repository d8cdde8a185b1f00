import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// Tables and CSV for people, JSON for pipes (README, Conventions), through the built tools: on a
/// terminal (a real pty from `script`) a list command prints an aligned table; piped, the JSON it always
/// printed; `-o` and `--fields` choose. W1 (the workbench's lists), W2 (memory), W4 (chat), S16 (sessions).
@Suite struct ListOutputTests {
    let home = TemporaryDirectory("sl-list")

    func onTerminal(_ command: String, columns: Int = 100, harness: SessionToolsHarness? = nil) throws -> ToolRun {
        try Tools.onTerminal(command, home: home.path, columns: columns, harness: harness)
    }

    func tasks(_ arguments: [String]) throws -> ToolRun { try Tools.run("sl-tasks", arguments, home: home.path) }

    @Test("W1: sl-tasks list is a table on a terminal, JSON Lines when piped, one array, CSV and TSV with -o")
    func w1TasksListTableForPeopleJSONForPipes() throws {
        #expect(try tasks(["add", "Pay rent", "--due", "2026-12-24T09:00:00Z", "--tag", "home"]).status == 0)
        #expect(try tasks(["add", "=HYPERLINK(\"http://evil.example\",\"click\")", "--tag", "x"]).status == 0)
        let bin = Tools.path("sl-tasks")

        // Dates relative to --now (as every sl-tasks command reads the time).
        let table = try onTerminal("'\(bin)' list --all --now 2026-12-03T09:00:00Z")
        #expect(table.status == 0, "\(table.stderrText)")
        let lines = table.stdoutText.split(separator: "\n").map(String.init)
        try #require(lines.count == 3, "\(table.stdoutText)")
        // Taskwarrior's working-set number first, then the whole id.
        #expect(
            lines[0].hasPrefix("NUMBER  ID ") && lines[0].contains("  TITLE ") && lines[0].hasSuffix("TAGS"), "\(table.stdoutText)")
        #expect(lines[1].contains("Pay rent") && lines[1].contains("in 3w") && lines[1].hasSuffix("home"), "\(table.stdoutText)")
        #expect(!table.stdoutText.contains("{"), "a table, not JSON")

        // Piped: JSON Lines of whole records, as every list prints; -o json one array of the same records.
        let piped = try tasks(["list", "--all"])
        let records = try piped.jsonLines()
        #expect(
            records.count == 2 && records[0]["title"]?.stringValue == "Pay rent" && records[0]["notes"] != nil
                && records[0]["createdAt"] != nil)
        #expect(piped.stdoutText.hasPrefix("{\"id\":") && piped.stdoutText.hasSuffix("}\n"))
        #expect(try JSON.parse(try tasks(["list", "--all", "-o", "json"]).stdoutText) == .array(records))
        // --pretty on a terminal still asks for JSON: one indented array.
        #expect(try onTerminal("'\(bin)' list --all --pretty").stdoutText.hasPrefix("[\n  {\n"))

        let csv = try tasks(["list", "--all", "-o", "csv", "--fields", "title,due,tags"])
        #expect(csv.status == 0)
        #expect(
            csv.stdoutText == """
                title,due,tags\nPay \
                rent,2026-12-24T09:00:00Z,home\n\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"click\"\")\",,x\n
                """)
        // CRLF when asked for (-o csv-crlf), the same rows otherwise.
        let crlf = try tasks(["list", "--all", "-o", "csv-crlf", "--fields", "title,due,tags"])
        #expect(crlf.status == 0 && crlf.stdoutText == csv.stdoutText.replacingOccurrences(of: "\n", with: "\r\n"))
        let tsv = try tasks(["list", "--all", "--output", "tsv", "--fields", "title,done"])
        #expect(
            tsv.stdoutText
                == "title\tdone\nPay rent\tfalse\n=HYPERLINK(\"http://evil.example\",\"click\")\tfalse\n".replacingOccurrences(
                    of: "\n=", with: "\n'="))
        // --fields shapes the JSON too; -o table works when piped (as kubectl's -o wide does).
        #expect(
            try tasks(["list", "--all", "-o", "jsonl", "--fields", "title"]).stdoutText
                == "{\"title\":\"Pay rent\"}\n{\"title\":\"=HYPERLINK(\\\"http://evil.example\\\",\\\"click\\\")\"}\n")
        #expect(try tasks(["list", "--all", "-o", "table", "--fields", "title"]).stdoutText.hasPrefix("TITLE\nPay rent\n"))
        // A bad format or field list is a usage error.
        let bad = try tasks(["list", "-o", "yaml"])
        #expect(bad.status == 2 && bad.errorCode == "USAGE")
        #expect(try tasks(["list", "--fields", "a,,b"]).status == 2)
        // Sites and recents take the same options.
        #expect(try tasks(["sites", "add", "https://example.com/", "--title", "Example"]).status == 0)
        #expect(
            try tasks(["sites", "list", "-o", "csv", "--fields", "title,url"]).stdoutText == "title,url\nExample,https://example.com/\n"
        )
        #expect(try tasks(["recent", "list", "-o", "tsv"]).stdoutText == "lastVisitedAt\tvisits\ttitle\turl\n")
    }

    @Test("W2: sl-memory list and search print tables on a terminal and CSV with -o, JSON Lines when piped")
    func w2MemoryLists() throws {
        let runtime = TemporaryDirectory("sl-list-run")
        let environment = ["STARLINE_MEMORY_PASSPHRASE": "correct horse battery staple", "XDG_RUNTIME_DIR": runtime.path]
        func memory(_ arguments: [String]) throws -> ToolRun {
            try Tools.run("sl-memory", arguments, home: home.path, environment: environment)
        }
        let initialized = try memory(["init"])
        try #require(initialized.status == 0, "\(initialized.stderrText)")
        #expect(try memory(["add", "--title", "router", "--tag", "home", "wifi password is on the box"]).status == 0)
        let csv = try memory(["list", "-o", "csv", "--fields", "title,tags"])
        #expect(csv.stdoutText == "title,tags\nrouter,home\n", "\(csv.stdoutText)\(csv.stderrText)")
        let piped = try memory(["search", "wifi"])
        #expect(try piped.jsonLines().map { $0["title"]?.stringValue } == ["router"])
        let tsv = try memory(["search", "wifi", "-o", "tsv", "--fields", "title"])
        #expect(tsv.stdoutText == "title\nrouter\n")
    }

    @Test("a table is as wide as the terminal: long cells are cut with …, never the id; dates read relative")
    func tableFitsTheTerminal() throws {
        let added = try tasks(["add", String(repeating: "a long task title ", count: 12), "--tag", "t", "--due", "+2d"])
        let id = try #require(try added.json()["id"]?.stringValue)
        let table = try onTerminal("'\(Tools.path("sl-tasks"))' list", columns: 80)
        let lines = table.stdoutText.split(separator: "\n")
        try #require(lines.count == 2, "\(table.stdoutText)")
        #expect(lines.allSatisfy { $0.count <= 80 } && lines[1].contains("…"), "\(table.stdoutText)")
        #expect(lines[1].hasPrefix("1 ") && lines[1].contains(" " + id + " "), "the whole UUID: \(table.stdoutText)")
        #expect(lines[1].contains("in 1d") || lines[1].contains("in 2d"), "due in two days: \(table.stdoutText)")
        // JSON keeps RFC 3339.
        #expect(try tasks(["list"]).jsonLines().first?["due"]?.stringValue?.hasSuffix("Z") == true)
    }

    @Test("sl-qr decode: a table of what each file holds on a terminal, JSON Lines piped, CSV with -o")
    func qrDecodeTable() throws {
        let png = home.file("friend.png")
        #expect(try Tools.run("sl-qr", ["friend", "AbCdEfGh1234", "-o", png], home: home.path).status == 0)
        // -q: on a terminal the progress line would share the screen (stderr) with the table.
        let table = try onTerminal("'\(Tools.path("sl-qr"))' decode -q '\(png)'", columns: 150)
        let lines = table.stdoutText.split(separator: "\n").map(String.init)
        try #require(lines.count == 2, "\(table.stdoutText)")
        #expect(
            lines[0].hasPrefix("FILE ") && lines[1].contains("friendLink")
                && lines[1].contains("https://chat.thestarline.cn/f/AbCdEfGh1234") && lines[1].hasSuffix("original"), "\(table.stdoutText)")
        let piped = try Tools.run("sl-qr", ["decode", png], home: home.path)
        #expect(try piped.jsonLines().first?["url"]?.stringValue == "https://chat.thestarline.cn/f/AbCdEfGh1234")
        let csv = try Tools.run("sl-qr", ["decode", png, "-o", "csv", "--fields", "kind,code"], home: home.path)
        #expect(csv.stdoutText == "kind,code\nfriendLink,AbCdEfGh1234\n")
        let raw = try Tools.run("sl-qr", ["decode", png, "--raw", "-o", "csv"], home: home.path)
        #expect(raw.status == 2 && raw.errorCode == "USAGE")
    }

    @Test(
        """
        W4/S16: sl-chat conversations and history, sl-sessions list: tables on a terminal, CSV with -o, JSON Lines \
        piped
        """)
    func w4ChatAndSessionsLists() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("alice")
        #expect(try h.run("sl-chat", ["send", "c_team", "hello, \"team\""]).status == 0)
        let table = try onTerminal("'\(Tools.path("sl-chat"))' conversations", columns: 120, harness: h)
        #expect(table.status == 0, "\(table.stderrText)")
        let header = table.stdoutText.split(separator: "\n").first.map(String.init) ?? ""
        #expect(header.hasPrefix("ID ") && header.contains("TITLE") && header.contains("LASTMESSAGE TEXT"), "\(table.stdoutText)")
        let history = try h.run("sl-chat", ["history", "c_team", "-o", "csv", "--fields", "text"])
        #expect(
            history.stdoutText.hasPrefix("text\n") && history.stdoutText.contains("\"hello, \"\"team\"\"\"\n"), "\(history.stdoutText)")
        let piped = try h.run("sl-chat", ["conversations"])
        #expect(try piped.jsonLines().contains { $0["id"]?.stringValue == "c_team" })
        let sessions = try h.run("sl-sessions", ["list", "-o", "csv", "--fields", "user,current"])
        #expect(
            sessions.status == 0 && sessions.stdoutText.hasPrefix("user,current\n") && sessions.stdoutText.contains(",true\n"),
            "\(sessions.stdoutText)\(sessions.stderrText)")
        let sessionTable = try onTerminal("'\(Tools.path("sl-sessions"))' list", harness: h)
        #expect(sessionTable.stdoutText.hasPrefix("ID "), "\(sessionTable.stdoutText)")
        // At 80 columns every session id is whole (an id cut with … cannot be revoked by copy and paste), and
        // the device reads as its name and platform, not as JSON.
        let narrow = try onTerminal("'\(Tools.path("sl-sessions"))' list", columns: 80, harness: h)
        let ids = try h.run("sl-sessions", ["list"]).jsonLines().compactMap { $0["id"]?.stringValue }
        #expect(!ids.isEmpty)
        for id in ids { #expect(narrow.stdoutText.contains(id), "\(id) in \(narrow.stdoutText)") }
        #expect(narrow.stdoutText.contains("DEVICE NAME") && !narrow.stdoutText.contains("{"), "\(narrow.stdoutText)")
    }

    @Test("sl-qr decode's table: a file without a QR code is a row that says so, not a blank one")
    func qrDecodeTableNamesFilesWithoutASymbol() throws {
        let png = home.file("friend.png"), blank = home.file("blank.pgm")
        #expect(try Tools.run("sl-qr", ["friend", "AbCdEfGh1234", "-o", png], home: home.path).status == 0)
        _ = FileManager.default.createFile(atPath: blank, contents: Data(Array("P5\n8 8\n255\n".utf8) + Array(repeating: 255, count: 64)))
        let table = try onTerminal("'\(Tools.path("sl-qr"))' decode -q '\(blank)' '\(png)'", columns: 150)
        let lines = table.stdoutText.split(separator: "\n").map(String.init)
        try #require(lines.count == 3, "\(table.stdoutText)")
        #expect(lines[1].hasPrefix(blank) && lines[1].contains("none") && lines[1].contains("no QR code found"), "\(table.stdoutText)")
        // Piped, the record is as it was: the file and "found":0.
        let piped = try Tools.run("sl-qr", ["decode", blank], home: home.path)
        #expect(try piped.jsonLines().first?["found"] == .int(0), "\(piped.stdoutText)")
    }
}
