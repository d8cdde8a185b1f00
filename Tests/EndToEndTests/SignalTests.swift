import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// SIGINT, SIGTERM and SIGHUP end every tool cleanly — exit 128 + the signal number (the
/// process exits; it is not killed by the signal), the pending login abandoned so the cron gate keeps
/// answering for the stored session, temporary files removed.
@Suite struct SignalTests {
    static let signals: [(name: String, number: Int32)] = [("SIGINT", SIGINT), ("SIGTERM", SIGTERM), ("SIGHUP", SIGHUP)]

    @Test(arguments: [0, 1, 2])
    func aSignalDuringADeviceSignInAbandonsItAndExits128PlusN(_ index: Int) throws {
        let (name, number) = Self.signals[index]
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("bob")
        let login = try h.spawn("sl-login", ["--device", "--pending-ttl", "60"])
        #expect(login.waitForStderr { $0.contains("enter the code") }, "\(login.stderrSoFar)")
        #expect(try h.status()["pendingLogin"]?["mode"]?.stringValue == "device")
        #expect(try h.restore().status == 9, "while the login is pending, sl-restore answers noResult (S6)")
        login.signal(number)
        let run = login.waitOrKill(seconds: 15)
        #expect(run.killedBy == nil, "\(name): the tool exits; it is not killed by the signal")
        #expect(run.status == 128 + number, "\(name): \(run.stderrText)")
        #expect(try h.status()["pendingLogin"] == .null, "\(name) abandons the pending login")
        let restore = try h.restore()
        #expect(restore.status == 0 && restore.state == "valid", "the cron gate answers for the stored session again after \(name)")
    }

    /// The browser flow too: the private page is removed and the login abandoned.
    @Test func sigtermDuringABrowserSignIn() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        let login = try h.spawn("sl-login", ["--browser", "--pending-ttl", "60"], environment: ["BROWSER": "true"])
        #expect(login.waitForStderr { $0.contains("opened the browser") }, "\(login.stderrSoFar)")
        login.signal(SIGTERM)
        let run = login.waitOrKill(seconds: 15)
        #expect(run.killedBy == nil && run.status == 143, "\(run.stderrText)")
        #expect(try h.status()["pendingLogin"] == .null)
        let pages = (try? FileManager.default.contentsOfDirectory(atPath: h.home.path + "/starline/run")) ?? []
        #expect(!pages.contains { $0.hasPrefix("sign-in-") }, "\(pages)")
    }

    /// A local tool in the middle of writing files: Ctrl-C ends it with 130 and leaves no temporary file.
    @Test func ctrlCDuringABatchEncodeLeavesNoTemporaryFiles() throws {
        let dir = TemporaryDirectory("batch-signal")
        let lines =
            (1...40_000).map { "https://starline.example/friend/\($0)-\(String(repeating: "x", count: 200))" }.joined(separator: "\n")
            + "\n"
        let encode = try Tools.spawn(
            "sl-qr", ["encode", "--batch", "-", "--output-dir", dir.file("out"), "--size", "20"], stdin: Array(lines.utf8), home: dir.path)
        let started = Date()
        while ((try? FileManager.default.contentsOfDirectory(atPath: dir.file("out")))?.count ?? 0) < 20,
            Date().timeIntervalSince(started) < 20
        { usleep(20_000) }
        encode.signal(SIGINT)
        let run = encode.waitOrKill(seconds: 15)
        #expect(run.killedBy == nil && run.status == 130, "\(run.stderrText)")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir.file("out"))) ?? []
        #expect(files.count < 40_000, "it was interrupted, not finished")
        #expect(!files.contains { $0.contains(".tmp-") }, "no temporary file is left: \(files.filter { $0.contains(".tmp-") })")
    }

    /// A tool started with a signal ignored (nohup, a background job of a script) keeps ignoring it.
    @Test func anIgnoredSignalStaysIgnored() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        let run = try Tools.shell(
            """
            trap '' HUP
            \(h.shellEnvironment) '\(Tools.path("sl-login"))' --device --pending-ttl 60 2> '\(h.home.path)/err' & pid=$!
            for i in $(seq 100); do grep -q 'enter the code' '\(h.home.path)/err' 2>/dev/null && break; sleep 0.1; done
            grep SigIgn /proc/$pid/status
            kill -HUP $pid; sleep 0.1
            kill -0 $pid && echo alive
            kill -TERM $pid; wait $pid; echo "exit=$?"
            """)
        // The disposition itself (bit 0 of the ignored mask is SIGHUP's), then a SIGHUP that leaves it running.
        let ignored = run.stdoutText.split(separator: "\n").first { $0.hasPrefix("SigIgn:") }
            .flatMap { UInt64($0.dropFirst("SigIgn:".count).trimmingCharacters(in: .whitespaces), radix: 16) }
        #expect(ignored.map { $0 & 1 == 1 } == true, "SIGHUP is still ignored: \(run.stdoutText)")
        #expect(run.stdoutText.contains("alive"), "SIGHUP was ignored: \(run.stdoutText)")
        #expect(run.stdoutText.contains("exit=143"), "\(run.stdoutText)")
    }
}
