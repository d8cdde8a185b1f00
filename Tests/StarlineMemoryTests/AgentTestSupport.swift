import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
@testable import StarlineMemory
import StarlineTestSupport

/// A private temporary XDG_RUNTIME_DIR and the agents served in it on threads; they are stopped and joined
/// when the fixture goes.
final class AgentFixture: @unchecked Sendable {
    let dir: String
    let runtime: String
    let environment: Environment
    let vaultID: String
    private var agents: [(MemoryAgentServer, DispatchGroup)] = []

    init() throws {
        dir = try makeStorageTempDir(prefix: "sl-agent")
        runtime = dir + "/xdg"
        precondition(mkdir(runtime, 0o700) == 0)
        environment = Environment(["XDG_RUNTIME_DIR": runtime, "HOME": dir + "/home"])
        vaultID = Self.randomVaultID()
    }

    deinit {
        for (server, thread) in agents {
            server.stop()
            thread.wait()
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    static func randomVaultID() -> String {
        Sodium.randomBytes(16).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    static func randomKey() -> SecretBytes { SecretBytes(count: 32) }

    /// `$XDG_RUNTIME_DIR/starline`.
    var socketDirectory: String { runtime + "/starline" }
    var socketPath: String { MemoryAgentClient.socketPath(vaultID: vaultID, environment: environment) }

    /// An agent for `vaultID` (default: the fixture's) serving `key` on a thread of its own.
    @discardableResult
    func serve(
        _ key: SecretBytes, vaultID: String? = nil, ttl: Duration? = nil, idle: Duration? = nil,
        clock: MemoryAgentClock = .system
    ) throws -> MemoryAgentServer {
        let server = try MemoryAgentServer(
            vaultID: vaultID ?? self.vaultID, key: key, ttl: ttl, idle: idle,
            environment: environment, clock: clock)
        let thread = startThread { _ = server.run() }
        agents.append((server, thread))
        return server
    }
}

/// A clock whose `elapsed` moves only when the test says so (wall time fixed): deadlines without sleeping.
final class ManualClock: @unchecked Sendable {
    private let value = Locked<UInt64>(1_000_000_000_000)
    static let wall = Timestamp(seconds: 1_800_000_000)

    var clock: MemoryAgentClock {
        MemoryAgentClock(elapsed: { [value] in value.withLock { $0 } }, now: { ManualClock.wall })
    }

    func advance(_ duration: Duration) {
        value.withLock { $0 += AgentWire.nanoseconds(duration) }
    }
}

/// Connects to the Unix socket at `path`, sends `request` (if any), and returns what comes back until the
/// peer closes (nil when the connection fails).
func rawExchange(_ path: String, _ request: [UInt8]) -> String? {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    withUnsafeMutableBytes(of: &address.sun_path) {
        $0.copyBytes(from: bytes); $0[bytes.count] = 0
    }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard connected == 0 else { return nil }
    if !request.isEmpty { _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
    var reply: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = read(fd, &chunk, chunk.count)
        if n <= 0 { break }
        reply += chunk[0..<n]
    }
    return String(decoding: reply, as: UTF8.self)
}

/// A process whose stdout a test reads while it runs (`Tools.spawn`: stdout goes to a file).
final class ChildProcess: @unchecked Sendable {
    private let process: RunningTool

    init(_ executable: String, _ arguments: [String]) throws {
        process = try Tools.runningInstalled(executable, arguments)
    }

    /// What it has printed so far.
    var text: String { process.stdoutSoFar }

    /// Waits for it to end.
    func wait() -> ToolRun { process.wait() }

    /// Waits for it to end; returns what it printed.
    func finish() -> String { wait().stdoutText }

    /// SIGKILL (a test process's threads block the other signals, but a spawned child's mask is empty;
    /// SIGKILL is simply final), then `finish`.
    func kill() -> String {
        process.signal(SIGKILL)
        return finish()
    }
}

/// setpriv(1) from util-linux (Debian 12 has it): run a command as nobody, with no supplementary groups.
let setpriv = "/usr/bin/setpriv"
let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups"]
let perl = "/usr/bin/perl"
