import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
@testable import StarlineWorkspace
@testable import TasksCommands

/// W1: imports are keyed deterministically, refuse newer documents, check Taskwarrior tags,
/// decode bookmark text, treat invalid UTF-8 alike everywhere; and the workspace path is checked.
@Suite struct ImportHardeningTests {
    let home = TemporaryDirectory("sl-tasks-import-hardening")
    var dataDir: String { home.path + "/starline/data" }
    var workspacePath: String { dataDir + "/workspace.json" }

    func run(_ words: [String], stdin: [UInt8] = [], environment: [String: String] = [:]) -> (
        status: StarlineCore.ExitStatus, stdout: String, stderr: String
    ) {
        runTasks(words, home: home, stdin: stdin, environment: environment, now: Timestamp(rfc3339: "2026-11-30T08:00:00Z"))
    }

    func error(_ stderr: String) throws -> JSON { try firstError(stderr) }

    func tasks() throws -> [JSON] {
        try run(["list", "--all"]).stdout.split(separator: "\n").map { try JSON.parse(String($0)) }
    }

    @Test("JSON import with ids that are not UUIDs: the same name-based UUID every time, so a re-import updates")
    func foreignIDs() throws {
        let doc =
            #"{"version":1,"tasks":[{"id":"42","title":"a"},{"id":7,"title":"b"},{"id":"C0FFEE00-0000-4000-8000-000000000001","title":"c"}]}"#
        let first = try JSON.parse(run(["import", "-"], stdin: Array(doc.utf8)).stdout)
        #expect(first["tasks"]?["added"]?.intValue == 3)
        let ids = try tasks().compactMap { $0["id"]?.stringValue }
        #expect(ids.count == 3 && ids.allSatisfy(RandomUUID.isValid))
        #expect(ids.contains(RandomUUID.derived(fromForeignID: "42")) && ids.contains(RandomUUID.derived(fromForeignID: "7")))
        #expect(ids.contains("c0ffee00-0000-4000-8000-000000000001"))
        #expect(RandomUUID.derived(fromForeignID: "42").dropFirst(14).first == "5")  // version 5
        let second = try JSON.parse(run(["import", "-"], stdin: Array(doc.utf8)).stdout)
        #expect(second["tasks"]?["added"]?.intValue == 0)
        #expect(second["tasks"]?["unchanged"]?.intValue == 3)
        #expect(try tasks().count == 3)
    }

    @Test("SHA-1 of the name-based UUIDs matches FIPS 180 test vectors")
    func sha1() {
        func hex(_ b: [UInt8]) -> String {
            b.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        }
        #expect(hex(SHA1.digest(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(hex(SHA1.digest([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(
            hex(SHA1.digest(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
    }

    @Test("a document of a newer version is refused: UNSUPPORTED_VERSION, exit 12, nothing written")
    func newerVersion() throws {
        let r = run(["import", "-"], stdin: Array(#"{"version":2,"tasks":[{"id":"x","title":"a"}]}"#.utf8))
        #expect(r.status == .data)
        #expect(try error(r.stderr)["code"]?.stringValue == "UNSUPPORTED_VERSION")
        #expect(!FileManager.default.fileExists(atPath: workspacePath))
    }

    @Test(
        """
        Taskwarrior tags: a word list or a comma string is read; a tag with spaces or a non-string fails naming the \
        task
        """,
        arguments: [
            (#""tags":"home,work""#, ["home", "work"]), (#""tags":["a","a","b"]"#, ["a", "b"]),
            (#""tags":["two words"]"#, nil), (#""tags":"two words""#, nil), (#""tags":[1]"#, nil), (#""tags":{"a":1}"#, nil),
            (#""tags":[""]"#, nil)
        ])
    func taskwarriorTags(_ field: String, _ expected: [String]?) throws {
        let tw = #"[{"uuid":"c0ffee00-0000-4000-8000-000000000001","description":"x","status":"pending",\#(field)}]"#
        let r = run(["import", "-"], stdin: Array(tw.utf8))
        if let expected {
            #expect(r.status == .ok, "\(r.stderr)")
            #expect(try tasks().first?["tags"] == .array(expected.map(JSON.string)))
        } else {
            #expect(r.status == .data, "\(field)")
            #expect(try error(r.stderr)["message"]?.stringValue?.contains("Taskwarrior task 1: tag") == true, "\(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: workspacePath))
        }
    }

    @Test("bookmark titles: named and numeric references decoded, whitespace and line breaks collapsed")
    func bookmarkText() throws {
        let html = """
            <DL><DT><A HREF=\"https://a.example/?a=1&amp;b=2\">Caf&eacute; &#233;t&#xE9; &mdash;\n   two\r\n\tlines \
            &#150; &#0; &#xD800; &#99999999; &bogus; &amp</A>\n</DL>
            """
        let marks = try NetscapeBookmarks.parse(html)
        #expect(marks.count == 1)
        #expect(marks[0].url == "https://a.example/?a=1&b=2")
        #expect(marks[0].title == "Café été — two lines – \u{FFFD} \u{FFFD} \u{FFFD} &bogus; &amp")
        #expect(HTMLText.decode("&nbsp;&lt;&Omega;&sigmaf;&hearts;&yuml;") == "\u{A0}<Ως♥ÿ")
    }

    @Test(
        "invalid UTF-8 anywhere is refused the same way in every format: DATA_ERROR with the offset",
        arguments: ["json", "taskwarrior", "netscape"])
    func invalidUTF8(_ format: String) throws {
        let pieces: [String: (String, String)] = [
            "json": (#"{"version":1,"tasks":[{"id":"x","title":"a"#, #""}]}"#),
            "taskwarrior": (#"[{"uuid":"c0ffee00-0000-4000-8000-000000000001","description":"a"#, #"","status":"pending"}]"#),
            "netscape": (#"<DL><DT><A HREF="https://a.example/">a"#, "</A></DL>")
        ]
        let (head, tail) = try #require(pieces[format])
        let input = Array(head.utf8) + [0xC3, 0x28] + Array(tail.utf8)
        let r = run(["import", "-", "-f", format], stdin: input)
        #expect(r.status == .data, "\(format): \(r.stderr)")
        let e = try error(r.stderr)
        #expect(e["details"]?["offset"]?.intValue == Int64(head.utf8.count), "\(e)")
        #expect(e["message"]?.stringValue?.contains("not UTF-8") == true)
        #expect(!FileManager.default.fileExists(atPath: workspacePath))
    }

    // An empty STARLINE_WORKSPACE counts as unset, as every empty variable does for the option parser.
    @Test(
        "--workspace '' and a file in a missing directory are usage errors; nothing is created",
        arguments: [
            (["list", "--workspace", ""], [:]), (["add", "x", "--workspace", "/nonexistent-starline-dir/ws.json"], [:]),
            (["add", "x", "--workspace", "dir/"], [:]),
            (["check"], ["STARLINE_WORKSPACE": "/nonexistent-starline-dir/ws.json"])
        ] as [([String], [String: String])])
    func workspacePath(_ words: [String], _ environment: [String: String]) throws {
        let r = run(words, environment: environment)
        #expect(r.status == .usage, "\(words) \(environment): \(r.stderr)")
        #expect(try error(r.stderr)["details"]?["option"]?.stringValue == "workspace")
        #expect(!FileManager.default.fileExists(atPath: "/nonexistent-starline-dir"))
        #expect(!FileManager.default.fileExists(atPath: dataDir))
    }

    @Test("a 20,000-bookmark import takes seconds, not minutes (sites are looked up by key, not by scanning)")
    func bigImport() throws {
        var html = "<DL>\n"
        for i in 0..<20_000 { html += "<DT><A HREF=\"https://site\(i).example/page\" ADD_DATE=\"1700000000\">Site \(i)</A>\n" }
        let start = ContinuousClock.now
        let first = run(["import", "-"], stdin: Array(html.utf8))
        let second = run(["import", "-"], stdin: Array(html.utf8))
        #expect(ContinuousClock.now - start < .seconds(60))
        #expect(try JSON.parse(first.stdout)["websites"]?["added"]?.intValue == 20_000)
        #expect(try JSON.parse(second.stdout)["websites"]?["duplicates"]?.intValue == 20_000)
    }
}
