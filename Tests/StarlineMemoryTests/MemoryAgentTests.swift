import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
@testable import StarlineMemory
import StarlineTestSupport
import Testing

@Suite("Memory unlock agent: serving, status, stop, expiry")
final class MemoryAgentTests: @unchecked Sendable {
    let fixture: AgentFixture
    init() throws { fixture = try AgentFixture() }

    @Test("the client fetches the key the agent holds, as often as asked; the socket is private")
    func fetchesTheKey() throws {
        let key = AgentFixture.randomKey()
        let server = try fixture.serve(key)
        #expect(server.socketPath == fixture.socketDirectory + "/memory-agent-\(fixture.vaultID).sock")
        for _ in 0..<3 {
            let fetched = try #require(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment))
            #expect(fetched == key)
            #expect(fetched.count == 32)
        }
        #expect(permissionBits(fixture.socketDirectory) == 0o700)
        var info = stat()
        #expect(lstat(server.socketPath, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFSOCK)
        #expect(info.st_mode & 0o077 == 0)
    }

    @Test("the same vault served from a real database key: MemoryVault.open(dataKey:) opens with what the agent returns")
    func servesAVaultKey() throws {
        let vaultFixture = try VaultFixture()
        let vault = try vaultFixture.create()
        let note = try vault.add(NoteDraft(title: "t", body: "agent-served"))
        // The id that names the agent is readable before there is a key.
        #expect(try MemoryVault.vaultID(at: vaultFixture.location) == vault.vaultID)
        #expect(
            starlineError {
                _ = try MemoryVault.vaultID(at: VaultLocation(directory: self.fixture.dir + "/none", pinPath: self.fixture.dir + "/pin"))
            }?.code == .vaultNotFound)
        let server = try MemoryAgentServer(
            vaultID: vault.vaultID, key: vault.dataKey, ttl: nil, idle: nil, environment: fixture.environment)
        let thread = startThread { _ = server.run() }
        defer { server.stop(); thread.wait() }
        let key = try #require(try MemoryAgentClient.fetchKey(vaultID: vault.vaultID, environment: fixture.environment))
        let reopened = try MemoryVault.open(at: vaultFixture.location, dataKey: key)
        #expect(try reopened.show(note.id).body == "agent-served")
    }

    @Test("no agent is nil, not an error: no directory, no socket, another vault's id")
    func noAgent() throws {
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == nil)
        #expect(try MemoryAgentClient.status(vaultID: fixture.vaultID, environment: fixture.environment) == nil)
        #expect(try MemoryAgentClient.stop(vaultID: fixture.vaultID, environment: fixture.environment) == false)
        try fixture.serve(AgentFixture.randomKey())
        #expect(try MemoryAgentClient.fetchKey(vaultID: AgentFixture.randomVaultID(), environment: fixture.environment) == nil)
        // Not a vault id (it names a file): refused before anything is looked up.
        #expect(
            starlineError { _ = try MemoryAgentClient.fetchKey(vaultID: "../x", environment: self.fixture.environment) }?.code == .usage)
        #expect(
            starlineError { _ = try MemoryAgentClient.fetchKey(vaultID: "ABCD", environment: self.fixture.environment) }?.code == .usage)
    }

    @Test("an agent asked for another vault's key refuses it (WRONG_KEY), and still serves its own")
    func wrongVaultRefused() throws {
        let key = AgentFixture.randomKey()
        let server = try fixture.serve(key)
        // The only way to ask this agent for another vault: its socket under the other vault's name.
        let other = AgentFixture.randomVaultID()
        let otherPath = MemoryAgentClient.socketPath(vaultID: other, environment: fixture.environment)
        #expect(link(server.socketPath, otherPath) == 0)
        let error = starlineError { _ = try MemoryAgentClient.fetchKey(vaultID: other, environment: self.fixture.environment) }
        #expect(error?.code == .wrongKey)
        #expect(error?.details?["agentCode"]?.stringValue == "WRONG_VAULT")
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == key)
        // And on the wire: the refusal carries no key bytes.
        let raw = try #require(rawExchange(server.socketPath, Array("KEY \(other)\n".utf8)))
        #expect(raw.hasPrefix("ERR WRONG_VAULT "))
        let hex = String(decoding: AgentWire.keyReply(key)[3..<67], as: UTF8.self)
        #expect(!raw.contains(hex))
    }

    @Test("STATUS: pid, vault id, start, absolute and idle expiry (null when not set)")
    func statusFields() throws {
        let manual = ManualClock()
        try fixture.serve(AgentFixture.randomKey(), ttl: .seconds(3600), idle: .seconds(600), clock: manual.clock)
        let status = try #require(try MemoryAgentClient.status(vaultID: fixture.vaultID, environment: fixture.environment))
        #expect(status.pid == getpid())
        #expect(status.vaultID == fixture.vaultID)
        #expect(status.startedAt == ManualClock.wall)
        #expect(status.expiresAt == ManualClock.wall + 3600)
        #expect(status.idleExpiresAt == ManualClock.wall + 600)
        // The idle deadline moves with each key served, not with STATUS.
        manual.advance(.seconds(100))
        #expect(
            try MemoryAgentClient.status(vaultID: fixture.vaultID, environment: fixture.environment)?.idleExpiresAt == ManualClock.wall
                + 600)
        _ = try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment)
        #expect(
            try MemoryAgentClient.status(vaultID: fixture.vaultID, environment: fixture.environment)?.idleExpiresAt == ManualClock.wall
                + 700)

        // The wire format, as scripts see it.
        let raw = try #require(rawExchange(fixture.socketPath, Array("STATUS\n".utf8)))
        #expect(raw.hasPrefix("OK {") && raw.hasSuffix("}\n"))
        let json = try JSON.parse(String(raw.dropFirst(3)))
        #expect(json.objectValue?.map(\.0) == ["pid", "vaultId", "startedAt", "expiresAt", "idleExpiresAt"])
        #expect(json["startedAt"]?.stringValue == "2027-01-15T08:00:00Z")
        #expect(json["expiresAt"]?.stringValue == "2027-01-15T09:00:00Z")

        let plain = try AgentFixture()
        try plain.serve(AgentFixture.randomKey())
        let untimed = try #require(try MemoryAgentClient.status(vaultID: plain.vaultID, environment: plain.environment))
        #expect(untimed.expiresAt == nil)
        #expect(untimed.idleExpiresAt == nil)
    }

    @Test("STOP: the socket is gone and the key freed before the reply; the agent ends; a second stop finds none")
    func stopWipesAndEnds() throws {
        var key: SecretBytes? = AgentFixture.randomKey()
        weak let weakKey = key
        let server = try fixture.serve(key!)
        key = nil
        #expect(weakKey != nil)
        #expect(server.holdsKey)
        #expect(try MemoryAgentClient.stop(vaultID: fixture.vaultID, environment: fixture.environment))
        // By the time stop returned: no socket file, so the next unlock can bind at once.
        #expect(access(server.socketPath, F_OK) != 0)
        #expect(server.waitUntilEnded(timeout: .seconds(10)) == .stopRequested)
        #expect(!server.holdsKey)
        // The agent held the last reference: the SecretBytes was freed, which zeroes it (sodium_free).
        #expect(weakKey == nil)
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == nil)
        #expect(try MemoryAgentClient.stop(vaultID: fixture.vaultID, environment: fixture.environment) == false)
    }

    @Test("stop() from another thread (a signal, in the detached agent) ends it the same way")
    func stopFromAnotherThread() throws {
        let server = try fixture.serve(AgentFixture.randomKey())
        server.stop()
        #expect(server.waitUntilEnded(timeout: .seconds(10)) == .stopped)
        #expect(!server.holdsKey)
        #expect(access(server.socketPath, F_OK) != 0)
    }

    @Test("--ttl: serves before, then expires on its own: key dropped, socket unlinked (real clock, 300 ms)")
    func ttlExpires() throws {
        let key = AgentFixture.randomKey()
        let server = try fixture.serve(key, ttl: .milliseconds(300))
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == key)
        #expect(eventually(seconds: 10) { server.end != nil })
        #expect(server.end == .ttlExpired)
        #expect(!server.holdsKey)
        #expect(access(server.socketPath, F_OK) != 0)
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == nil)
    }

    @Test("--idle: expires when no key was asked for (real clock, 200 ms)")
    func idleExpires() throws {
        let server = try fixture.serve(AgentFixture.randomKey(), idle: .milliseconds(200))
        #expect(eventually(seconds: 10) { server.end != nil })
        #expect(server.end == .idleExpired)
        #expect(!server.holdsKey)
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == nil)
    }

    @Test("--idle counts from the last key served; --ttl is absolute whatever is served (manual clock)")
    func idleResetsTTLDoesNot() throws {
        let manual = ManualClock()
        let key = AgentFixture.randomKey()
        let server = try fixture.serve(key, ttl: .seconds(100), idle: .seconds(30), clock: manual.clock)
        // 29 s, 58 s, 87 s: each within 30 s of the last key served, though past 30 s since the start.
        for _ in 0..<3 {
            manual.advance(.seconds(29))
            #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == key)
        }
        // At 116 s the last key was served 29 s ago, but the absolute 100 s have passed.
        manual.advance(.seconds(29))
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == nil)
        #expect(server.waitUntilEnded(timeout: .seconds(10)) == .ttlExpired)

        let idleFixture = try AgentFixture()
        let idleServer = try idleFixture.serve(key, idle: .seconds(30), clock: manual.clock)
        // STATUS does not keep it alive.
        manual.advance(.seconds(20))
        _ = try MemoryAgentClient.status(vaultID: idleFixture.vaultID, environment: idleFixture.environment)
        manual.advance(.seconds(11))
        // A connection that arrives after the deadline is not served, even before the agent's poll wakes up.
        #expect(try MemoryAgentClient.fetchKey(vaultID: idleFixture.vaultID, environment: idleFixture.environment) == nil)
        #expect(idleServer.waitUntilEnded(timeout: .seconds(10)) == .idleExpired)
    }

    @Test("bad requests: unknown, overlong, silent past the 1 s deadline — answered ERR, and the agent serves on")
    func badRequests() throws {
        let key = AgentFixture.randomKey()
        let server = try fixture.serve(key)
        #expect(rawExchange(server.socketPath, Array("HELLO\n".utf8))?.hasPrefix("ERR BAD_REQUEST ") == true)
        #expect(rawExchange(server.socketPath, Array("KEY \n".utf8))?.hasPrefix("ERR BAD_REQUEST ") == true)
        #expect(rawExchange(server.socketPath, [UInt8](repeating: UInt8(ascii: "K"), count: 1000))?.hasPrefix("ERR BAD_REQUEST ") == true)
        // A peer that connects and says nothing holds the agent up for the deadline at most.
        let silent = startThread { _ = rawExchange(server.socketPath, []) }
        usleep(50_000)
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == key)
        silent.wait()
    }

    @Test("a stale socket (its agent died) is nil for the client and replaced by the next agent; a live one is CONFLICT")
    func staleSocketReplaced() throws {
        precondition(mkdir(fixture.socketDirectory, 0o700) == 0)
        // A socket bound and closed: the file stays, nobody listens (ECONNREFUSED).
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(fixture.socketPath.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) {
            $0.copyBytes(from: bytes); $0[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        close(fd)
        #expect(access(fixture.socketPath, F_OK) == 0)
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == nil)

        let key = AgentFixture.randomKey()
        try fixture.serve(key)
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == key)
        // A second agent for the same vault does not take a live agent's socket.
        let error = starlineError {
            _ = try MemoryAgentServer(
                vaultID: self.fixture.vaultID, key: key, ttl: nil, idle: nil,
                environment: self.fixture.environment)
        }
        #expect(error?.code == .conflict)
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == key)
    }

    @Test("a file or a symbolic link where the socket belongs is refused and left alone, never followed")
    func nonSocketEntriesRefused() throws {
        precondition(mkdir(fixture.socketDirectory, 0o700) == 0)
        let target = fixture.dir + "/target"
        #expect(FileManager.default.createFile(atPath: target, contents: Data("precious".utf8)))
        #expect(symlink(target, fixture.socketPath) == 0)
        let linked = starlineError {
            _ = try MemoryAgentServer(
                vaultID: self.fixture.vaultID, key: AgentFixture.randomKey(), ttl: nil, idle: nil,
                environment: self.fixture.environment)
        }
        #expect(linked?.code == .storage)
        #expect(linked?.message.contains("symbolic link") == true)
        #expect(
            starlineError { _ = try MemoryAgentClient.fetchKey(vaultID: self.fixture.vaultID, environment: self.fixture.environment) }?.code
                == .storage)
        #expect(PrivateFiles.isSymbolicLink(fixture.socketPath))
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "precious")

        unlink(fixture.socketPath)
        #expect(FileManager.default.createFile(atPath: fixture.socketPath, contents: Data("file".utf8)))
        let file = starlineError {
            _ = try MemoryAgentServer(
                vaultID: self.fixture.vaultID, key: AgentFixture.randomKey(), ttl: nil, idle: nil,
                environment: self.fixture.environment)
        }
        #expect(file?.code == .storage)
        #expect(try String(contentsOfFile: fixture.socketPath, encoding: .utf8) == "file")
    }

    @Test("invalid ttl and idle are USAGE")
    func invalidDurations() throws {
        for (ttl, idle) in [(Duration.zero, nil), (nil, Duration.seconds(-1))] as [(Duration?, Duration?)] {
            let error = starlineError {
                _ = try MemoryAgentServer(
                    vaultID: self.fixture.vaultID, key: AgentFixture.randomKey(), ttl: ttl, idle: idle,
                    environment: self.fixture.environment)
            }
            #expect(error?.code == .usage)
        }
    }

    @Test("the wire's key encoding round-trips into protected memory and rejects what is not hex")
    func keyEncoding() throws {
        let key = AgentFixture.randomKey()
        let reply = AgentWire.keyReply(key)
        #expect(reply.prefix(3) == Array("OK ".utf8)[...])
        #expect(reply.last == UInt8(ascii: "\n"))
        #expect(AgentWire.decodeKey(reply[3..<(reply.count - 1)]) == key)
        #expect(AgentWire.decodeKey(Array("0g".utf8)[...]) == nil)
        #expect(AgentWire.decodeKey(Array("abc".utf8)[...]) == nil)
        #expect(AgentWire.decodeKey([][...]) == nil)
        #expect(AgentWire.decodeKey(Array("00FFa0".utf8)[...])?.copyBytes() == [0x00, 0xFF, 0xA0])
    }
}
