import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
import StarlineSQLite

/// sl-login and sl-restore against a real sl-devserver, one STARLINE_HOME per test (S2–S17, W8).
@Suite struct SessionLifecycleTests {
    func harness(_ arguments: [String] = []) throws -> SessionToolsHarness {
        try SessionToolsHarness(server: try DevServerProcess(arguments))
    }

    // MARK: S2, S3 — storage

    @Test("S2 without storage (STARLINE_TOKEN) the session is memory-only and not restored later")
    func s2MemoryOnly() throws {
        let h = try harness()
        let login = try h.server.login("bob")
        let memory = try h.restore(environment: ["STARLINE_TOKEN": login.token])
        #expect(memory.status == 0 && memory.state == "valid")
        #expect(memory.result?["session"]?["user"]?.stringValue == "bob")
        #expect(
            try h.run("sl-login", ["status"], environment: ["STARLINE_TOKEN": login.token]).json()["storage"]?["backend"]?.stringValue
                == "memory")
        let later = try h.restore()
        #expect(later.status == 3 && later.state == "absent")
        let stored = try h.status()["session"]
        #expect(stored == .null)
    }

    @Test("S2 the storage key combines API origin and App ID (and the service)")
    func s2StorageKey() throws {
        let h = try harness()
        try h.storeLogin("bob")
        #expect(try h.restore().state == "valid")
        #expect(try h.restore(["--app-id", "com.example.game"]).state == "absent")
        #expect(try h.restore(["--service", "staging"]).state == "absent")
        let otherOrigin = try h.restore(environment: [
            "STARLINE_API_BASE_URL": h.server.baseURL.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        ])
        #expect(otherOrigin.state == "absent")
    }

    @Test("S3 a store copied to another machine does not open (STORAGE_ERROR), and tokens are sealed on disk")
    func s3ThisDeviceOnly() throws {
        let h = try harness()
        let login = try h.storeLogin("bob")
        // The database and its WAL (connections do not checkpoint at close, so rows may be there).
        var db = try Data(contentsOf: URL(fileURLWithPath: h.home.file("starline/state/sessions.db")))
        db += (try? Data(contentsOf: URL(fileURLWithPath: h.home.file("starline/state/sessions.db-wal")))) ?? Data()
        #expect(db.range(of: Data(login.token.utf8)) == nil)
        #expect(db.range(of: Data("SQLite format 3".utf8)) != nil, "the search reads the real file")
        try "ffffffffffffffffffffffffffffffff\n".write(toFile: h.home.file("machine-id"), atomically: true, encoding: .utf8)
        let copied = try h.restore()
        #expect(copied.status == 10)
        #expect(copied.run.errorCode == "STORAGE_ERROR")
    }

    @Test(
        """
        S3 state a user relies on is fsync'ed (login, logout); a restore's verification timestamp is not — a power \
        cut only means the next run verifies again
        """)
    func durability() throws {
        try #require(Tools.available("strace"), "strace is needed for this test; run scripts/bootstrap")
        let h = try harness()
        try h.storeLogin("bob")
        #expect(try h.restore().state == "valid")  // the store, WAL and locks exist now
        func syncs(_ command: String) throws -> (status: Int32, syncs: Int) {
            let run = try Tools.shell(
                """
                \(h.shellEnvironment) \
                  strace -f -qq -e trace=fsync,fdatasync -o '\(h.home.path)/trace' \(command) > /dev/null
                echo "status=$?"; grep -c sync '\(h.home.path)/trace' || true
                """)
            let lines = run.stdoutText.split(separator: "\n")
            return (Int32(lines.first?.dropFirst("status=".count) ?? "") ?? -1, Int(lines.last ?? "") ?? -1)
        }
        let restore = try syncs("'\(Tools.path("sl-restore"))'")
        #expect(restore.status == 0)
        #expect(restore.syncs == 0, "a verification commits without fsync")
        let logout = try syncs("'\(Tools.path("sl-login"))' logout")
        #expect(logout.status == 0)
        #expect(logout.syncs > 0, "clearing the session is durable")
        #expect((try h.status())["session"] == .null)
    }

    @Test("S3 group- or world-readable store files are refused like ssh does")
    func s3Permissions() throws {
        let h = try harness()
        try h.storeLogin("bob")
        chmod(h.home.file("starline/state/device.key"), 0o644)
        let r = try h.restore()
        #expect(r.status == 10 && r.run.errorCode == "INSECURE_PERMISSIONS")
        #expect(
            r.state == "keptUnverified" && r.result?["reason"]?.stringValue == "storageError",
            "the state record is printed whatever the exit code")
        chmod(h.home.file("starline/state/device.key"), 0o600)
        #expect(try h.restore().state == "valid")
    }

    // MARK: S4 — restore

    @Test("S4 restore verifies with /api/me, updates user and roles, and reports valid")
    func s4Valid() throws {
        let h = try harness()
        try h.storeLogin("alice")
        let r = try h.restore()
        #expect(r.status == 0 && r.state == "valid")
        #expect(r.result?["session"]?["roles"] == .array([.string("admin")]))
        #expect(r.result?["session"]?["accessToken"] == nil)
        #expect(try h.counter("GET /api/me") >= 1)
        #expect((try h.status())["session"]?["verifiedAt"] != .null)
    }

    @Test(
        "S4 revoked, expired, restricted and app-disabled sessions are cleared (exit 4)",
        arguments: ["revoked", "expired", "restricted", "disabled"])
    func s4Cleared(_ how: String) throws {
        let h = try harness()
        let login = try h.storeLogin("bob")
        switch how {
        case "revoked": _ = try h.server.request("POST", "/oauth/revoke", body: .form([("token", login.token)]))
        case "expired": _ = try h.server.dev("POST", "/__dev/sessions/\(login.sessionId)/expire")
        case "restricted": _ = try h.server.dev("POST", "/__dev/users/bob/restrict")
        default: _ = try h.server.dev("POST", "/__dev/apps/workbench/disable")
        }
        let r = try h.restore()
        #expect(r.status == 4 && r.state == "cleared")
        #expect(
            r.result?["reason"]?.stringValue
                == [
                    "revoked": "SESSION_REVOKED", "expired": "SESSION_EXPIRED", "restricted": "ACCOUNT_RESTRICTED",
                    "disabled": "APP_UNAVAILABLE"
                ][how])
        #expect((try h.status())["session"] == .null)
        #expect(try h.restore().state == "absent")
    }

    @Test(
        "S4 network down, timeouts and 5xx keep the candidate and never report logged in (exit 7)",
        arguments: ["503", "reset", "down", "timeout"])
    func s4KeptUnverified(_ how: String) throws {
        let h = try harness()
        try h.storeLogin("bob")
        switch how {
        case "503": _ = try h.server.dev("POST", "/__dev/faults", .object([("route", .string("GET /api/me")), ("status", .int(503))]))
        case "reset": _ = try h.server.dev("POST", "/__dev/faults", .object([("route", .string("GET /api/me")), ("reset", .bool(true))]))
        case "timeout": _ = try h.server.dev("POST", "/__dev/faults", .object([("route", .string("GET /api/me")), ("delayMs", .int(3000))]))
        default: h.server.stop()
        }
        let r = try h.restore(["--timeout", how == "timeout" ? "1" : "5"])
        #expect(r.status == 7 && r.state == "keptUnverified")
        // The record names the session it kept (unverified), not null.
        let kept = try h.status()["session"]?["id"]
        #expect(kept != nil && r.result?["session"]?["id"] == kept)
    }

    @Test("S4 an expired candidate is cleared without a network call")
    func s4ExpiredLocally() throws {
        let h = try harness(["--session-ttl", "2"])
        // The server's clock 10 s behind: the session it grants ended 8 s ago by ours, without a sleep.
        try h.server.advanceClock(-10)
        try h.storeLogin("bob")
        let before = try h.counter("GET /api/me")
        let r = try h.restore()
        #expect(r.status == 4 && r.state == "cleared" && r.result?["reason"]?.stringValue == "expired")
        #expect(try h.counter("GET /api/me") == before)
    }

    // MARK: S5 — shared verification, in-memory case

    @Test("S5 concurrent restores share one verification: 10 runs, one /api/me call")
    func s5SharedRestore() throws {
        let h = try harness()
        try h.storeLogin("bob")
        let before = try h.counter("GET /api/me")
        // A slow /api/me keeps the first verification in flight while the others start.
        _ = try h.server.dev(
            "POST", "/__dev/faults", .object([("route", .string("GET /api/me")), ("delayMs", .int(1500)), ("count", .int(1))]))
        let bin = Tools.path("sl-restore")
        let script = "for i in 1 2 3 4 5 6 7 8 9 10; do \(h.shellEnvironment) '\(bin)' --compact > '\(h.home.path)'/out.$i & done; wait"
        _ = try Tools.shell(script)
        let states = try (1...10).map {
            try JSON.parse(Data(contentsOf: URL(fileURLWithPath: h.home.file("out.\($0)"))))["state"]?.stringValue
        }
        #expect(states.allSatisfy { $0 == "valid" }, "\(states)")
        #expect(try h.counter("GET /api/me") - before == 1)
    }

    @Test("S5 --max-age accepts a recently verified session without a network call")
    func s5MaxAge() throws {
        let h = try harness()
        try h.storeLogin("bob")
        _ = try h.restore()
        let before = try h.counter("GET /api/me")
        #expect(try h.restore(["--max-age", "300"]).state == "valid")
        #expect(try h.counter("GET /api/me") == before)
        #expect(try h.restore().state == "valid")
        #expect(try h.counter("GET /api/me") == before + 1)
    }

    // MARK: S6, S9 — pending logins and cancellation

    @Test("S6 while a login is pending, restore answers noResult without reading the old candidate")
    func s6PendingLogin() throws {
        let h = try harness()
        try h.storeLogin("bob")
        let start = try h.run("sl-login", ["start"])
        #expect(start.status == 0)
        #expect(try start.json()["url"]?.stringValue?.contains("code_challenge_method=S256") == true)
        let before = try h.counter("GET /api/me")
        let r = try h.restore()
        #expect(r.status == 9 && r.state == "noResult")
        #expect(try h.counter("GET /api/me") == before)
        #expect((try h.status())["pendingLogin"]?["mode"]?.stringValue == "paste")
        #expect(try h.run("sl-login", ["cancel"]).status == 0)
        #expect(try h.restore().state == "valid")  // S11: cancel keeps the established session
    }

    @Test("S6 W8 a login in another process invalidates a restore already in flight")
    func s6LoginDuringRestore() throws {
        let h = try harness()
        try h.storeLogin("bob")
        // The restore's token check is held at the server until the login has started.
        let run = try runHeld(h, "sl-restore", ["--compact"], at: "GET /api/me") {
            let start = try h.run("sl-login", ["start"])
            #expect(start.status == 0, "\(start.stderrText)")
        }
        #expect(run.status == 9, "\(run.stdoutText) \(run.stderrText)")
        #expect(try run.json()["state"]?.stringValue == "noResult")
    }

    /// Drives the authorize form for a pending paste login and returns the callback URL.
    func callback(_ h: SessionToolsHarness, url: String, user: String, deny: Bool = false) throws -> String {
        let page = try h.server.request("GET", url)
        let id = try #require(DevServerProcess.formValue(page.text, "request_id"))
        let r = try h.server.request(
            "POST", "/oauth/authorize",
            body: .form([
                ("request_id", id), ("username", user), ("password", "\(user)-pass"),
                ("action", deny ? "deny" : "approve")
            ]))
        return try #require(r.header("Location"))
    }

    @Test("S6 S9 two-step login survives a process restart between start and complete")
    func twoStepAcrossProcesses() throws {
        let h = try harness()
        let url = try #require(try h.run("sl-login", ["start"]).json()["url"]?.stringValue)
        let cb = try callback(h, url: url, user: "carol")
        #expect(cb.hasPrefix("starline-workbench://auth/callback?code="))
        let done = try h.run("sl-login", ["complete", cb])
        #expect(done.status == 0, "\(done.stderrText)")
        #expect(try done.json()["session"]?["user"]?.stringValue == "carol")
        #expect(try h.restore().state == "valid")
        #expect(try h.run("sl-login", ["complete", cb]).status == 9)  // nothing pending any more
    }

    @Test("S9 cancel versus a late callback: the late success is not published, the session is kept")
    func s9CancelThenLateCallback() throws {
        let h = try harness()
        try h.storeLogin("bob")
        let url = try #require(try h.run("sl-login", ["start"]).json()["url"]?.stringValue)
        let cb = try callback(h, url: url, user: "carol")
        #expect(try h.run("sl-login", ["cancel"]).json()["cancelled"] == .bool(true))
        let late = try h.run("sl-login", ["complete", cb])
        #expect(late.status == 9)
        #expect((try h.status())["session"]?["user"]?.stringValue == "bob")
    }

    @Test("complete accepts the JSON line of sl-qr decode --show-secrets and rejects a wrong state")
    func completeFromQRCode() throws {
        let h = try harness()
        let url = try #require(try h.run("sl-login", ["start"]).json()["url"]?.stringValue)
        let cb = try callback(h, url: url, user: "bob")
        let forged = cb.replacingOccurrences(of: "state=", with: "state=x")
        let forgedRun = try h.run("sl-login", ["complete", forged])
        #expect(forgedRun.status == 12 && forgedRun.errorCode == "STATE_MISMATCH", "\(forgedRun.stderrText)")
        _ = try h.run("sl-qr", ["encode", cb, "-o", h.home.file("cb.png")])
        let decoded = try h.run("sl-qr", ["decode", "--show-secrets", h.home.file("cb.png")])
        let done = try h.run("sl-login", ["complete", "-"], stdin: decoded.stdout)
        #expect(done.status == 0, "\(done.stderrText)")
        let redacted = try h.run("sl-qr", ["decode", h.home.file("cb.png")])
        #expect(try h.run("sl-login", ["complete", "-"], stdin: redacted.stdout).status == 2)
    }

    @Test("a denied two-step login is noResult and leaves nothing pending")
    func deniedLogin() throws {
        let h = try harness()
        let url = try #require(try h.run("sl-login", ["start"]).json()["url"]?.stringValue)
        let cb = try callback(h, url: url, user: "bob", deny: true)
        #expect(try h.run("sl-login", ["complete", cb]).status == 9)
        #expect((try h.status())["pendingLogin"] == .null)
    }

    // MARK: S11, S12, S13 — logout, clear, offline logout, failed delete

    @Test("S11 logout clears locally first and revokes on the server; clear makes no server call")
    func s11LogoutAndClear() throws {
        let h = try harness()
        let a = try h.storeLogin("bob")
        let out = try h.run("sl-login", ["logout"])
        #expect(out.status == 0)
        #expect(try out.json()["revoked"] == .bool(true))
        #expect(try h.server.request("GET", "/api/me", token: a.token).errorCode == "SESSION_REVOKED")
        #expect(try h.restore().state == "absent")
        #expect(try h.run("sl-login", ["logout"]).status == 0)  // idempotent
        let b = try h.storeLogin("bob")
        let revokes = try h.counter("POST /oauth/revoke")
        #expect(try h.run("sl-login", ["clear"]).status == 0)
        #expect(try h.counter("POST /oauth/revoke") == revokes)
        #expect(try h.server.request("GET", "/api/me", token: b.token).status == 200)
        #expect(try h.restore().state == "absent")
    }

    @Test("S12 an offline logout remembers the token and a later run revokes it")
    func s12OfflineLogout() throws {
        let h = try harness()
        let a = try h.storeLogin("bob")
        _ = try h.server.dev("POST", "/__dev/faults", .object([("route", .string("POST /oauth/revoke")), ("reset", .bool(true))]))
        let out = try h.run("sl-login", ["logout"])
        #expect(out.status == 7)
        #expect(out.errorCode == "NETWORK_ERROR", "a reset connection: \(out.stderrText)")
        #expect(try out.json()["revoked"] == .bool(false))
        #expect(try h.restore().state == "absent")  // the local clear happened anyway
        let status = try h.status()
        #expect(status["pendingRevocations"]?.arrayValue?.count == 1)
        #expect(try h.server.request("GET", "/api/me", token: a.token).status == 200)  // not revoked yet: never reported as revoked
        _ = try h.server.dev("DELETE", "/__dev/faults")
        _ = try h.restore()  // any later run retries
        #expect(try h.server.request("GET", "/api/me", token: a.token).errorCode == "SESSION_REVOKED")
        #expect((try h.status())["pendingRevocations"]?.arrayValue?.count == 0)
    }

    @Test(
        """
        S12 a logout whose revocation the server refuses with 503 is pending, and says SERVER_ERROR, not a network \
        error
        """)
    func s12LogoutPendingAfterServerError() throws {
        let h = try harness()
        try h.storeLogin("bob")
        _ = try h.server.dev("POST", "/__dev/faults", .object([("route", .string("POST /oauth/revoke")), ("status", .int(503))]))
        let out = try h.run("sl-login", ["logout"])
        #expect(out.status == 7)
        #expect(out.errorCode == "SERVER_ERROR", "\(out.stderrText)")
        #expect(try h.status()["pendingRevocations"]?.arrayValue?.count == 1)
    }

    @Test("S13 a failed delete is STORAGE_ERROR, the old candidate is refused afterwards, and clear retries")
    func s13FailedDelete() throws {
        let h = try harness()
        try h.storeLogin("bob")
        let failed = try h.run("sl-login", ["clear"], environment: ["STARLINE_TEST_STORAGE_FAULT": "delete"])
        #expect(failed.status == 10 && failed.errorCode == "STORAGE_ERROR")
        let r = try h.restore()
        #expect(r.state != "valid")
        // Nothing else uses it either: not the bare token, not an authenticated request.
        let token = try h.run("sl-login", ["token"])
        #expect(token.status == 3 && token.stdout.isEmpty, "\(token.stderrText)")
        #expect(try h.run("sl-login", ["center"]).status == 3)
        let afterFailure = try h.status()
        #expect(afterFailure["clearIncomplete"] == .bool(true))
        #expect(try h.run("sl-login", ["clear"]).status == 0)
        #expect((try h.status())["clearIncomplete"] == .bool(false))
        #expect(try h.restore().state == "absent")
    }

    @Test(
        """
        S11 switch without a terminal or a mode flag refuses (exit 2) and keeps the session; with a mode it logs out, \
        then in
        """)
    func s11Switch() throws {
        let h = try harness()
        let bob = try h.storeLogin("bob")
        let refused = try h.run("sl-login", ["switch"])
        #expect(refused.status == 2, "\(refused.stderrText)")
        #expect((try h.status())["session"]?["user"]?.stringValue == "bob")
        #expect(try h.server.request("GET", "/api/me", token: bob.token).status == 200)
        let carol = try h.server.login("carol")
        let switched = try h.run("sl-login", ["switch", "--with-token"], stdin: Array(carol.token.utf8))
        #expect(switched.status == 0, "\(switched.stderrText)")
        #expect((try h.status())["session"]?["user"]?.stringValue == "carol")
        #expect(try h.server.request("GET", "/api/me", token: bob.token).errorCode == "SESSION_REVOKED")
    }

    @Test(
        """
        S13 S17 logout under storage faults: a failed write still deletes and revokes; an unreadable session is \
        deleted and reported (exit 10)
        """)
    func s13LogoutUnderFaults() throws {
        let h = try harness()
        // The pending-revocation record cannot be written: the token is revoked directly, the session deleted.
        let bob = try h.storeLogin("bob")
        let write = try h.run("sl-login", ["logout"], environment: ["STARLINE_TEST_STORAGE_FAULT": "write"])
        #expect(write.status == 0, "\(write.stderrText)")
        #expect(try write.json()["revoked"] == .bool(true))
        #expect(try h.server.request("GET", "/api/me", token: bob.token).errorCode == "SESSION_REVOKED")
        #expect(try h.restore().state == "absent")

        // The stored session cannot be read: it is deleted all the same, and the failure is not hidden.
        let carol = try h.storeLogin("carol")
        let read = try h.run("sl-login", ["logout"], environment: ["STARLINE_TEST_STORAGE_FAULT": "read"])
        #expect(read.status == 10 && read.errorCode == "STORAGE_ERROR", "\(read.stderrText)")
        #expect(try read.json()["revoked"] == .bool(false))
        #expect(try h.restore().state == "absent", "the unreadable session was deleted, never used again")
        #expect(try h.server.request("GET", "/api/me", token: carol.token).status == 200, "and never reported as revoked")
    }

    @Test("a loopback login whose code exchange fails leaves no pending login behind")
    func loopbackFailureAbandonsPendingLogin() throws {
        let h = try harness()
        let fault = try h.server.dev("POST", "/__dev/faults", .object([("route", .string("POST /oauth/token")), ("status", .int(400))]))
        #expect((200..<300).contains(fault.status), "the fault is installed")
        let script = h.loopbackLoginScript(user: "bob", callback: #"curl -s -o /dev/null "$loc""#)
        let run = try Tools.shell(script)
        #expect(!run.stdoutText.contains("exit=0"), "\(run.stdoutText)")
        #expect((try h.status())["pendingLogin"] == .null)
        #expect(try h.restore().state == "absent", "not noResult: nothing is pending")
    }

    @Test(
        """
        S17 a device key its user cannot read is STORAGE_ERROR naming it, not 'no session'; readable again, the \
        session is back
        """)
    func s17UnreadableDeviceKey() throws {
        let h = try harness()
        try h.storeLogin("bob")
        let key = h.home.file("starline/state/device.key")
        #expect(access(key, F_OK) == 0, "the device key is at \(key)")
        #expect(chmod(key, 0o000) == 0)
        // The tools run as an unprivileged user (ToolUser), for whom the mode counts. Restoring unseals the session.
        let denied = try h.run("sl-restore", [])
        #expect(
            denied.status == ExitStatus.storage.rawValue, "not a restore that finds no session: \(denied.stdoutText) \(denied.stderrText)")
        #expect(denied.errorCode == "STORAGE_ERROR")
        #expect(denied.stderrText.contains("cannot read device key \(key)"), "\(denied.stderrText)")
        #expect(chmod(key, 0o600) == 0)
        #expect(try h.restore().state == "valid")
        #expect((try h.status())["session"]?["user"]?.stringValue == "bob")
    }

    @Test("S17 a kill -9 during logins, restores and logouts never corrupts the store: every later run reads it")
    func killDuringStoreWrites() throws {
        let h = try harness()
        var tokens: [(user: String, token: String)] = []
        for i in 0..<20 { let user = i % 2 == 0 ? "bob" : "carol"; tokens.append((user, try h.server.login(user).token)) }
        // Kills that landed while a tool was running, by kind: sign-in, restore, sign-out.
        var killed = [0, 0, 0]
        var rounds = 0
        var random = SeededRandom(seed: 429)
        for round in 0..<60 {
            let process: RunningTool
            switch round % 3 {
            case 0: process = try h.spawn("sl-login", ["--with-token"], stdin: Array(tokens[(round / 3) % tokens.count].token.utf8))
            case 1: process = try h.spawn("sl-restore", [], stdin: [])
            default: process = try h.spawn("sl-login", ["logout"], stdin: [])
            }
            usleep(UInt32(random.next() % 25_001))
            if process.poll() == nil {
                process.signal(SIGKILL)
                killed[round % 3] += 1
            }
            _ = process.wait()
            // After every round the store opens, is intact, and the tools answer with a documented state.
            let status = try h.run("sl-login", ["status"])
            // 0 with a whole session, 3 (NOT_LOGGED_IN) with none: both are documented states.
            #expect(status.status == 0 || status.status == 3, "round \(round): \(status.stderrText)")
            let integrity = try SQLiteDatabase(path: h.home.file("starline/state/sessions.db"))
                .query("PRAGMA integrity_check").first?.string(0)
            #expect(integrity == "ok", "round \(round)")
            let user = try status.json()["session"]?["user"]?.stringValue
            #expect(user == nil || user == "bob" || user == "carol", "a whole session or none: \(status.stdoutText)")
            let restore = try h.restore()
            #expect(
                ["valid", "absent", "noResult", "cleared"].contains(restore.state ?? ""),
                "round \(round): \(restore.run.stdoutText) \(restore.run.stderrText)")
            // Signed out (3) is a state like any other: only a broken store ends the loop early.
            if status.status != 0 && status.status != 3 || integrity != "ok" { break }
            rounds += 1
        }
        #expect(rounds == 60, "every round ran")
        // Whatever was interrupted, a login afterwards works and restores.
        _ = try h.run("sl-login", ["cancel"])
        try h.storeLogin("bob")
        #expect(try h.restore().state == "valid")
        // Proof that the kills landed: most rounds killed a running tool, and every kind of tool was killed.
        #expect(killed.allSatisfy { $0 > 0 } && killed.reduce(0, +) >= 20, "kills while running (sign-in, restore, sign-out): \(killed)")
    }

    // MARK: S14, S15 — requests racing an account switch

    /// Runs `tool` with its next request to `route` held at the server (a `hold` fault) while `meanwhile` runs, then
    /// lets the request go; the tool's result.
    func runHeld(
        _ h: SessionToolsHarness, _ tool: String, _ arguments: [String], at route: String, meanwhile: () throws -> Void
    ) throws -> ToolRun {
        _ = try h.server.dev("POST", "/__dev/faults", .object([("route", .string(route)), ("hold", .bool(true)), ("count", .int(1))]))
        let asked = try h.counter(route)
        let running = try h.spawn(tool, arguments)
        #expect(try h.server.waitForRequests(route, atLeast: asked + 1), "\(tool)'s \(route) reached the server")
        try meanwhile()
        _ = try h.server.dev("DELETE", "/__dev/faults")
        return running.waitOrKill(seconds: 60)
    }

    /// `sl-login center` for the stored account, its request held at the server while carol signs in with a token
    /// in another process; the center run's result once the server lets the request go.
    func requestHeldWhileCarolSignsIn(_ h: SessionToolsHarness, _ carol: DevServerProcess.Login) throws -> ToolRun {
        try runHeld(h, "sl-login", ["center"], at: "GET /api/center") {
            let signIn = try h.run("sl-login", ["--with-token"], stdin: Array(carol.token.utf8))
            #expect(signIn.status == 0, "\(signIn.stderrText)")
        }
    }

    @Test("S14 an account switch while a request is in flight gives SESSION_CHANGED (exit 11)")
    func s14SessionChanged() throws {
        let h = try harness()
        try h.storeLogin("bob")
        let carol = try h.server.login("carol")
        let center = try requestHeldWhileCarolSignsIn(h, carol)
        #expect(center.status == 11, "\(center.stderrText)")
        #expect((try h.status())["session"]?["user"]?.stringValue == "carol")
    }

    @Test("S15 a late rejection for the old account never clears the new one")
    func s15LateRejection() throws {
        let h = try harness()
        let bob = try h.storeLogin("bob")
        let carol = try h.server.login("carol")
        _ = try h.server.request("POST", "/oauth/revoke", body: .form([("token", bob.token)]))
        let center = try requestHeldWhileCarolSignsIn(h, carol)
        #expect(center.status != 0, "\(center.stdoutText)")
        #expect((try h.status())["session"]?["user"]?.stringValue == "carol")
        #expect(try h.restore().state == "valid")
    }

    @Test("S15 a 401 for the current session clears it; other 403s never log out")
    func s15ClearsOnlyOnEndingErrors() throws {
        let h = try harness()
        let bob = try h.storeLogin("bob")
        _ = try h.server.dev(
            "POST", "/__dev/faults", .object([("route", .string("GET /api/center")), ("status", .int(403)), ("count", .int(1))]))
        let forbidden = try h.run("sl-login", ["center"])
        #expect(forbidden.status == 5)
        #expect((try h.status())["session"]?["id"] != nil)
        _ = try h.server.request("POST", "/oauth/revoke", body: .form([("token", bob.token)]))
        let ended = try h.run("sl-login", ["center"])
        #expect(ended.status == 4)
        #expect((try h.status())["session"] == .null)
    }

    // MARK: S17 — storage failures

    @Test("S17 a login whose store write fails exits 10 and the new server session is revoked")
    func s17WriteFailure() throws {
        let h = try harness()
        let url = try #require(try h.run("sl-login", ["start"]).json()["url"]?.stringValue)
        let cb = try callback(h, url: url, user: "carol")
        let done = try h.run("sl-login", ["complete", cb], environment: ["STARLINE_TEST_STORAGE_FAULT": "write"])
        #expect(done.status == 10 && done.errorCode == "STORAGE_ERROR")
        #expect((try h.status())["session"] == .null)
        #expect(try h.counter("POST /oauth/revoke") >= 1)
        let alice = try h.server.login("alice")
        let carolSessions =
            try h.server.request("GET", "/api/admin/users/carol/sessions", token: alice.token).json()["sessions"]?.arrayValue ?? []
        #expect(carolSessions.isEmpty)
    }

    @Test("S17 a locked store (unreadable device key) is exit 10, and restore works again once readable")
    func s17LockedStore() throws {
        let h = try harness()
        try h.storeLogin("bob")
        let key = h.home.file("starline/state/device.key")
        try FileManager.default.moveItem(atPath: key, toPath: key + ".away")
        try FileManager.default.createDirectory(atPath: key, withIntermediateDirectories: false)
        let locked = try h.restore()
        #expect(locked.status == 10)
        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.moveItem(atPath: key + ".away", toPath: key)
        #expect(try h.restore().state == "valid")
    }

    // MARK: Tools

    @Test("S7 --events writes sessionChanged and error events as JSON Lines")
    func eventsFile() throws {
        let h = try harness()
        let login = try h.server.login("bob")
        let events = h.home.file("events.jsonl")
        #expect(try h.run("sl-login", ["--with-token", "--events", events], stdin: Array(login.token.utf8)).status == 0)
        _ = try h.server.request("POST", "/oauth/revoke", body: .form([("token", login.token)]))
        #expect(try h.run("sl-login", ["center", "--events", events]).status == 4)
        let lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n").map { try JSON.parse(String($0)) }
        #expect(lines.compactMap { $0["event"]?.stringValue } == ["sessionChanged", "error", "sessionChanged"])
        #expect(lines[0]["session"]?["user"]?.stringValue == "bob")
        #expect(lines[1]["error"]?["code"]?.stringValue == "SESSION_REVOKED")
        #expect(lines[2]["session"] == .null)
        #expect(!(try String(contentsOfFile: events, encoding: .utf8)).contains(login.token))
    }

    @Test func loginRefusesInteractiveFlowsWithoutATerminal() throws {
        let h = try harness()
        let r = try h.run("sl-login", [])
        #expect(r.status == 2)
        #expect(r.stderrText.contains("--device"))
    }

    @Test func withTokenVerifiesBeforeStoring() throws {
        let h = try harness()
        let bad = try h.run("sl-login", ["--with-token"], stdin: Array("not-a-token".utf8))
        #expect(bad.status == 4)
        #expect((try h.status())["session"] == .null)
        let login = try h.server.login("bob")
        let good = try h.run("sl-login", ["--with-token"], stdin: Array(login.token.utf8))
        #expect(good.status == 0)
        #expect(try h.run("sl-login", ["token"]).stdoutText == login.token + "\n")
        #expect(!good.stdoutText.contains(login.token))
    }

    @Test func deviceFlowWithSlowDown() throws {
        let h = try harness(["--auto-approve", "carol", "--device-interval", "0", "--device-slow-down", "1"])
        let r = try h.run("sl-login", ["--device"])
        #expect(r.status == 0, "\(r.stderrText)")
        #expect(r.stderrText.contains("enter the code"))
        #expect(try r.json()["session"]?["user"]?.stringValue == "carol")
        // One slow_down answer, then the client waited the longer interval and polled once more.
        #expect(try h.counter("POST /oauth/token") == 2)
    }

    @Test func loopbackLoginDrivenByARealHTTPClient() throws {
        let h = try harness()
        // sl-login prints the URL (--no-browser); a client follows it: the form, the redirect to the loopback
        // callback (after a stray /favicon.ico, which must be ignored).
        let script = h.loopbackLoginScript(
            user: "bob",
            callback: """
                curl -s -o /dev/null "$(echo "$loc" | sed 's#/callback.*#/favicon.ico#')" || true
                curl -s "$loc"
                """)
        let run = try Tools.shell(script)
        #expect(run.stdoutText.contains("You can close this tab"), "\(run.stdoutText)")
        #expect(run.stdoutText.contains("exit=0"))
        #expect((try h.status())["session"]?["user"]?.stringValue == "bob")
    }

    @Test(
        """
        --browser launches $BROWSER (a colon-separated list, %s = the URL) whose client completes the loopback login; \
        its stdout never reaches ours
        """)
    func browserModeLaunchesBrowserFromEnvironment() throws {
        let h = try harness()
        let dir = h.home
        let browser = dir.file("browser.sh")
        // The "browser": records its arguments, says something on stdout, and signs in as a real client would.
        let script = """
            #!/bin/sh
            printf '%s\\n' "$#" "$1" > '\(dir.path)/browser.args'
            echo 'browser noise on stdout'
            # It is handed a private page (file://…) that forwards to the authorize URL, as a browser follows it.
            url=$(sed -n 's/.*http-equiv="refresh" content="0;url=\\([^"]*\\)".*/\\1/p' "$(printf '%s' "$1" | sed 's|^file://||')" | sed 's/&amp;/\\&/g')
            (
            \(h.approveInShell(url: #""$url""#, user: "bob"))
            curl -s "$loc" > '\(dir.path)/browser.page'
            ) > /dev/null 2>&1 &
            """
        try Data(script.utf8).write(to: URL(fileURLWithPath: browser))
        // Run through sh rather than exec'ed itself: a file this multithreaded test process just wrote can still
        // be open in a child another test is forking (ETXTBSY on exec). The quotes exercise $BROWSER's quoting.
        // --pending-ttl bounds the wait should the browser never call back.
        let run = try h.run(
            "sl-login", ["--browser", "--pending-ttl", "60"],
            environment: ["BROWSER": "/nonexistent/browser:sh '\(browser)' %s"])
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(try run.json()["session"]?["user"]?.stringValue == "bob", "stdout is one JSON document: \(run.stdoutText)")
        #expect(run.stderrText.contains("browser noise on stdout"), "the browser's stdout goes to stderr")
        #expect(run.stderrText.contains("opened the browser"))
        let args = String(decoding: dir.read("browser.args"), as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(args.first == "1", "the URL is one argument: \(args)")
        #expect(args.dropFirst().first?.hasPrefix("file://" + h.home.path + "/starline/run/sign-in-") == true, "\(args)")
        // sl-login may exit before the browser's curl has written the page it was served.
        let page = try Tools.shell(
            "for i in $(seq 100); do [ -s '\(dir.path)/browser.page' ] && break; sleep 0.1; done; cat '\(dir.path)/browser.page'")
        #expect(page.stdoutText.contains("You can close this tab"), "\(page.stdoutText)")
        #expect((try h.status())["session"]?["user"]?.stringValue == "bob")
    }
}
