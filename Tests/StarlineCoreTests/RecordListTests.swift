import StarlineCore
import Testing

/// The list output of every list command (RecordList): JSON Lines when piped, and tables, CSV and
/// TSV for people and spreadsheets — through injected streams, so every format's edge is checked in-process.
@Suite struct RecordListTests {
    static let records: [JSON] = [
        .object([
            ("id", .string("t1")), ("title", .string("Pay rent")), ("due", .string("2026-12-03T09:00:00Z")), ("done", .bool(false)),
            ("tags", .array([.string("home"), .string("money")])), ("n", .int(-5))
        ]),
        .object([
            ("id", .string("t2")), ("title", .string("=HYPERLINK(\"http://evil\",\"x\")")), ("due", .null), ("done", .bool(true)),
            ("tags", .array([])), ("n", .int(7))
        ])
    ]

    func run(
        _ records: [JSON], format: ListFormat?, fields: [String]? = nil,
        terminal: Bool = false, columns: Int? = nil, mode: Output.Mode? = nil, environment: Environment = [:]
    ) -> String {
        let (io, out, _) = IOStreams.capturing(environment: environment, terminal: terminal, columns: columns, now: Self.now)
        let output = Output(io: io, mode: mode)
        RecordList.print(records, output, ListOptions(format: format, fields: fields), columns: ["id", "title", "due", "tags"])
        output.flush()
        return out.text
    }

    /// Two days before the first record's due date.
    static let now = Timestamp(rfc3339: "2026-12-01T09:00:00Z")!

    @Test("the pager is STARLINE_PAGER, else PAGER; unset, empty or cat (spaces aside) is none")
    func pagerCommandFromTheEnvironment() {
        #expect(TerminalPager.command([:]) == nil)
        #expect(TerminalPager.command(["PAGER": "less -S"]) == "less -S")
        #expect(TerminalPager.command(["STARLINE_PAGER": "most", "PAGER": "less"]) == "most")
        #expect(TerminalPager.command(["STARLINE_PAGER": "", "PAGER": "less"]) == nil)
        #expect(TerminalPager.command(["STARLINE_PAGER": " cat ", "PAGER": "less"]) == nil)
        #expect(TerminalPager.command(["PAGER": "  "]) == nil)
        // In-process streams on a "terminal" are captured, never a pager's pipe: nothing starts.
        let (io, out, _) = IOStreams.capturing(environment: ["PAGER": "false"], terminal: true)
        TerminalPager.startIfWanted(io)
        TerminalPager.finish()
        #expect(out.bytes.isEmpty)
    }

    @Test("a table shows times relative to now, in the largest unit that fits; JSON and CSV keep RFC 3339")
    func relativeTimes() {
        let now = Self.now
        let cases: [(Int64, String)] = [
            (0, "now"), (59, "now"), (-59, "now"), (60, "in 1m"), (-3_599, "59m ago"), (3_600, "in 1h"), (-86_399, "23h ago"),
            (86_400, "in 1d"), (-13 * 86_400, "13d ago"), (14 * 86_400, "in 2w"), (-59 * 86_400, "8w ago"),
            (60 * 86_400, "in 2mo"), (-729 * 86_400, "24mo ago"), (730 * 86_400, "in 2y")
        ]
        for (offset, text) in cases { #expect(RelativeTime.text(now + offset, now: now) == text, "\(offset)") }
        #expect(run(Self.records, format: .table, terminal: true, columns: 120).contains("  in 2d  "))
        #expect(run(Self.records, format: .csv).contains(",2026-12-03T09:00:00Z,"))
    }

    @Test("piped without -o: JSON Lines, one compact record per line; -o json or --pretty one array")
    func pipedOutputIsJSONLines() {
        let lines = Self.records.map { $0.serialized(.compact) + "\n" }.joined()
        #expect(run(Self.records, format: nil) == lines)
        #expect(run([], format: nil) == "")
        // --jsonl and --compact ask for the same lines, on a terminal too; --pretty for one indented array.
        #expect(run(Self.records, format: nil, terminal: true, mode: .jsonLines) == lines)
        #expect(run(Self.records, format: nil, terminal: true, mode: .compact) == lines)
        #expect(run(Self.records, format: nil, terminal: true, mode: .pretty) == JSON.array(Self.records).serialized(.pretty) + "\n")
        // -o json: one array (`jq '.[0]'`), `[]` when empty; a long list streams and equals the one-piece array.
        #expect(run(Self.records, format: .json) == JSON.array(Self.records).serialized(.compact) + "\n")
        #expect(run([], format: .json) == "[]\n")
        let many = (0..<5_000).map { JSON.object([("id", .int(Int64($0))), ("text", .string(String(repeating: "x", count: $0 % 40)))]) }
        #expect(run(many, format: .json) == JSON.array(many).serialized(.compact) + "\n")
    }

    @Test("on a terminal: an aligned table with upper-case headers, as gh and kubectl print")
    func terminalTable() {
        let text = run(Self.records, format: nil, terminal: true, columns: 120)
        func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: width - text.count) }
        let title = "=HYPERLINK(\"http://evil\",\"x\")"
        #expect(
            text
                == [
                    "ID  " + pad("TITLE", title.count) + "  " + pad("DUE", 5) + "  TAGS",
                    "t1  " + pad("Pay rent", title.count) + "  in 2d  home, money",
                    "t2  " + title  // empty cells at the end of a line leave no trailing blanks
                ].map { $0 + "\n" }.joined(), "\(text)")
        // No rows: nothing at all (as ls prints nothing).
        #expect(run([], format: .table, terminal: true) == "")
    }

    @Test("a table fits the terminal: the widest column is cut with …, wide characters count two columns")
    func tableFitsTheWidth() {
        let long: [JSON] = [
            .object([
                ("id", .string("m1")), ("title", .string("星线的一个非常长的标题，比终端还宽得多，需要截断")), ("due", .null),
                ("tags", .array([]))
            ])
        ]
        let text = run(long, format: .table, columns: 40)
        for line in text.split(separator: "\n") {
            let width = line.unicodeScalars.reduce(0) {
                $0 + (($1.value >= 0x3000 && $1.value <= 0x9FFF) || ($1.value >= 0xFF00 && $1.value <= 0xFF60) ? 2 : 1)
            }
            #expect(width <= 40, "\(line) is \(width) columns")
        }
        #expect(text.contains("…"))
        // COLUMNS wins over the terminal's width.
        let narrow = run(Self.records, format: .table, columns: 200, environment: ["COLUMNS": "30"])
        #expect(narrow.split(separator: "\n").allSatisfy { $0.count <= 30 }, "\(narrow)")
    }

    @Test("a table never cuts an id, a URL or the first column: the other columns shrink, then the line wraps")
    func tableKeepsIdentifiersWhole() {
        let uuid = "3f2a9c4e-7b1d-4e8f-9a2b-6c5d4e3f2a1b"
        let url = "https://chat.thestarline.cn/f/AbCdEfGh1234AbCdEfGh1234"
        let records: [JSON] = [
            .object([
                ("name", .string("a first column that is long")), ("id", .string(uuid)),
                ("title", .string(String(repeating: "a long title ", count: 8))), ("url", .string(url)),
                ("conversationId", .string("c_alice_bob_and_friends"))
            ])
        ]
        let (io, out, _) = IOStreams.capturing(terminal: true, columns: 80)
        let output = Output(io: io)
        RecordList.print(records, output, ListOptions(format: .table), columns: ["name", "id", "title", "url", "conversationId"])
        output.flush()
        let text = out.text
        for whole in ["a first column that is long", uuid, url, "c_alice_bob_and_friends"] {
            #expect(text.contains(whole), "\(whole) cut in \(text)")
        }
        #expect(text.contains("…"), "the title gives way: \(text)")
        #expect(text.hasPrefix("NAME "), "\(text)")
        // A nested path is a column of its own, headed by its spaced parts; an object of scalars reads as
        // name=value pairs, not as JSON.
        let (io2, out2, _) = IOStreams.capturing(terminal: true, columns: 120)
        let output2 = Output(io: io2)
        let session = JSON.object([
            ("id", .string("s1")), ("device", .object([("name", .string("laptop")), ("platform", .string("linux")), ("ip", .null)]))
        ])
        RecordList.print([session], output2, ListOptions(format: .table), columns: ["id", "device.name", "device"])
        output2.flush()
        #expect(out2.text == "ID  DEVICE NAME  DEVICE\ns1  laptop       name=laptop, platform=linux\n", "\(out2.text)")
    }

    @Test("a hostile value cannot move the cursor or forge a row of a table")
    func tableCellsHaveNoControlCharacters() {
        let hostile: [JSON] = [
            .object([
                ("id", .string("x\u{1B}[2J\u{1B}[31m")), ("title", .string("line1\nt9  forged row\r")), ("due", .string("\u{7}")),
                ("tags", .array([.string("\u{9B}31m")]))
            ])
        ]
        let text = run(hostile, format: .table, columns: 200)
        #expect(!text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) })
        #expect(text.split(separator: "\n").count == 2)
    }

    @Test("bidi controls, C1 controls and zero-width characters in a cell are made visible, not passed to the terminal")
    func tableCellsShowHiddenCharacters() {
        let hostile: [JSON] = [
            .object([
                ("id", .string("invoice\u{202E}fdp.exe")), ("title", .string("t\u{200B}1")), ("due", .string("\u{9D}52;c;x\u{9C}")),
                ("tags", .array([.string("a\u{2066}b")]))
            ])
        ]
        let text = run(hostile, format: .table, columns: 200)
        #expect(!text.unicodeScalars.contains { TerminalText.isHidden($0.value) && $0 != "\n" }, "\(text.debugDescription)")
        #expect(text.contains("invoice\\u202efdp.exe") && text.contains("t\\u200b1") && text.contains("\\x9d52;c;x\\x9c"), "\(text)")
    }

    @Test(
        """
        CSV and TSV: a formula reached through an array or an object is neutralised too; on a terminal, escapes are \
        shown
        """)
    func delimitedFormulaInArraysAndEscapesOnATerminal() {
        let records: [JSON] = [
            .object([("v", .array([.string("=cmd|' /C calc'!A0"), .string("x")]))]),
            .object([("v", .array([.int(-1), .int(2)]))]),
            .object([("v", .string("\u{1B}]52;c;ZXZpbA==\u{7}"))])
        ]
        for format in [ListFormat.csv, .tsv] {
            let piped = run(records, format: format, fields: ["v"])
            #expect(piped.contains("'=cmd|"), "\(format): \(piped)")
            #expect(piped.contains("'-1, 2"), "an array is text, whatever its first element: \(piped)")
            let shown = run(records, format: format, fields: ["v"], terminal: true)
            #expect(!shown.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{7}" }, "\(format): \(shown.debugDescription)")
            #expect(shown.contains("x1b]52;c;ZXZpbA=="), "\(format): \(shown)")
        }
    }

    @Test(
        """
        CSV: RFC 4180 quoting, LF line ends (CRLF with csv-crlf), a header row; a formula cell is neutralised, a \
        negative number is not
        """)
    func csv() {
        let text = run(Self.records, format: .csv, fields: ["id", "title", "n", "tags", "done", "due"])
        #expect(
            text == "id,title,n,tags,done,due\n"
                + "t1,Pay rent,-5,\"home, money\",false,2026-12-03T09:00:00Z\n"
                + "t2,\"'=HYPERLINK(\"\"http://evil\"\",\"\"x\"\")\",7,,true,\n")
        let formulas: [JSON] = ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "safe"].map { .object([("v", .string($0))]) }
        let cells = run(formulas, format: .csv, fields: ["v"]).components(separatedBy: "\n").dropFirst().dropLast()
        #expect(Array(cells) == ["'=1+1", "'+1", "'-1", "'@SUM(A1)", "'\tx", "\"'\rx\"", "safe"])
        // Quotes, commas and newlines inside a field.
        let tricky: [JSON] = [.object([("v", .string("a \"b\", c\nd"))])]
        #expect(run(tricky, format: .csv, fields: ["v"]) == "v\n\"a \"\"b\"\", c\nd\"\n")
        // RFC 4180's CRLF on request; a quoted field keeps its own line break as it is.
        #expect(run(tricky, format: .csvCRLF, fields: ["v"]) == "v\r\n\"a \"\"b\"\", c\nd\"\r\n")
        // An empty list still has its header.
        #expect(run([], format: .csv, fields: ["id", "title"]) == "id,title\n")
    }

    @Test("TSV: tabs, newlines and backslashes escaped, a header row")
    func tsv() {
        let values: [JSON] = [.object([("a", .string("x\ty")), ("b", .string("1\\2\n3")), ("c", .int(3))])]
        #expect(run(values, format: .tsv, fields: ["a", "b", "c"]) == "a\tb\tc\nx\\ty\t1\\\\2\\n3\t3\n")
    }

    @Test("--fields picks and orders keys in every format; a.b reaches into an object; a missing field is null or empty")
    func fields() {
        let nested: [JSON] = [.object([("id", .string("c1")), ("lastMessage", .object([("text", .string("hi")), ("seq", .int(4))]))])]
        #expect(
            run(nested, format: .jsonl, fields: ["lastMessage.text", "id", "nope"]) == #"{"lastMessage.text":"hi","id":"c1","nope":null}"#
                + "\n")
        #expect(run(nested, format: .csv, fields: ["id", "lastMessage.seq", "nope"]) == "id,lastMessage.seq,nope\nc1,4,\n")
        #expect(run(nested, format: .json, fields: ["id"]) == #"[{"id":"c1"}]"# + "\n")
    }

    @Test("--fields refuses what is not a list of field names (exit 2)")
    func badFields() throws {
        for text in ["", "a,,b", "a b", "a.", ".a", String(repeating: "a,", count: 64) + "a", "a;rm -rf"] {
            let (io, _, err) = IOStreams.capturing()
            let status = ToolMain.execute(Self.tool, ["list", "--fields", text], io: io)
            #expect(status == .usage, "'\(text)'")
            #expect(err.text.contains("\"code\":\"USAGE\""))
        }
    }

    static let tool = Tool<CommandRunner>(
        name: "sl-list-test",
        commands: .group(CommandSpec("sl-list-test", abstract: "a list"), [.command(ListTestCommand.self)]),
        globalOptions: StandardOptions.output)

    enum ListTestCommand: Command {
        static let spec = CommandSpec("list", abstract: "prints the test records", options: ListOptions.specs)
        static func options(_ arguments: ParsedArguments) throws -> ListOptions { try ListOptions(arguments) }
        static func run(_ options: ListOptions, _ context: CommandContext) throws -> StarlineCore.ExitStatus {
            RecordList.print(RecordListTests.records, context.output, options, columns: ["id", "title"])
            return .ok
        }
    }
}
