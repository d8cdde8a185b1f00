import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// sl-memory's unlock agent and keyring custody, through the built executable (W2).
@Suite struct SLMemoryAgentTests {
    typealias Home = SLMemoryTests.Home

    /// The environment of a run that has no passphrase of its own.
    static let noPassphrase = ["STARLINE_MEMORY_PASSPHRASE": ""]

    @Test(
        """
        W2 unlock starts an agent: commands need no passphrase, status says until when, an explicit wrong passphrase \
        is still refused (13), lock ends it
        """)
    func w2AgentUnlockLock() throws {
        let h = Home()
        try h.initialize()
        try h.ok(["add", "agent note"])
        let unlock = try h.ok(["unlock", "--ttl", "10m", "--idle", "5m"])
        #expect(unlock["unlocked"] == .bool(true))
        let pid = try #require(unlock["agentPid"]?.intValue)
        #expect(kill(pid_t(pid), 0) == 0, "the agent runs")
        defer { _ = try? h.run(["lock"]) }
        #expect(try h.list(["list"], environment: Self.noPassphrase).count == 1)
        let status = try h.ok(["status"], environment: Self.noPassphrase)
        #expect(status["unlocked"] == .bool(true))
        #expect(status["agent"]?["pid"]?.intValue == pid)
        #expect(status["agent"]?["expiresAt"]?.stringValue != nil)
        let wrong = try h.run(["list"], environment: ["STARLINE_MEMORY_PASSPHRASE": "wrong"])
        #expect(wrong.status == 13, "an explicit passphrase is checked even while the agent runs")
        #expect(try h.ok(["lock"])["agentStopped"] == .bool(true))
        let locked = try h.run(["list"], environment: Self.noPassphrase)
        #expect(locked.status == 13)
        #expect(locked.errorCode == "LOCKED")
        #expect(try h.ok(["status"], environment: Self.noPassphrase)["unlocked"] == .bool(false))
    }

    @Test("W2 the running agent that holds the key is hardened: undumpable and RLIMIT_CORE 0 (read in /proc of the agent)")
    func w2AgentProcessHardening() throws {
        let h = Home()
        try h.initialize()
        let pid = try #require(try h.ok(["unlock", "--ttl", "10m"])["agentPid"]?.intValue)
        defer { _ = try? h.run(["lock"]) }
        let cmdline = String(decoding: FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data(), as: UTF8.self)
        #expect(cmdline.contains("--internal-memory-agent"), "pid \(pid) is the agent: \(cmdline)")
        let limits = (try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)) ?? ""
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }.map(String.init) ?? "(no limits)"
        #expect(core.split(separator: " ").dropFirst(4).prefix(2) == ["0", "0"], "\(core)")
        // An undumpable process's /proc files belong to root whoever runs it, a dumpable one's to its user: that
        // tells them apart only when the agent does not run as root (ToolUser).
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let uid = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }?.split(whereSeparator: \.isWhitespace).dropFirst().first
            .flatMap { UInt32($0) }
        try #require(uid != nil && uid != 0, "the agent runs as root here (uid \(String(describing: uid))): dumpable or not looks the same")
        var info = stat()
        #expect(stat("/proc/\(pid)/environ", &info) == 0)
        #expect(info.st_uid == 0, "the agent (uid \(uid ?? 0)) is undumpable")
    }

    @Test("W2 the agent ends at its --ttl: afterwards the vault is locked again")
    func w2AgentTTL() throws {
        let h = Home()
        try h.initialize()
        try h.ok(["unlock", "--ttl", "1"])
        defer { _ = try? h.run(["lock"]) }
        var locked = false
        for _ in 0..<100 where !locked {
            usleep(100_000)
            locked = try h.run(["list"], environment: Self.noPassphrase).status == 13
        }
        #expect(locked, "the agent stopped serving after its TTL")
        #expect(try h.ok(["status"], environment: Self.noPassphrase)["agent"] == .null)
    }

    @Test("W2 the agent's socket is in a 0700 directory of this user, and the key is not on disk")
    func w2AgentSocketAndNoKeyOnDisk() throws {
        let h = Home()
        try h.initialize()
        try h.ok(["unlock"])
        defer { _ = try? h.run(["lock"]) }
        let found = try Tools.shell("find '\(h.home.path)' '\(h.runtime.path)' -type s")
        let socket = try #require(found.stdoutText.split(separator: "\n").first.map(String.init))
        let directory = URL(fileURLWithPath: socket).deletingLastPathComponent().path
        var info = stat()
        #expect(stat(directory, &info) == 0)
        #expect(info.st_mode & 0o077 == 0 && info.st_uid == ToolUser.uid, "the directory of the user the tool ran as")
        // No file anywhere under the home or runtime directory holds the agent's key: a rekey-free vault's key
        // opens it, so look for any 32-byte file (the pin and markers are text).
        let files = try Tools.shell("find '\(h.home.path)' '\(h.runtime.path)' -type f -size 32c")
        #expect(files.stdoutText.isEmpty, "\(files.stdoutText)")
    }

    @Test("W2 rekey stops the agent (its key is the old one): commands need the passphrase again")
    func w2RekeyStopsTheAgent() throws {
        let h = Home()
        try h.initialize()
        try h.ok(["add", "x"])
        try h.ok(["unlock"])
        defer { _ = try? h.run(["lock"]) }
        try h.ok(["rekey"])
        #expect(try h.run(["list"], environment: Self.noPassphrase).status == 13)
        #expect(try h.list(["list"]).count == 1)
    }

    @Test(
        """
        W2 unlock --keyring keeps the data key in the keyring under its own schema; later runs need no passphrase, a \
        locked keyring is LOCKED without a prompt, lock --forget removes it
        """)
    func keyringCustodyOfTheMemoryKey() throws {
        let keyring = try TestKeyring()
        let h = Home()
        for (k, v) in keyring.environment { h.environment[k] = v }
        try h.initialize()
        try h.ok(["add", "kept in the keyring"])
        try h.ok(["unlock", "--keyring"])
        try h.ok(["lock"])  // the agent goes; the keyring keeps the key
        #expect(try h.list(["list"], environment: Self.noPassphrase).count == 1)
        #expect(try h.ok(["status"], environment: Self.noPassphrase)["keyring"]?.stringValue == "stored")
        let items = try keyring.run("/usr/bin/secret-tool", ["search", "--all", "xdg:schema", "cn.thestarline.Memory"])
        #expect(items.stdoutText.contains("[/"), "an item of the memory schema, apart from the session store's")
        try keyring.lock()
        let locked = try h.run(["list"], environment: Self.noPassphrase)
        #expect(locked.status == 13)
        #expect(keyring.promptCount == 0)
        try keyring.unlock()
        #expect(try h.ok(["lock", "--forget"])["keyringForgotten"] == .bool(true))
        #expect(try h.run(["list"], environment: Self.noPassphrase).status == 13)
        #expect(
            !(try keyring.run("/usr/bin/secret-tool", ["search", "--all", "xdg:schema", "cn.thestarline.Memory"]).stdoutText.contains("[/"))
        )
    }
}
