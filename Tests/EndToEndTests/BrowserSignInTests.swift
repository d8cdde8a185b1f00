import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// The browser sign-in, in a real browser, and what another local user can see of it.
@Suite struct BrowserSignInTests {
    static let chromiumSignIn = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Browser/chromium_signin.py").path

    /// Debian's python3 (the script needs only its standard library): the browser is started by sl-login as the
    /// user it runs as, who cannot reach an interpreter installed under root's home (pyenv).
    static let python = "/usr/bin/python3"

    /// Waits up to `seconds` for a file to exist; its content.
    static func waitForFile(_ path: String, seconds: Double = 20) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let data = FileManager.default.contents(atPath: path), !data.isEmpty { return String(decoding: data, as: UTF8.self) }
            usleep(100_000)
        }
        return nil
    }

    static func handoffPages(_ h: SessionToolsHarness) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: h.home.path + "/starline/run")) ?? []).filter { $0.hasPrefix("sign-in-") }
    }

    /// The whole sign-in through the real page in headless Chromium (Debian's chromium and chromedriver,
    /// installed by scripts/bootstrap), started by `sl-login --browser` as $BROWSER and answered on its loopback
    /// listener. Before the fix Chromium stayed on the form: its CSP (form-action 'self') blocked the redirect.
    @Test func signInThroughTheRealPageInHeadlessChromium() throws {
        #expect(
            FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
                && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"),
            "chromium and chromium-driver are missing: run scripts/bootstrap")
        let h = try SessionToolsHarness(server: try DevServerProcess())
        let result = h.home.file("chromium.json")
        let browser = "\(Self.python) '\(Self.chromiumSignIn)' --user bob --password bob-pass --result '\(result)' %s"
        let login = try h.run("sl-login", ["--browser", "--pending-ttl", "30"], environment: ["BROWSER": browser])
        let report = Self.waitForFile(result).flatMap { try? JSON.parse($0) }
        #expect(login.status == 0, "\(login.stderrText)\nchromium: \(report.map { $0.serialized() } ?? "no report")")
        let record = try login.json()
        #expect(record["state"]?.stringValue == "loggedIn" && record["mode"]?.stringValue == "browser")
        #expect(record["session"]?["user"]?.stringValue == "bob")
        #expect(report?["ok"] == .bool(true))
        #expect(
            report?["startURL"]?.stringValue?.hasPrefix("file://") == true, "the browser was handed the private page, not the authorize URL"
        )
        #expect(report?["finalText"]?.stringValue?.contains("Signed in") == true)
        #expect(try h.restore().state == "valid")
        #expect(Self.handoffPages(h).isEmpty, "the private page is removed when the sign-in ends")
    }

    /// Deny in the real page ends the sign-in at once with NO_RESULT, and nothing stays pending.
    @Test func denyInChromiumEndsTheSignIn() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        let result = h.home.file("chromium.json")
        let browser = "\(Self.python) '\(Self.chromiumSignIn)' --user bob --password bob-pass --deny --result '\(result)' %s"
        let login = try h.run("sl-login", ["--browser", "--pending-ttl", "30"], environment: ["BROWSER": browser])
        #expect(login.status == 9, "\(login.stderrText)")
        #expect(login.stderrText.contains("denied"), "\(login.stderrText)")
        #expect(try h.status()["pendingLogin"] == .null)
        #expect(Self.waitForFile(result).flatMap { try? JSON.parse($0) }?["finalText"]?.stringValue?.contains("not completed") == true)
    }

    /// The protection kept: the sign-in form may post only to the server itself, and its answer may
    /// redirect only to the origin of the redirect URI it was opened for — not to any loopback port.
    @Test func theFormActionPolicyNamesOnlyTheRedirectOrigin() throws {
        let server = try DevServerProcess()
        let challenge = String(repeating: "a", count: 43)
        let page = try server.request(
            "GET",
            "/oauth/authorize?response_type=code&client_id=workbench&redirect_uri=http%3A%2F%2F127.0.0.1%3A4567%2Fcallback&state=s&code_challenge=\(challenge)&code_challenge_method=S256"
        )
        #expect(page.status == 200)
        #expect(
            page.header("Content-Security-Policy")
                == "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' http://127.0.0.1:4567")
        let app = try server.request(
            "GET",
            "/oauth/authorize?response_type=code&client_id=workbench&redirect_uri=starline-workbench%3A%2F%2Fauth%2Fcallback&state=s&code_challenge=\(challenge)&code_challenge_method=S256"
        )
        #expect(app.header("Content-Security-Policy")?.hasSuffix("form-action 'self' starline-workbench:") == true)
        let other = try server.request("GET", "/oauth/device")
        #expect(other.header("Content-Security-Policy")?.hasSuffix("form-action 'self'") == true)
    }

    /// The browser's argv and environment carry no secret of the flow — it gets the file: URL of a 0600
    /// page that forwards to the authorize URL (another user can read /proc/PID/cmdline, not that file).
    @Test func noFlowSecretInTheBrowsersArgvOrEnvironment() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        let record = h.home.file("browser")
        let script = h.home.file("browser.sh")
        try """
        printf '%s\\n' "$@" > '\(record).argv'
        env > '\(record).env'
        page=$(printf '%s' "$1" | sed 's|^file://||')
        stat -c %a "$page" > '\(record).mode'
        cp "$page" '\(record).page'
        echo done > '\(record).done'
        """.write(toFile: script, atomically: true, encoding: .utf8)
        let login = try h.spawn("sl-login", ["--browser", "--pending-ttl", "60"], environment: ["BROWSER": "sh '\(script)'"])
        #expect(Self.waitForFile(record + ".done") != nil, "the browser command ran: \(login.stderrSoFar)")
        login.signal(SIGINT)
        let run = login.wait()
        let argv = try String(contentsOfFile: record + ".argv", encoding: .utf8)
        let env = try String(contentsOfFile: record + ".env", encoding: .utf8)
        let page = try String(contentsOfFile: record + ".page", encoding: .utf8)
        #expect(
            argv.hasPrefix("file://") && !argv.contains("state=") && !argv.contains("code_challenge") && !argv.contains("oauth"), "\(argv)")
        #expect(!env.contains("STARLINE_"), "the browser inherits no STARLINE_* variable")
        #expect(try String(contentsOfFile: record + ".mode", encoding: .utf8).trimmingWhitespace() == "600")
        #expect(page.contains("/oauth/authorize?") && page.contains("code_challenge="), "the page forwards to the authorize URL")
        #expect(run.killedBy == nil && run.status == 130, "Ctrl-C ends it with exit 130: \(run.stderrText)")
        #expect(Self.handoffPages(h).isEmpty, "the page is removed when a signal ends the sign-in")
        #expect(try h.status()["pendingLogin"] == .null)
    }

    /// A $BROWSER script that reads the private page and knows the listener's port, state and authorize URL
    /// (as the user's own browser would), then runs `body`.
    static func pageReadingBrowser(_ h: SessionToolsHarness, _ body: String) throws -> String {
        let script = h.home.file("browser-\(UUID().uuidString).sh")
        try """
        page=$(printf '%s' "$1" | sed 's|^file://||')
        url=$(sed -n 's/.*http-equiv="refresh" content="0;url=\\([^"]*\\)".*/\\1/p' "$page" | sed 's/&amp;/\\&/g')
        port=$(printf '%s' "$url" | sed 's/.*127.0.0.1%3A\\([0-9]*\\)%2Fcallback.*/\\1/')
        state=$(printf '%s' "$url" | sed 's/.*[?&]state=\\([^&]*\\).*/\\1/')
        ( \(body) ) > '\(h.home.path)/browser.log' 2>&1 &
        """.write(toFile: script, atomically: true, encoding: .utf8)
        return "sh '\(script)'"
    }

    /// The callback page escapes what it echoes (the `error` of the URL is anyone's input).
    @Test func theCallbackPageEscapesTheError() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        let answer = h.home.file("answer.html")
        let browser = try Self.pageReadingBrowser(
            h,
            """
            curl -s -o '\(answer)' "http://127.0.0.1:$port/callback?state=$state&error=%3Cscript%3Ealert(1)%3C%2Fscript%3E"
            """)
        let login = try h.run("sl-login", ["--browser", "--pending-ttl", "30"], environment: ["BROWSER": browser])
        #expect(login.status == 9, "\(login.stderrText)")
        let page = Self.waitForFile(answer) ?? ""
        #expect(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "\(page)")
        #expect(!page.contains("<script>"))
    }

    /// A Python one-liner that holds connections to the listener, sending one byte a second and never a whole
    /// request line; it opens a new one whenever one is dropped, for `seconds`, and creates `marker` (when
    /// given) once its first connection is open.
    static func dribbler(seconds: Int, marker: String = "/dev/null") -> String {
        "\(python) -c 'import socket,sys,time\nend=time.time()+\(seconds)\nwhile time.time()<end:\n s=socket.create_connection((\"127.0.0.1\",int(sys.argv[1])))\n open(sys.argv[2],\"a\").close()\n try:\n  while time.time()<end: s.send(b\"G\"); time.sleep(1)\n except OSError: pass' \"$port\" '\(marker)'"
    }

    /// One slow connection (a byte a second, never a request line) does not hold the listener: the
    /// real callback, sent meanwhile on another connection, is answered and the sign-in completes.
    @Test func aSlowConnectionDoesNotHoldTheListener() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        let browser = try Self.pageReadingBrowser(
            h,
            """
            \(Self.dribbler(seconds: 40, marker: h.home.file("dribbling"))) &
            while [ ! -e '\(h.home.file("dribbling"))' ]; do sleep 0.05; done
            \(h.approveInShell(url: "\"$url\"", user: "bob"))
            curl -s -o /dev/null "$loc"
            """)
        let login = try h.spawn("sl-login", ["--browser", "--pending-ttl", "30"], environment: ["BROWSER": browser])
        let run = login.waitOrKill(seconds: 25)
        #expect(run.status == 0 && run.killedBy == nil, "\(run.stderrText)")
        #expect(try h.restore().state == "valid")
    }

    /// The pending TTL always wins — connections that keep dribbling and reconnecting never keep the
    /// listener waiting past it (before, the listener waited on such a connection whatever the TTL said).
    @Test func thePendingTTLWinsOverDribblingConnections() throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        let browser = try Self.pageReadingBrowser(h, "\(Self.dribbler(seconds: 60)) & \(Self.dribbler(seconds: 60))")
        let login = try h.spawn("sl-login", ["--browser", "--pending-ttl", "30"], environment: ["BROWSER": browser])
        let run = login.waitOrKill(seconds: 50)
        #expect(run.killedBy == nil && run.status == 9, "\(run.stderrText)")
        #expect(run.stderrText.contains("before the login expired"), "\(run.stderrText)")
        #expect(try h.status()["pendingLogin"] == .null)
    }
}
