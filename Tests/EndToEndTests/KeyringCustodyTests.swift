import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// S3: the session store's key in a real Secret Service — a private D-Bus session bus and
/// gnome-keyring-daemon per test (`TestKeyring`), sl-login/sl-restore against a real sl-devserver.
@Suite struct KeyringCustodyTests {
    /// A harness whose tools talk to `keyring`'s bus.
    func harness(_ keyring: TestKeyring) throws -> SessionToolsHarness {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        h.extraEnvironment = keyring.environment
        return h
    }

    /// Signs `user` in with `sl-login --with-token` plus `arguments`.
    @discardableResult
    func login(_ h: SessionToolsHarness, _ user: String, _ arguments: [String] = ["--keyring"], environment: [String: String] = [:]) throws
        -> ToolRun
    {
        let token = try h.server.login(user).token
        return try h.run("sl-login", ["--with-token"] + arguments, stdin: Array(token.utf8), environment: environment)
    }

    func custody(_ h: SessionToolsHarness) throws -> JSON? { try h.status()["storage"]?["custody"] }

    /// The items of our session schema in `keyring` whose `item` attribute is `item` (secret-tool, unlocked).
    func keyringItems(_ keyring: TestKeyring, item: String) throws -> Int {
        let run = try keyring.run("/usr/bin/secret-tool", ["search", "--all", "xdg:schema", "cn.thestarline.Session", "item", item])
        return run.stdoutText.components(separatedBy: "\n").filter { $0.hasPrefix("[/") }.count
    }

    @Test(
        """
        S3 with --keyring the sealing key is a keyring item: restore works, no device.key is made, status names the \
        custodian
        """)
    func s3KeyringLoginRestore() throws {
        let keyring = try TestKeyring()
        let h = try harness(keyring)
        let login = try login(h, "bob")
        #expect(login.status == 0, "\(login.stderrText)")
        let restored = try h.restore()
        #expect(restored.status == 0 && restored.state == "valid")
        let custody = try custody(h)
        #expect(custody?["custodian"]?.stringValue == "keyring")
        #expect(custody?["keyring"]?.stringValue == "unlocked")
        let item = try #require(custody?["keyringItem"]?.stringValue)
        #expect(try keyringItems(keyring, item: item) == 1)
        #expect(!FileManager.default.fileExists(atPath: h.home.file("starline/state/device.key")), "the file custodian was not used")
        #expect(keyring.promptCount == 0)
    }

    @Test(
        """
        S17 a locked keyring: restore reports keptUnverified with STORAGE_LOCKED (exit 10), prompts nobody and clears \
        nothing; unlocked, it is valid again
        """)
    func s17LockedThenUnlocked() throws {
        let keyring = try TestKeyring()
        let h = try harness(keyring)
        #expect(try login(h, "bob").status == 0)
        try keyring.lock()
        #expect(try keyring.isLocked())
        let locked = try h.restore()
        #expect(locked.status == 10)
        #expect(locked.state == "keptUnverified")
        #expect(locked.result?["reason"]?.stringValue == "storageLocked")
        #expect(locked.run.errorCode == "STORAGE_LOCKED")
        #expect(keyring.promptCount == 0, "nothing asked the keyring to unlock")
        // status reads clear columns only: the session is still there, and the keyring is reported locked.
        let status = try h.status()
        #expect(status["session"]?["user"]?.stringValue == "bob")
        #expect(status["storage"]?["custody"]?["keyring"]?.stringValue == "locked")
        try keyring.unlock()
        let again = try h.restore()
        #expect(again.status == 0 && again.state == "valid")
    }

    @Test(
        """
        S3 a state directory copied to another machine (another keyring) does not open there, and the original still \
        does
        """)
    func s3CopiedStateDirectory() throws {
        let first = try TestKeyring()
        let h = try harness(first)
        #expect(try login(h, "bob").status == 0)
        let other = try TestKeyring()
        let copy = try SessionToolsHarness(server: h.server)
        copy.extraEnvironment = other.environment
        let cp = try Tools.shell(
            "mkdir -p '\(copy.home.path)/starline' && cp -a '\(h.home.path)/starline/state' '\(copy.home.path)/starline/' && cp '\(h.home.file("machine-id"))' '\(copy.home.file("machine-id"))'"
        )
        #expect(cp.status == 0)
        let elsewhere = try copy.restore()
        #expect(elsewhere.status == 10)
        #expect(elsewhere.state == "keptUnverified")
        #expect(elsewhere.run.errorCode == "STORAGE_ERROR")
        #expect(elsewhere.run.stderrText.contains("keyring has no key"))
        #expect(try h.restore().state == "valid")
    }

    @Test("S11 logout revokes the session and deletes its keyring item")
    func s11LogoutDeletesTheItem() throws {
        let keyring = try TestKeyring()
        let h = try harness(keyring)
        #expect(try login(h, "bob").status == 0)
        let item = try #require(try custody(h)?["keyringItem"]?.stringValue)
        #expect(try keyringItems(keyring, item: item) == 1)
        let logout = try h.run("sl-login", ["logout"])
        #expect(logout.status == 0, "\(logout.stderrText)")
        #expect(try keyringItems(keyring, item: item) == 0)
        let custody = try custody(h)
        #expect(custody?["keyringItem"] == .null)
        #expect(custody?["orphanItems"]?.arrayValue?.isEmpty == true)
        #expect(try h.restore().state == "absent")
    }

    @Test(
        """
        S13 a keyring delete that fails (locked) is STORAGE_ERROR, the item is kept as an orphan, and sl-login clear \
        retries it once unlocked
        """)
    func s13FailedKeyringDelete() throws {
        let keyring = try TestKeyring()
        let h = try harness(keyring)
        #expect(try login(h, "bob").status == 0)
        let item = try #require(try custody(h)?["keyringItem"]?.stringValue)
        try keyring.lock()
        let clear = try h.run("sl-login", ["clear"])
        #expect(clear.status == 10)
        #expect(clear.errorCode == "STORAGE_ERROR")
        #expect(clear.stderrText.contains("could not be removed from the keyring"))
        #expect(try h.status()["session"] == .null, "the session itself is gone")
        #expect(try custody(h)?["orphanItems"]?.arrayValue?.compactMap(\.stringValue) == [item])
        try keyring.unlock()
        #expect(try keyringItems(keyring, item: item) == 1, "the failed delete left it")
        let retry = try h.run("sl-login", ["clear"])
        #expect(retry.status == 0, "\(retry.stderrText)")
        #expect(try keyringItems(keyring, item: item) == 0)
        #expect(try custody(h)?["orphanItems"]?.arrayValue?.isEmpty == true)
    }

    @Test(
        """
        S3 logout while the keyring is locked changes nothing (the token could not be revoked or kept); unlocked, \
        logout works
        """)
    func s3LockedLogoutChangesNothing() throws {
        let keyring = try TestKeyring()
        let h = try harness(keyring)
        #expect(try login(h, "bob").status == 0)
        try keyring.lock()
        let logout = try h.run("sl-login", ["logout"])
        #expect(logout.status == 10)
        #expect(logout.errorCode == "STORAGE_LOCKED")
        #expect(try h.status()["session"]?["user"]?.stringValue == "bob")
        try keyring.unlock()
        let again = try h.run("sl-login", ["logout"])
        #expect(again.status == 0, "\(again.stderrText)")
        #expect(try again.json()["revoked"] == .bool(true))
    }

    @Test(
        """
        no Secret Service: --keyring is KEYRING_UNAVAILABLE naming --no-keyring; a later run without the bus gets the \
        same error, never 'absent'
        """)
    func unavailableKeyring() throws {
        let keyring = try TestKeyring()
        let h = try harness(keyring)
        let noBus = try login(h, "bob", environment: ["DBUS_SESSION_BUS_ADDRESS": ""])
        #expect(noBus.status == 10)
        #expect(noBus.errorCode == "KEYRING_UNAVAILABLE")
        #expect(noBus.stderrText.contains("--no-keyring"))
        #expect(try login(h, "bob").status == 0)
        let cron = try h.restore(environment: ["DBUS_SESSION_BUS_ADDRESS": ""])
        #expect(cron.status == 10)
        #expect(cron.run.errorCode == "KEYRING_UNAVAILABLE")
        #expect(cron.state == "keptUnverified")
        #expect(try h.restore().state == "valid", "nothing was cleared")
    }

    @Test(
        """
        the custodian follows STARLINE_KEYRING, is recorded for later sign-ins, and moving back to the file deletes \
        the keyring item
        """)
    func custodianChoiceAndChange() throws {
        let keyring = try TestKeyring()
        let h = try harness(keyring)
        #expect(try login(h, "bob", [], environment: ["STARLINE_KEYRING": "maybe"]).status == 2)
        #expect(try login(h, "bob", [], environment: ["STARLINE_KEYRING": "yes"]).status == 0)
        let item = try #require(try custody(h)?["keyringItem"]?.stringValue)
        // A sign-in that does not choose keeps the recorded custodian (a cron re-login stays in the keyring).
        #expect(try login(h, "bob", []).status == 0)
        #expect(try custody(h)?["custodian"]?.stringValue == "keyring")
        #expect(try h.restore().state == "valid")
        let back = try login(h, "bob", ["--no-keyring"])
        #expect(back.status == 0, "\(back.stderrText)")
        #expect(try custody(h)?["custodian"]?.stringValue == "file")
        #expect(try keyringItems(keyring, item: item) == 0, "the old key left the keyring")
        #expect(FileManager.default.fileExists(atPath: h.home.file("starline/state/device.key")))
        #expect(try h.restore().state == "valid")
        #expect(try login(h, "bob", ["--keyring", "--no-keyring"]).status == 2)
    }
}
