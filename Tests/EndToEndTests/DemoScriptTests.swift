import Foundation
import StarlineTestSupport
import Testing

/// `make demo`'s script, run here on the built tools, does every step of the main job and
/// exits 0 — so the README's first command cannot rot unnoticed.
@Suite struct DemoScriptTests {
    @Test func theDemoRunsTheMainJobEndToEnd() throws {
        let dir = TemporaryDirectory("demo")
        let bin = (Tools.path("sl-qr") as NSString).deletingLastPathComponent
        let run = try Tools.run(
            "/bin/sh", [repositoryRoot + "/scripts/demo", bin], home: dir.path,
            environment: ["STARLINE_DEMO_DIR": dir.file("work"), "TMPDIR": dir.path])
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(run.stderrText.contains("Every step did what it says"))
        for step in [
            "signed in as alice with the admin role", "revoked all 25 of carol's sessions", "bob redeemed it",
            "bob's tail delivered it once", "age -d opened it with the share code"
        ] {
            #expect(run.stderrText.contains(step), "\(step)")
        }
        // Each step's JSON is on stdout.
        #expect(run.stdoutText.contains(#""state":"valid""#))
        #expect(FileManager.default.fileExists(atPath: dir.file("work") + "/friend-link.png"))
    }
}
