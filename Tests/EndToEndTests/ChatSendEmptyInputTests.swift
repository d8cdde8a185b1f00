import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// Empty input to `sl-chat send`: with `--lines`, or `-` with `--allow-empty`, nothing to send is a success
/// (exit 0, a summary saying so, nothing stored or sent, no network needed); `-` alone stays a usage error.
@Suite struct ChatSendEmptyInputTests {
    @Test func w5NothingToSendIsASuccessWhereEmptyIsAllowedAndAUsageErrorOtherwise() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("alice")
        let puts = "PUT /chat/v1/conversations/{id}/messages/{clientId}"

        for arguments in [
            ["send", "c_team", "--lines"], ["send", "c_team", "--allow-empty", "-"],
            ["send", "c_team", "--allow-empty", "--client-id", "k", "-"]
        ] {
            for stdin in ["", "\n", "\r\n\n"] where !(arguments.contains("-") && stdin == "\r\n\n") {
                let run = try h.run("sl-chat", arguments, stdin: Array(stdin.utf8))
                #expect(run.status == 0, "\(arguments) \(stdin.debugDescription): \(run.stderrText)")
                let summary = try run.json()["summary"]
                #expect(
                    summary?["items"]?.intValue == 0 && summary?["sent"]?.intValue == 0 && summary?["nothingToSend"] == .bool(true),
                    "\(run.stdoutText)")
            }
        }
        #expect(try h.run("sl-chat", ["outbox", "list"]).jsonLines().isEmpty, "nothing was stored in the outbox")
        #expect(try h.counter(puts) == 0, "nothing was sent")

        // Without --allow-empty, an empty stdin for - is still a usage error that names the flag.
        let refused = try h.run("sl-chat", ["send", "c_team", "-"], stdin: [])
        #expect(refused.status == 2 && refused.errorCode == "USAGE")
        #expect(refused.stderrText.contains("--allow-empty"), "\(refused.stderrText)")
        // --allow-empty changes nothing when there is text.
        let sent = try h.run("sl-chat", ["send", "c_team", "--allow-empty", "-"], stdin: Array("hello\n".utf8))
        #expect(sent.status == 0, "\(sent.stderrText)")
        #expect(try sent.json()["state"]?.stringValue == "sent")

        // Nothing to send needs neither a session nor the network.
        let nowhere = try h.run(
            "sl-chat", ["send", "c_team", "--lines"], stdin: [],
            environment: [
                "STARLINE_HOME": h.home.file("no-session"), "STARLINE_API_BASE_URL": "http://127.0.0.1:9",
                "STARLINE_CHAT_BASE_URL": "http://127.0.0.1:9/chat"
            ])
        #expect(nowhere.status == 0, "\(nowhere.stderrText)")
    }
}
