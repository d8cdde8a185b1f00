import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
import PlatformCommands
@testable import LoginCommands
@testable import RestoreCommands

/// A networked tool run in-process on captured streams, with STARLINE_HOME in `home` and an API base where
/// nothing listens (these tests need no server).
@MainActor
func runPlatformTool(
    _ tool: Tool<AsyncCommandRunner>, _ words: [String], home: TemporaryDirectory,
    stdin: [UInt8] = []
) async -> (status: StarlineCore.ExitStatus, stdout: String, stderr: String) {
    let captured = IOStreams.capturing(
        stdin: stdin,
        environment: Environment([
            "STARLINE_HOME": home.path, "HOME": home.path,
            "STARLINE_API_BASE_URL": "http://127.0.0.1:9"
        ]))
    let status = await ToolMain.execute(tool, words, io: captured.io)
    return (status, captured.stdout.text, captured.stderr.text)
}

/// sl-login and sl-restore run in-process (`ToolMain.execute` on captured streams) for what needs no server:
/// mode selection without a terminal, typed option errors, the local status, restore with nothing stored.
@Suite struct LoginInProcessTests {
    @MainActor
    func run(
        _ tool: Tool<AsyncCommandRunner>, _ words: [String], home: TemporaryDirectory,
        stdin: [UInt8] = []
    ) async -> (status: StarlineCore.ExitStatus, stdout: String, stderr: String) {
        await runPlatformTool(tool, words, home: home, stdin: stdin)
    }

    @Test @MainActor func withoutATerminalSignInNeedsAModeFlag() async throws {
        let home = TemporaryDirectory()
        let r = await run(LoginTool.tool, [], home: home)
        #expect(r.status == .usage && r.stdout.isEmpty)
        #expect(r.stderr.contains("not on a terminal: choose a login mode explicitly"))
    }

    @Test @MainActor func typedOptionsRejectOutOfRangeValues() async throws {
        let home = TemporaryDirectory()
        let ttl = await run(LoginTool.tool, ["start", "--pending-ttl", "5"], home: home)
        #expect(ttl.status == .usage && ttl.stderr.contains("--pending-ttl"))
        let port = await run(LoginTool.tool, ["--browser", "--redirect-port", "70000"], home: home)
        #expect(port.status == .usage && port.stderr.contains("--redirect-port"))
        let timeout = await run(RestoreTool.tool, ["--timeout", "0"], home: home)
        #expect(timeout.status == .usage && timeout.stderr.contains("--timeout"))
    }

    @Test @MainActor func statusAndRestoreWithNothingStored() async throws {
        let home = TemporaryDirectory()
        let status = await run(LoginTool.tool, ["status"], home: home)
        // As gh auth status: the record is printed, and the exit says "not logged in" (3).
        #expect(status.status == .notLoggedIn)
        #expect(status.stderr.hasPrefix(#"{"error":{"code":"NOT_LOGGED_IN""#))
        let json = try JSON.parse(Array(status.stdout.utf8))
        #expect(json["session"] == .null && json["api"]?.stringValue == "http://127.0.0.1:9")
        let restore = await run(RestoreTool.tool, [], home: home)
        #expect(restore.status == .notLoggedIn)
        #expect(try JSON.parse(Array(restore.stdout.utf8))["state"]?.stringValue == "absent")
        #expect(restore.stderr.hasPrefix(#"{"error":{"code":"NOT_LOGGED_IN""#))
    }
}

/// Options that cannot go together, or do not apply to the command, are usage errors.
@Suite struct LoginOptionConflictTests {
    @MainActor
    func run(_ words: [String]) async -> (status: StarlineCore.ExitStatus, stderr: String) {
        let r = await runPlatformTool(LoginTool.tool, words, home: TemporaryDirectory())
        return (r.status, r.stderr)
    }

    @Test(arguments: [
        ["--with-token", "--device"], ["--device", "--browser"], ["--browser", "--no-browser"],
        ["switch", "--with-token", "--no-browser"]
    ])
    @MainActor func twoSignInFlowsAreAUsageError(_ words: [String]) async throws {
        let r = await run(words)
        #expect(r.status == .usage && r.stderr.contains("cannot be used together"), "\(words): \(r.stderr)")
    }

    @Test(arguments: [["start", "--device"], ["status", "--with-token"], ["--device", "status"], ["token", "--redirect-port", "1"]])
    @MainActor func aSignInFlagDoesNotApplyToOtherCommands(_ words: [String]) async throws {
        let r = await run(words)
        #expect(r.status == .usage, "\(words): \(r.stderr)")
        #expect(
            r.stderr.contains("does not apply to 'sl-login") || r.stderr.contains("it is an option of 'sl-login"), "\(words): \(r.stderr)")
    }
}
