import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// `sl-login status` exits as `gh auth status` does: 0 only while a usable session is stored, so
/// `sl-login status && job` is a local gate; without one it still prints what is stored, and its error
/// says what to run.
@Suite struct LoginStatusExitTests {
    func harness(_ arguments: [String] = []) throws -> SessionToolsHarness {
        try SessionToolsHarness(server: try DevServerProcess(arguments))
    }

    /// The gate as a script writes it: prints "ran" only when status exits 0.
    func gate(_ h: SessionToolsHarness, environment: [String: String] = [:]) throws -> String {
        let script = "\(h.shellEnvironment) '\(Tools.path("sl-login"))' status >/dev/null 2>&1 && echo ran; true"
        return try Tools.run("/bin/sh", ["-c", script], home: h.home.path, environment: environment).stdoutText
    }

    @Test func s4StatusWithoutASessionExits3PrintsItsRecordAndSaysWhatToRun() throws {
        let h = try harness()
        let status = try h.run("sl-login", ["status"])
        #expect(status.status == 3, "\(status.stderrText)")
        // The record is still printed on stdout, as before.
        let record = try status.json()
        #expect(record["session"] == .null && record["api"]?.stringValue == h.server.baseURL)
        let error = try status.error()["error"]
        #expect(error?["code"]?.stringValue == "NOT_LOGGED_IN")
        let message = error?["message"]?.stringValue ?? ""
        #expect(
            message.contains("run sl-login") && message.contains("sl-login --device") && message.contains("sl-login --with-token"),
            "\(message)")
        #expect(error?["details"]?["run"]?.stringValue == "sl-login" && error?["details"]?["service"]?.stringValue == "default")
        #expect(try gate(h) == "")

        try h.storeLogin("bob")
        let loggedIn = try h.run("sl-login", ["status"])
        #expect(loggedIn.status == 0 && loggedIn.stderrText.isEmpty, "\(loggedIn.stderrText)")
        #expect(try loggedIn.json()["session"]?["user"]?.stringValue == "bob")
        #expect(try gate(h) == "ran\n")

        // S11: after a logout nothing is stored: 3 again.
        #expect(try h.run("sl-login", ["logout"]).status == 0)
        #expect(try h.run("sl-login", ["status"]).status == 3)
        #expect(try gate(h) == "")
    }

    @Test func s2AMemoryOnlySessionFromStarlineTokenIsLoggedIn() throws {
        let h = try harness()
        let login = try h.server.login("bob")
        let status = try h.run("sl-login", ["status"], environment: ["STARLINE_TOKEN": login.token])
        #expect(status.status == 0, "\(status.stderrText)")
        #expect(try gate(h, environment: ["STARLINE_TOKEN": login.token]) == "ran\n")
    }

    @Test func s6APendingLoginWithoutASessionIsNotLoggedInAndNamesHowToFinishIt() throws {
        let h = try harness()
        #expect(try h.run("sl-login", ["start"]).status == 0)
        let status = try h.run("sl-login", ["status"])
        #expect(status.status == 3)
        #expect(try status.json()["pendingLogin"]?["mode"] != nil)
        let message = try status.error()["error"]?["message"]?.stringValue ?? ""
        #expect(message.contains("sl-login complete") && message.contains("sl-login cancel"), "\(message)")
    }

    @Test func s4AnExpiredStoredSessionExits4AndIsKept() throws {
        let h = try harness(["--session-ttl", "3"])
        // The server's clock 10 s behind: the session it grants ends 7 s ago by ours (the stored candidate
        // carries the server's expiry), without the test sleeping it out.
        try h.server.advanceClock(-10)
        try h.storeLogin("bob")
        let status = try h.run("sl-login", ["status"])
        #expect(status.status == 4, "\(status.stderrText)")
        #expect(status.errorCode == "SESSION_EXPIRED")
        #expect(try status.json()["session"]?["expired"] == .bool(true))
        #expect(try status.error()["error"]?["message"]?.stringValue?.contains("run sl-login") == true)
        // status is local: it never clears anything.
        #expect(try h.run("sl-login", ["status"]).json()["session"]?["user"]?.stringValue == "bob")
    }

    @Test func s17AFailedStdoutIsStillWriteFailedWhenNotLoggedIn() throws {
        let h = try harness()
        let script = "\(h.shellEnvironment) '\(Tools.path("sl-login"))' status > /dev/full"
        let run = try Tools.run("/bin/sh", ["-c", script], home: h.home.path)
        #expect(run.status == 10, "\(run.stderrText)")
        #expect(run.stderrText.hasPrefix(#"{"error":{"code":"WRITE_FAILED""#), "\(run.stderrText)")
    }
}
