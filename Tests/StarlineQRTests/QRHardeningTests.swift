import Foundation
import StarlineCore
import Testing
@testable import QRCommands

/// sl-qr's bounds, `--expect`, output paths and batches through its commands, run in-process with captured
/// streams.
@Suite struct QRHardeningTests {
    func run(_ words: [String], stdin: [UInt8] = []) -> (status: StarlineCore.ExitStatus, stdout: [UInt8], stderr: String) {
        let captured = IOStreams.capturing(stdin: stdin)
        let status = ToolMain.execute(QRTool.tool, words, io: captured.io)
        return (status, captured.stdout.bytes, captured.stderr.text)
    }

    func lines(_ bytes: [UInt8]) throws -> [JSON] {
        try bytes.split(separator: 0x0A).map { try JSON.parse(Array($0)) }
    }

    let dir: String = {
        let path = NSTemporaryDirectory() + "sl-qr-hardening-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    // MARK: Bounded reads and work

    @Test func encodeStopsReadingStandardInputPastTheLargestPayload() throws {
        let r = run(["encode", "-", "-o", dir + "/big.png"], stdin: [UInt8](repeating: 0x31, count: 1 << 20))
        #expect(r.status == .data)
        #expect(r.stderr.contains(#""code":"CAPACITY_EXCEEDED""#) && r.stderr.contains("more than 7089 bytes"))
        #expect(r.stderr.contains(#""lengthAtLeast":7090"#) && r.stderr.contains(#""capacity":5596"#))  // digits: numeric mode at 40-M
        #expect(!FileManager.default.fileExists(atPath: dir + "/big.png"))
    }

    @Test func decodeRefusesStandardInputOverTheFileSizeLimit() throws {
        let r = run(["decode", "-", "--max-file-size", "1"], stdin: [UInt8](repeating: 0, count: (1 << 20) + 1))
        #expect(r.status == .data)
        let record = try #require(try lines(r.stdout).first)
        #expect(record["error"]?["message"]?.stringValue?.contains("file too large (over 1 MiB") == true)
        #expect(run(["decode", "-", "--max-file-size", "0"]).status == .usage)
    }

    @Test func decodeRefusesImagesOverMaxPixels() throws {
        let pgm = Array("P5 1500 1000 255\n".utf8) + [UInt8](repeating: 255, count: 1_500_000)
        let r = run(["decode", "-", "--max-pixels", "1"], stdin: pgm)
        #expect(r.status == .data && String(decoding: r.stdout, as: UTF8.self).contains("the limit is 1 megapixels"))
    }

    @Test func theRetryAttemptsHaveADeadline() throws {
        let blank = Array("P5 300 300 255\n".utf8) + [UInt8](repeating: 255, count: 90_000)
        let r = run(["decode", "-", "--image-timeout", "0"], stdin: blank)
        #expect(r.status == .data)
        let record = try #require(try lines(r.stdout).first)
        #expect(record["found"]?.intValue == 0 && record["timedOut"] == .bool(true))
    }

    // MARK: --expect

    @Test func expectPrintsOnlyRecordsOfThatKind() throws {
        let png = run(["encode", "-f", "png", "https://example.com/x"]).stdout
        let other = run(["decode", "-", "--expect", "friendLink"], stdin: png)
        #expect(other.status == .data && other.stdout.isEmpty)
        let link = run(["friend", "-f", "png", "AbCdEfGh1234"]).stdout
        let match = run(["decode", "-", "--expect", "friendLink"], stdin: link)
        #expect(match.status == .ok)
        #expect(try lines(match.stdout).map { $0["url"]?.stringValue } == ["https://chat.thestarline.cn/f/AbCdEfGh1234"])
    }

    // MARK: Output extension, progress

    @Test("an unknown -o extension is a usage error naming the formats", arguments: ["x.jpg", "x.GIF", "dir.d/code.pdf"])
    func unknownExtension(_ name: String) throws {
        try? FileManager.default.createDirectory(atPath: dir + "/dir.d", withIntermediateDirectories: true)
        let r = run(["encode", "hello", "-o", dir + "/" + name])
        #expect(r.status == .usage && r.stdout.isEmpty)
        #expect(r.stderr.contains(#""code":"USAGE""#) && r.stderr.contains(".png, .svg, .txt or .json"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/" + name))
        #expect(run(["encode", "hello", "-o", dir + "/" + name, "--format", "png"]).status == .ok)
        #expect(run(["encode", "hello", "-o", dir + "/noextension"]).status == .ok)
    }

    @Test func progressGoesToStderrWithTheFlag() throws {
        let png = run(["encode", "-f", "png", "progress"]).stdout
        try Data(png).write(to: URL(fileURLWithPath: dir + "/p.png"))
        let quiet = run(["decode", dir + "/p.png", "-"], stdin: png)
        #expect(quiet.status == .ok && quiet.stderr.isEmpty)
        let shown = run(["decode", "--progress", dir + "/p.png", "-"], stdin: png)
        #expect(shown.status == .ok && shown.stderr.contains("decoded 2 of 2 files (2 with a QR code)"))
    }

    // MARK: Batch encode

    @Test func batchWritesOneFilePerLineAndReportsBadLinesOnTheirOwn() throws {
        let input =
            "https://chat.thestarline.cn/f/AbCdEfGh0001\n\nhttps://chat.thestarline.cn/f/AbCdEfGh0003\r\n"
            + String(repeating: "x", count: 9000) + "\nlast line without newline"
        let out = dir + "/batch"
        let r = run(["encode", "--batch", "-", "--output-dir", out, "-l", "L"], stdin: Array(input.utf8))
        #expect(r.status == .partial, "\(r.stderr)")
        let all = try lines(r.stdout)
        let records = all.filter { $0["line"] != nil }
        // The blank line 2 is skipped (no record, no file), counted in the summary; the others keep their numbers.
        #expect(records.map { $0["line"]?.intValue } == [1, 3, 4, 5])
        #expect(records[0]["file"]?.stringValue == out + "/000001.png" && records[0]["level"]?.stringValue == "L")
        #expect(records[2]["error"]?["code"]?.stringValue == "CAPACITY_EXCEEDED")
        #expect(records[3]["file"]?.stringValue == out + "/000005.png")
        #expect(all.last?["summary"] == .object([("lines", .int(5)), ("encoded", .int(3)), ("failed", .int(1)), ("skippedBlank", .int(1))]))
        // The files decode back to their lines (the CR of a CRLF line is not part of the payload).
        let decoded = run(["decode", out + "/000001.png", out + "/000003.png", out + "/000005.png"])
        #expect(
            try lines(decoded.stdout).map { $0["text"]?.stringValue } == [
                "https://chat.thestarline.cn/f/AbCdEfGh0001", "https://chat.thestarline.cn/f/AbCdEfGh0003", "last line without newline"
            ])
        #expect(r.stderr.contains(#""code":"PARTIAL_FAILURE""#))
    }

    @Test func batchJSONLinesNamesAreValidated() throws {
        let input =
            [
                #"{"text":"a","name":"alice"}"#, #"{"text":"b","name":"../evil"}"#, #"{"text":"c","name":".hidden"}"#,
                #"{"text":"d","name":"a/b"}"#, #"{"text":"e","name":"alice"}"#, #"{"text":"f"}"#, #"{"name":"g"}"#, "not json"
            ]
            .joined(separator: "\n") + "\n"
        let out = dir + "/named"
        let r = run(["encode", "--batch", "-", "--batch-format", "jsonl", "--output-dir", out, "-f", "svg"], stdin: Array(input.utf8))
        #expect(r.status == .partial)
        let records = try lines(r.stdout).filter { $0["line"] != nil }
        #expect(records.count == 8)
        #expect(records[0]["file"]?.stringValue == out + "/alice.svg" && records[0]["name"]?.stringValue == "alice")
        #expect(records[5]["file"]?.stringValue == out + "/000006.svg")
        for i in [1, 2, 3, 4, 6, 7] { #expect(records[i]["error"] != nil, "line \(i + 1) should fail") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["000006.svg", "alice.svg"])
        #expect(!FileManager.default.fileExists(atPath: dir + "/evil.svg"))
    }

    @Test func aBatchWhereEveryLineFailsExits12() throws {
        let tooLong = String(repeating: "x", count: 9000)
        let r = run(["encode", "--batch", "-", "--output-dir", dir + "/none"], stdin: Array("\(tooLong)\n\n\(tooLong)\n".utf8))
        let records = try lines(r.stdout).filter { $0["line"] != nil }
        #expect(r.status == .data && records.count == 2)
        // Only blank lines: nothing to encode, a usage error like an empty batch (they used to be 2 failures).
        let blank = run(["encode", "--batch", "-", "--output-dir", dir + "/blank"], stdin: Array("\n\r\n\n".utf8))
        #expect(blank.status == .usage && blank.stderr.contains("has only blank lines (3)"), "\(blank.stderr)")
        let jsonl = run(
            ["encode", "--batch", "-", "--batch-format", "jsonl", "--output-dir", dir + "/j"], stdin: Array("{\"text\":\"a\"}\n  \n".utf8))
        let skipped = try lines(jsonl.stdout).last?["summary"]?["skippedBlank"]?.intValue
        #expect(jsonl.status == .ok && skipped == 1, "\(jsonl.stderr)")
        #expect(run(["encode", "--batch", "-"]).status == .usage)
        #expect(run(["encode", "x", "--batch", "-", "--output-dir", dir]).status == .usage)
        #expect(run(["encode", "--batch", "-", "--output-dir", dir, "-o", dir + "/x.png"]).status == .usage)
    }
}
