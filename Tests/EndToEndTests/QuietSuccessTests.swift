import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// `-q/--quiet` on the commands cron runs: cron mails every line a job prints, so a job that succeeded prints
/// nothing at all, on stdout or stderr; a failure still prints its error object and exits with its code.
@Suite struct QuietSuccessTests {
    @Test func testS16S4QuietCronCommandsPrintNothingOnSuccessAndTheErrorOnFailure() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("alice")
        let ids =
            try h.server.createSessions(count: 20)
        let plan = Array(("user,id\n" + ids.map { "carol,\($0)\n" }.joined()).utf8)
        let out = h.home.file("invite.png")
        let quiet: [(String, [String], [UInt8]?)] = [
            ("sl-restore", ["-q"], nil),
            ("sl-restore", ["--quiet", "--warn-within", "1h"], nil),
            ("sl-sessions", ["revoke", "-q", "-"], plan),
            ("sl-qr", ["encode", "-q", "-o", out, "hello"], nil),
            ("sl-chat", ["outbox", "flush", "-q"], nil)
        ]
        for (tool, arguments, stdin) in quiet {
            let run = try h.run(tool, arguments, stdin: stdin)
            #expect(run.status == 0, "\(tool) \(arguments): \(run.stderrText)")
            #expect(run.stdout.isEmpty && run.stderr.isEmpty, "\(tool) \(arguments) printed: \(run.stdoutText) \(run.stderrText)")
        }
        #expect(FileManager.default.fileExists(atPath: out), "the image is written all the same")
        // Without -q the same commands speak.
        #expect(!(try h.run("sl-restore", [])).stdout.isEmpty)

        // A failure is still reported: the error object on stderr, its exit code.
        let soon = try h.run("sl-restore", ["-q", "--warn-within", "2d"])
        #expect(soon.status == 14 && soon.stdout.isEmpty && soon.stderrText.contains("SESSION_EXPIRES_SOON"), "\(soon.stderrText)")
        _ = try h.server.dev(
            "POST", "/__dev/faults", .object([("route", .string("DELETE /api/admin/users/*/sessions/*")), ("status", .int(400))]))
        let more =
            try h.server.createSessions(count: 3)
        let failed = try h.run(
            "sl-sessions", ["revoke", "-q", "-"], stdin: Array(("user,id\n" + more.map { "carol,\($0)\n" }.joined()).utf8))
        #expect(failed.status == 8 && failed.stdout.isEmpty && failed.stderrText.contains("PARTIAL"), "\(failed.stderrText)")
        // sl-qr decode's own -q (zbarimg's) still prints the payloads.
        let decoded = try h.run("sl-qr", ["decode", "--raw", "-q", out])
        #expect(decoded.status == 0 && decoded.stdoutText == "hello\n", "\(decoded.stdoutText) \(decoded.stderrText)")
    }
}
