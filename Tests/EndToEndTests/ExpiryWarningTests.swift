import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// S4 for unattended jobs: sessions are not extended by use, so a cron check must see the end coming.
/// `--warn-within` on `sl-restore` and `sl-login status` exits 14 (EXPIRES_SOON) while the session is still
/// valid; and every "not logged in" names the API, app and service it looked in and what to run.
@Suite struct ExpiryWarningTests {
    @Test func testS4WarnWithinExitsFourteenWhileTheSessionIsValidButEndingSoon() throws {
        // The dev server's sessions last a day.
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("alice")
        let soon = try h.run("sl-restore", ["--warn-within", "2d"])
        #expect(soon.status == 14, "\(soon.stderrText)")
        let record = try soon.jsonLines().first
        #expect(record?["state"]?.stringValue == "valid" && record?["session"]?["expiresAt"]?.stringValue != nil)
        let error = try soon.error()["error"]
        #expect(error?["code"]?.stringValue == "SESSION_EXPIRES_SOON")
        #expect((error?["details"]?["expiresInSeconds"]?.intValue ?? 0) > 80_000)
        #expect(try h.run("sl-restore", ["--warn-within", "1h"]).status == 0)
        #expect(try h.run("sl-restore", []).status == 0, "without --warn-within nothing changes")

        let status = try h.run("sl-login", ["status", "--warn-within", "2d"])
        #expect(status.status == 14 && status.stderrText.contains("SESSION_EXPIRES_SOON"), "\(status.stderrText)")
        #expect(try h.run("sl-login", ["status", "--warn-within", "12h"]).status == 0)
        #expect(try h.run("sl-login", ["status", "--warn-within", "2x"]).status == 2)
    }

    @Test func testS4NotLoggedInNamesTheApiAppAndServiceEverywhere() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        for (tool, arguments) in [
            ("sl-restore", [String]()), ("sl-login", ["token"]), ("sl-sessions", ["list"]), ("sl-chat", ["conversations"])
        ] {
            let run = try h.run(tool, arguments)
            #expect(run.status == 3, "\(tool): \(run.stderrText)")
            let error = try run.error()["error"]
            let message = error?["message"]?.stringValue ?? ""
            #expect(
                message.contains(h.server.baseURL) && message.contains("app ") && message.contains("sl-login"),
                "\(tool) \(arguments): \(message)")
            #expect(error?["details"]?["api"]?.stringValue == h.server.baseURL, "\(tool)")
        }
    }
}
