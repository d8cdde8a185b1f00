import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
@testable import StarlineMemory
import StarlineTestSupport
import Testing

/// The launcher's side of the start-up protocol, against `/bin/sh` children that play the agent (the real
/// agent is sl-memory itself, re-executed; its end-to-end test belongs to the front-end).
@Suite("Memory unlock agent: launcher protocol")
final class MemoryAgentLauncherTests: @unchecked Sendable {
    let fixture: AgentFixture
    init() throws { fixture = try AgentFixture() }

    /// Starts `/bin/sh -c script` as the agent; the script's $1 is the fixture's directory, then come the
    /// launcher's agent arguments.
    private func start(
        _ script: String, key: SecretBytes = AgentFixture.randomKey(), ttl: Duration? = nil, idle: Duration? = nil,
        readyTimeout: Duration = MemoryAgentLauncher.readyTimeout
    ) throws(StarlineError) -> pid_t {
        try MemoryAgentLauncher.start(
            key: key, vaultID: fixture.vaultID, ttl: ttl, idle: idle, environment: fixture.environment,
            executable: "/bin/sh", arguments: ["-c", script, "sh", fixture.dir], readyTimeout: readyTimeout)
    }

    private func reap(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    @Test(
        """
        ready: the pid comes back; the key went in on stdin only, the arguments carry the rest; the child has its own \
        session
        """)
    func readyLine() throws {
        let key = AgentFixture.randomKey()
        let script = #"""
            d=$1; shift
            cat > "$d/key"
            printf '%s\n' "$@" > "$d/args"
            echo "$$ $(cut -d' ' -f6 /proc/$$/stat)" > "$d/session"
            echo ready
            """#
        let pid = try start(script, key: key, ttl: .milliseconds(1500), idle: .seconds(90))
        #expect(pid > 0)
        #expect(reap(pid) == 0)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: fixture.dir + "/key"))) == key.copyBytes())
        let arguments = try String(contentsOfFile: fixture.dir + "/args", encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(
            arguments == ["--vault-id", fixture.vaultID, "--socket-dir", fixture.socketDirectory, "--ttl-ms", "1500", "--idle-ms", "90000"])
        let hex = String(decoding: AgentWire.keyReply(key)[3..<67], as: UTF8.self)
        #expect(!arguments.joined().contains(hex))
        // POSIX_SPAWN_SETSID: the session id is its own pid.
        let session = try String(contentsOfFile: fixture.dir + "/session", encoding: .utf8).split(whereSeparator: \.isWhitespace)
        #expect(session.count == 2 && session[0] == session[1])
        // What runAsDetachedAgent makes of those arguments.
        let options = try MemoryAgentServer.DetachedOptions(
            [MemoryAgentServer.detachedAgentArgument] + arguments, environment: fixture.environment)
        #expect(options.vaultID == fixture.vaultID)
        #expect(options.socketDirectory == fixture.socketDirectory)
        #expect(options.ttl == .milliseconds(1500))
        #expect(options.idle == .seconds(90))
    }

    @Test("an error line from the child is thrown as the child's error, with its exit status")
    func errorLine() throws {
        let script = #"""
            cat > /dev/null
            echo '{"error":{"code":"INSECURE_PERMISSIONS","message":"the directory is open to others","retryable":false,"details":{"path":"/x"}},"exit":10}'
            exit 10
            """#
        let error = starlineError { _ = try self.start(script) }
        #expect(error?.code == .insecurePermissions)
        #expect(error?.exitStatus == .storage)
        #expect(error?.message == "the directory is open to others")
        #expect(error?.details?["path"]?.stringValue == "/x")
    }

    @Test("a child that says nothing within the deadline is killed: TIMEOUT")
    func silentChildKilled() throws {
        let script = #"echo $$ > "$1/pid"; exec sleep 30"#
        let started = ContinuousClock.now
        let error = starlineError { _ = try self.start(script, readyTimeout: .milliseconds(300)) }
        #expect(error?.code == .timeout)
        #expect(ContinuousClock.now - started < .seconds(20))
        let pid = try #require(
            pid_t(try String(contentsOfFile: fixture.dir + "/pid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Killed and reaped: no such process any more.
        #expect(kill(pid, 0) == -1 && errno == ESRCH)
    }

    @Test("a child that exits without a line, or says something else, is INTERNAL naming what happened")
    func childFailures() throws {
        let exited = starlineError { _ = try self.start("exit 3") }
        #expect(exited?.code == .internalError)
        #expect(exited?.message.contains("exit status 3") == true)
        let chatty = starlineError { _ = try self.start("echo hello") }
        #expect(chatty?.code == .internalError)
        #expect(chatty?.message.contains("'hello'") == true)
        let killed = starlineError { _ = try self.start("kill -9 $$") }
        #expect(killed?.message.contains("signal 9") == true)
        let missing = starlineError {
            _ = try MemoryAgentLauncher.start(
                key: AgentFixture.randomKey(), vaultID: self.fixture.vaultID, ttl: nil, idle: nil,
                environment: self.fixture.environment, executable: self.fixture.dir + "/no-such-tool", arguments: [])
        }
        #expect(missing?.code == .internalError)
    }

    @Test("start replaces an agent already running for the vault (STOP first)")
    func replacesRunningAgent() throws {
        let old = try fixture.serve(AgentFixture.randomKey())
        let pid = try start("cat > /dev/null; echo ready")
        #expect(reap(pid) == 0)
        #expect(old.waitUntilEnded(timeout: .seconds(10)) == .stopRequested)
        #expect(!old.holdsKey)
    }

    @Test("start refuses bad input before spawning anything")
    func invalidInput() throws {
        #expect(starlineError { _ = try self.start("touch \"$1/ran\"; echo ready", ttl: .zero) }?.code == .usage)
        #expect(starlineError { _ = try self.start("touch \"$1/ran\"; echo ready", key: SecretBytes(count: 0)) }?.code == .usage)
        #expect(starlineError { _ = try self.start("touch \"$1/ran\"; echo ready", key: SecretBytes(count: 2000)) }?.code == .usage)
        #expect(access(fixture.dir + "/ran", F_OK) != 0)
        // A socket directory open to others is refused while looking for an agent to replace.
        #expect(mkdir(fixture.socketDirectory, 0o777) == 0 && chmod(fixture.socketDirectory, 0o777) == 0)
        #expect(starlineError { _ = try self.start("touch \"$1/ran\"; echo ready") }?.code == .insecurePermissions)
        #expect(access(fixture.dir + "/ran", F_OK) != 0)
    }

    @Test("the detached agent's key input: read to end of file, bounded, never empty")
    func keyInput() throws {
        func feed(_ bytes: [UInt8]) throws(StarlineError) -> SecretBytes {
            var pair: [Int32] = [-1, -1]
            precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
            defer { close(pair[0]) }
            _ = bytes.withUnsafeBytes { send(pair[1], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(pair[1])
            return try MemoryAgentServer.readKey(pair[0])
        }
        let key = Sodium.randomBytes(32)
        #expect(try feed(key).copyBytes() == key)
        #expect(starlineError { _ = try feed([]) }?.code == .usage)
        #expect(starlineError { _ = try feed([UInt8](repeating: 7, count: MemoryAgentLauncher.maxKeyBytes + 1)) }?.code == .usage)
        #expect(try feed([UInt8](repeating: 7, count: MemoryAgentLauncher.maxKeyBytes)).count == MemoryAgentLauncher.maxKeyBytes)
    }

    @Test(
        """
        the detached agent's arguments: unknown options and bad numbers are USAGE; the socket directory defaults to \
        the rule
        """)
    func detachedOptions() throws {
        let id = fixture.vaultID
        let plain = try MemoryAgentServer.DetachedOptions(["--vault-id", id], environment: fixture.environment)
        #expect(plain.socketDirectory == fixture.socketDirectory)
        #expect(plain.ttl == nil && plain.idle == nil)
        for bad in [
            ["--vault-id", id, "--ttl-ms", "0"], ["--vault-id", id, "--idle-ms", "x"], ["--vault-id", id, "--key", "00"],
            ["--vault-id"], ["--ttl-ms", "5"], ["--vault-id", "XYZ"]
        ] {
            #expect(
                starlineError { _ = try MemoryAgentServer.DetachedOptions(bad, environment: self.fixture.environment) }?.code == .usage,
                "\(bad)")
        }
        #expect(
            MemoryAgentLauncher.agentArguments(vaultID: id, ttl: nil, idle: nil, socketDirectory: "/d") == [
                "--vault-id", id, "--socket-dir", "/d"
            ])
    }
}
