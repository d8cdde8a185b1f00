import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
import StarlineKeyring
import StarlineTestSupport
import Testing

/// One private Secret Service for the whole process: GLib connects to the session bus once per process
/// and keeps that connection, so DBUS_SESSION_BUS_ADDRESS is set before the first libsecret call and the
/// keyring lives as long as the process (its reaper ends the daemons when the process goes).
enum SharedKeyring {
    static let started: Result<TestKeyring, any Error> = {
        do {
            let keyring = try TestKeyring(runAs: .testProcess)
            setenv("DBUS_SESSION_BUS_ADDRESS", keyring.address, 1)
            return .success(keyring)
        } catch {
            return .failure(error)
        }
    }()

    /// The keyring, unlocked (a test that locked it and failed may have left it locked).
    static func unlocked() throws -> TestKeyring {
        let keyring = try started.get()
        try keyring.unlock()
        return keyring
    }
}

func uniqueAttributes(_ test: String) -> [String: String] {
    ["starline-test": test, "run": UUID().uuidString]
}

func secretBytes(_ lookup: KeyringLookup) -> [UInt8]? {
    if case .found(let secret) = lookup { return secret.copyBytes() }
    return nil
}

func isAbsent(_ lookup: KeyringLookup) -> Bool { if case .absent = lookup { true } else { false } }
func isLocked(_ lookup: KeyringLookup) -> Bool { if case .locked = lookup { true } else { false } }

/// The StarlineError `body` throws; nil (and a recorded failure) when it does not throw one.
func thrown(_ body: () throws -> Void) -> StarlineError? {
    do {
        try body()
        Issue.record("expected an error")
        return nil
    } catch {
        if let error = error as? StarlineError { return error }
        Issue.record("not a StarlineError: \(error)")
        return nil
    }
}

@Suite("SecretServiceKeyring against a private gnome-keyring", .serialized)
struct SecretServiceKeyringTests {
    @Test("store, then lookup finds the same bytes, and secret-tool reads them from the real keyring")
    func storeThenLookup() throws {
        let testKeyring = try SharedKeyring.unlocked()
        let keyring = try SecretServiceKeyring.open(environment: testKeyring.environment)
        let attributes = uniqueAttributes("roundtrip")
        let secret = SecretBytes(count: 32)
        try keyring.store(secret: secret, label: "Starline test key", attributes: attributes)
        #expect(secretBytes(try keyring.lookup(attributes: attributes)) == secret.copyBytes())
        // secret-tool searches with attributes only (no schema), so it sees our item, xdg:schema and all.
        let tool = try testKeyring.run("/usr/bin/secret-tool", ["lookup", "starline-test", "roundtrip", "run", attributes["run"]!])
        #expect(tool.status == 0)
        #expect(tool.stdout == secret.copyBytes())
        #expect(try keyring.delete(attributes: attributes) == .deleted(1))
    }

    @Test("lookup of attributes nobody stored is absent; so is an item with them from another schema")
    func absent() throws {
        let testKeyring = try SharedKeyring.unlocked()
        let keyring = try SecretServiceKeyring.open(environment: testKeyring.environment)
        let attributes = uniqueAttributes("absent")
        #expect(isAbsent(try keyring.lookup(attributes: attributes)))
        #expect(try keyring.delete(attributes: attributes) == .absent)
        // secret-tool stores the same attributes without our xdg:schema: not ours, so not found.
        let stored = try testKeyring.run(
            "/usr/bin/secret-tool", ["store", "--label=foreign", "starline-test", "absent", "run", attributes["run"]!],
            stdin: Array("foreign".utf8))
        #expect(stored.status == 0)
        #expect(isAbsent(try keyring.lookup(attributes: attributes)))
        #expect(try keyring.delete(attributes: attributes) == .absent)
    }

    @Test("a second store with the same attributes replaces the item (one item, the new bytes)")
    func replace() throws {
        let keyring = try SecretServiceKeyring.open(environment: try SharedKeyring.unlocked().environment)
        let attributes = uniqueAttributes("replace")
        try keyring.store(secret: SecretBytes(copying: Array("first".utf8)), label: "first", attributes: attributes)
        try keyring.store(secret: SecretBytes(copying: Array("second".utf8)), label: "second", attributes: attributes)
        #expect(secretBytes(try keyring.lookup(attributes: attributes)) == Array("second".utf8))
        #expect(try keyring.delete(attributes: attributes) == .deleted(1))
    }

    @Test("delete removes the item: lookup is absent afterwards, and a second delete finds nothing")
    func deleteThenAbsent() throws {
        let keyring = try SecretServiceKeyring.open(environment: try SharedKeyring.unlocked().environment)
        let attributes = uniqueAttributes("delete")
        try keyring.store(secret: SecretBytes(copying: [0, 1, 2, 0xFF]), label: "delete me", attributes: attributes)
        #expect(secretBytes(try keyring.lookup(attributes: attributes)) == [0, 1, 2, 0xFF])
        #expect(try keyring.delete(attributes: attributes) == .deleted(1))
        #expect(isAbsent(try keyring.lookup(attributes: attributes)))
        #expect(try keyring.delete(attributes: attributes) == .absent)
    }

    @Test(
        """
        S17 locked: lookup says .locked at once without prompting, store is STORAGE_LOCKED (exit 10), delete leaves \
        the item; unlocked, it is found again
        """)
    func lockedThenUnlocked() throws {
        let testKeyring = try SharedKeyring.unlocked()
        let keyring = try SecretServiceKeyring.open(environment: testKeyring.environment)
        let attributes = uniqueAttributes("locked")
        let secret = SecretBytes(count: 32)
        try keyring.store(secret: secret, label: "locked test", attributes: attributes)
        try testKeyring.lock()
        #expect(try testKeyring.isLocked())
        let prompts = testKeyring.promptCount

        let started = MonotonicClock.nanoseconds()
        #expect(isLocked(try keyring.lookup(attributes: attributes)))
        #expect(MonotonicClock.nanoseconds() - started < 3_000_000_000)
        let error = thrown { try keyring.store(secret: SecretBytes(count: 32), label: "while locked", attributes: attributes) }
        #expect(error?.code == .storageLocked)
        #expect(error?.exitStatus == .storage)
        #expect(error?.message.contains("locked") == true)
        #expect(try keyring.delete(attributes: attributes) == .locked)
        #expect(testKeyring.promptCount == prompts, "nothing may ask gnome-keyring for a prompt")
        #expect(try testKeyring.isLocked(), "nothing may unlock the keyring")

        // The detector works: secret-tool (secret_service_lookup_sync, which unlocks) does try to prompt.
        let tool = try testKeyring.run("/usr/bin/secret-tool", ["lookup", "starline-test", "locked", "run", attributes["run"]!])
        #expect(tool.status != 0)
        #expect(testKeyring.promptCount > prompts)

        try testKeyring.unlock()
        #expect(try testKeyring.isLocked() == false)
        #expect(secretBytes(try keyring.lookup(attributes: attributes)) == secret.copyBytes(), "the store while locked changed nothing")
        #expect(try keyring.delete(attributes: attributes) == .deleted(1))
    }

    @Test("the control-socket unlock refuses a wrong password (so unlock() really unlocks)")
    func wrongUnlockPassword() throws {
        let testKeyring = try SharedKeyring.unlocked()
        try testKeyring.lock()
        #expect(throws: StarlineError.self) { try testKeyring.unlock(password: "not the password") }
        #expect(try testKeyring.isLocked())
        try testKeyring.unlock()
        #expect(try testKeyring.isLocked() == false)
    }

    @Test("a wedged daemon (SIGSTOP) gives a retryable KEYRING_UNAVAILABLE within the bound, not a hang")
    func wedgedDaemon() throws {
        let testKeyring = try SharedKeyring.unlocked()
        let keyring = try SecretServiceKeyring.open(environment: testKeyring.environment, timeout: .seconds(1))
        let attributes = uniqueAttributes("wedged")
        try keyring.store(secret: SecretBytes(copying: Array("w".utf8)), label: "wedged", attributes: attributes)
        let pid = try #require(testKeyring.daemonPID)
        kill(pid, SIGSTOP)
        let started = MonotonicClock.nanoseconds()
        let error = thrown { _ = try keyring.lookup(attributes: attributes) }
        let elapsed = MonotonicClock.nanoseconds() - started
        kill(pid, SIGCONT)
        #expect(error?.code == .keyringUnavailable)
        #expect(error?.retryable == true)
        #expect(error?.message.contains("did not answer within 1 s") == true)
        #expect(elapsed >= 900_000_000 && elapsed < 5_000_000_000, "elapsed \(elapsed) ns")
        // Once the daemon runs again, the same object works.
        #expect(secretBytes(try keyring.lookup(attributes: attributes)) == Array("w".utf8))
        #expect(try keyring.delete(attributes: attributes) == .deleted(1))
    }

    @Test("another machine's keyring (a second gnome-keyring on its own bus) does not see our item")
    func secondMachine() throws {
        let testKeyring = try SharedKeyring.unlocked()
        let keyring = try SecretServiceKeyring.open(environment: testKeyring.environment)
        let attributes = uniqueAttributes("machine")
        try keyring.store(secret: SecretBytes(copying: Array("mine".utf8)), label: "machine", attributes: attributes)
        // This process's GLib is bound to the first bus, so the other machine is asked by another process.
        let other = try TestKeyring(password: "another-machine", runAs: .testProcess)
        let query = ["lookup", "starline-test", "machine", "run", attributes["run"]!]
        let there = try other.run("/usr/bin/secret-tool", query)
        #expect(there.status == 1)
        #expect(there.stdout.isEmpty)
        #expect(other.promptCount == 0)
        let here = try testKeyring.run("/usr/bin/secret-tool", query)
        #expect(here.status == 0)
        #expect(here.stdoutText == "mine")
        other.stop()
        #expect(try keyring.delete(attributes: attributes) == .deleted(1))
    }

    @Test("no DBUS_SESSION_BUS_ADDRESS: KEYRING_UNAVAILABLE (exit 10) at once, suggesting --no-keyring")
    func noSessionBus() throws {
        let error = thrown { _ = try SecretServiceKeyring.open(environment: ["HOME": "/nonexistent"]) }
        #expect(error?.code == .keyringUnavailable)
        #expect(error?.exitStatus == .storage)
        #expect(error?.message.contains("--no-keyring") == true)
        #expect(error?.message.contains("DBUS_SESSION_BUS_ADDRESS") == true)
        let empty = thrown { _ = try SecretServiceKeyring.open(environment: ["DBUS_SESSION_BUS_ADDRESS": ""]) }
        #expect(empty?.code == .keyringUnavailable)
    }

    @Test("an environment naming another bus than the process's (which GLib uses) is refused")
    func otherBus() throws {
        _ = try SharedKeyring.unlocked()
        let error = thrown { _ = try SecretServiceKeyring.open(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"]) }
        #expect(error?.code == .keyringUnavailable)
        #expect(error?.message.contains("--no-keyring") == true)
    }

    @Test("attributes are checked before any D-Bus call: none, too many, or xdg: names are usage errors")
    func badAttributes() throws {
        let keyring = try SecretServiceKeyring.open(environment: try SharedKeyring.unlocked().environment)
        #expect(thrown { _ = try keyring.lookup(attributes: [:]) }?.code == .usage)
        #expect(thrown { _ = try keyring.lookup(attributes: ["xdg:schema": "x"]) }?.code == .usage)
        let many = Dictionary(uniqueKeysWithValues: (0..<33).map { ("a\($0)", "v") })
        #expect(thrown { _ = try keyring.delete(attributes: many) }?.code == .usage)
    }
}
