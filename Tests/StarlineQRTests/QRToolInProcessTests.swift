import Testing
import StarlineCore
@testable import QRCommands

/// sl-qr run in-process through `ToolMain.execute` with captured streams: the commands, their typed options and
/// their errors without spawning the binary (the end-to-end tests in SLQRTests run the binary itself).
@Suite struct QRToolInProcessTests {
    func run(_ words: [String], stdin: [UInt8] = []) -> (status: StarlineCore.ExitStatus, stdout: [UInt8], stderr: String) {
        let captured = IOStreams.capturing(stdin: stdin)
        let status = ToolMain.execute(QRTool.tool, words, io: captured.io)
        return (status, captured.stdout.bytes, captured.stderr.text)
    }

    @Test func encodeThenDecodeThroughStandardStreams() throws {
        let png = run(["encode", "-", "-l", "H"], stdin: Array("héllo 星".utf8))
        #expect(png.status == .ok && png.stderr.isEmpty)
        #expect(Array(png.stdout.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let decoded = run(["decode", "-"], stdin: png.stdout)
        #expect(decoded.status == .ok)
        let record = try JSON.parse(Array(decoded.stdout.split(separator: 0x0A)[0]))
        #expect(record["text"]?.stringValue == "héllo 星" && record["kind"]?.stringValue == "text")
    }

    @Test func theFormatIsATypedChoice() throws {
        let ascii = run(["encode", "-f", "matrix", "x"])
        #expect(ascii.status == .ok)
        #expect(try JSON.parse(ascii.stdout)["version"]?.intValue == 1)
        let bad = run(["encode", "-f", "gif", "x"])
        #expect(bad.status == .usage && bad.stderr.contains("invalid value 'gif' for --format"))
        let size = run(["encode", "-s", "0", "x"])
        #expect(size.status == .usage && size.stderr.contains("--size"))
    }

    @Test func anInvalidFriendLinkIsAUsageError() throws {
        let r = run(["friend", "short"])
        #expect(r.status == .usage && r.stdout.isEmpty)
        #expect(r.stderr.hasPrefix(#"{"error":{"code":"INVALID_FRIEND_LINK""#))
    }
}
