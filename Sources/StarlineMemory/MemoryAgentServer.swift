import CProcess
import Glibc
import StarlineCore
import StarlineCrypto

/// Why an agent stopped serving.
public enum MemoryAgentEnd: String, Sendable {
    /// A `STOP` request (`sl-memory lock`, or a new `unlock` replacing it).
    case stopRequested
    /// `stop()` was called: a signal, in the detached agent.
    case stopped
    /// `--ttl` passed since it started.
    case ttlExpired
    /// `--idle` passed since it last served the key.
    case idleExpired
}

/// The unlock agent (W2): serves ONE vault's data key on a Unix stream socket to processes of
/// the same uid, until `--ttl` or `--idle` runs out, a `STOP` request, or `stop()`. The protocol is
/// `AgentWire`'s; where the socket lives is `MemoryAgentClient.socketDirectory`.
///
/// `init` binds (so that a detached agent can report a bind failure before it says "ready"); `run` serves on
/// the calling thread until the end and returns why. When it ends, the socket is unlinked (only if it is
/// still ours), the listener closed and the server's reference to the key dropped: the key's
/// `SecretBytes` is zeroed and unmapped when that was the last reference (the detached agent holds no
/// other). A tool runs it with `runAsDetachedAgent`; tests run it on a thread.
///
/// One thread, one connection at a time: a same-uid peer that sends nothing holds the others up for the
/// 1 s request deadline at most, and a peer of another uid is dropped before anything is read from it.
public final class MemoryAgentServer: @unchecked Sendable {
    // @unchecked: the mutable state (key, listener, times, end) is in `state`, under its lock; the rest is
    // immutable after init. `run` is meant for one thread, `stop` and the accessors for any.
    public let vaultID: String
    public let socketPath: String
    public let ttl: Duration?
    public let idle: Duration?
    public let startedAt: Timestamp

    private let directory: AgentSocketDirectory
    private let name: String
    private let identity: (dev_t, ino_t)
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let clock: MemoryAgentClock
    private let started: UInt64
    private let state: Locked<State>

    private struct State {
        var key: SecretBytes?
        var listener: Int32
        var lastServed: UInt64
        var running = false
        var ended: MemoryAgentEnd?
    }

    /// Binds the agent of `vaultID` at `MemoryAgentClient.socketPath(vaultID:environment:)`.
    public convenience init(
        vaultID: String, key: SecretBytes, ttl: Duration?, idle: Duration?, environment: Environment,
        clock: MemoryAgentClock = .system
    ) throws(StarlineError) {
        try self.init(
            socketDirectory: MemoryAgentClient.socketDirectory(environment: environment), vaultID: vaultID, key: key,
            ttl: ttl, idle: idle, clock: clock)
    }

    /// Binds the agent of `vaultID` in `socketDirectory` (created 0700 when missing; refused when another
    /// user owns it or group or others have any access to it). A socket already there with no listener
    /// (ECONNREFUSED: its agent died) is replaced; one with a listener is CONFLICT — stop that agent first.
    public init(
        socketDirectory: String, vaultID: String, key: SecretBytes, ttl: Duration?, idle: Duration?,
        clock: MemoryAgentClock = .system
    ) throws(StarlineError) {
        try MemoryAgentClient.checkVaultID(vaultID)
        for (option, value) in [("--ttl", ttl), ("--idle", idle)] {
            if let value, value <= .zero {
                throw StarlineError(.usage, "\(option) must be a positive duration", details: .object([("option", .string(option))]))
            }
        }
        guard let directory = try AgentSocketDirectory(path: socketDirectory, create: true) else {
            throw StarlineError(.storage, "cannot create the memory agent's socket directory \(socketDirectory)")
        }
        let name = MemoryAgentClient.socketName(vaultID)
        let listener = try AgentSocketDirectory.newSocket()
        var pair: [Int32] = [-1, -1]
        var identity: (dev_t, ino_t)
        do throws(StarlineError) {
            try Self.bind(listener, name, in: directory, vaultID: vaultID)
            // "The backlog argument defines the maximum length to which the queue of pending connections for
            // sockfd may grow" (listen(2)): a few clients at once, each served in well under a second.
            guard listen(listener, 16) == 0 else {
                throw AgentSocketDirectory.failure("cannot listen on", directory.path + "/" + name, errno)
            }
            guard let info = try directory.entry(name) else {
                throw AgentSocketDirectory.failure("cannot find the socket just bound", directory.path + "/" + name, ENOENT)
            }
            identity = (info.st_dev, info.st_ino)
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
                let e = errno
                directory.removeSocket(name, identity: (info.st_dev, info.st_ino))
                throw AgentSocketDirectory.failure("cannot create the memory agent's wake-up channel", "socketpair", e)
            }
        } catch {
            close(listener)
            throw error
        }
        self.identity = identity
        self.vaultID = vaultID
        self.socketPath = directory.path + "/" + name
        self.ttl = ttl
        self.idle = idle
        self.directory = directory
        self.name = name
        self.wakeRead = pair[0]
        self.wakeWrite = pair[1]
        self.clock = clock
        started = clock.elapsed()
        startedAt = clock.now()
        state = Locked(State(key: key, listener: listener, lastServed: started))
    }

    deinit {
        tearDown()
        close(wakeRead)
        close(wakeWrite)
    }

    /// `init` followed by `run`.
    public static func serve(
        socketDirectory: String, vaultID: String, key: SecretBytes, ttl: Duration?, idle: Duration?,
        clock: MemoryAgentClock = .system
    ) throws(StarlineError) -> MemoryAgentEnd {
        try MemoryAgentServer(socketDirectory: socketDirectory, vaultID: vaultID, key: key, ttl: ttl, idle: idle, clock: clock).run()
    }

    /// True until the agent ended and dropped the key.
    public var holdsKey: Bool { state.withLock { $0.key != nil } }

    /// Why it ended; nil while it serves (or before `run`).
    public var end: MemoryAgentEnd? { state.withLock { $0.ended } }

    /// Ends `run` (from any thread, a signal's clean-up included) as soon as the connection it is serving,
    /// if any, is done.
    public func stop() {
        var byte: UInt8 = 1
        _ = Glibc.send(wakeWrite, &byte, 1, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
    }

    /// Waits until the agent has ended (socket unlinked, key dropped), at most `timeout`; nil if it has not.
    public func waitUntilEnded(timeout: Duration) -> MemoryAgentEnd? {
        state.await(deadline: MonotonicClock.nanoseconds() + AgentWire.nanoseconds(timeout)) { $0.ended }
    }

    /// Serves until the agent ends; returns why. Call it once.
    public func run() -> MemoryAgentEnd {
        let listener: Int32 = state.withLock { state in
            precondition(!state.running && state.ended == nil, "MemoryAgentServer.run called twice")
            state.running = true
            return state.listener
        }
        var reason: MemoryAgentEnd
        while true {
            let now = clock.elapsed()
            if let expired = expiry(at: now) { reason = expired; break }
            // At most a second at a time, so that an expiry the clock jumped past (a suspend) is seen promptly.
            let wait = min(nextDeadline().map { $0 > now ? $0 - now : 0 } ?? UInt64.max, 1_000_000_000)
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, Int32(wait / 1_000_000 + 1))
            if ready < 0 && errno != EINTR { reason = .stopped; break }
            if fds[1].revents != 0 { reason = .stopped; break }
            guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
            let connection = starline_accept_cloexec(listener)
            guard connection >= 0 else { continue }
            // A connection that waited through an expiry (or a suspend) is not served.
            if let expired = expiry(at: clock.elapsed()) { close(connection); reason = expired; break }
            if serve(connection) { reason = .stopRequested; break }
        }
        tearDown()
        state.withLockNotifying { $0.ended = reason }
        return reason
    }

    // MARK: - Internals

    private func expiry(at now: UInt64) -> MemoryAgentEnd? {
        if let ttl, now >= started &+ AgentWire.nanoseconds(ttl) { return .ttlExpired }
        if let idle, now >= state.withLock({ $0.lastServed }) &+ AgentWire.nanoseconds(idle) { return .idleExpired }
        return nil
    }

    private func nextDeadline() -> UInt64? {
        let lastServed = state.withLock { $0.lastServed }
        let deadlines = [ttl.map { started &+ AgentWire.nanoseconds($0) }, idle.map { lastServed &+ AgentWire.nanoseconds($0) }]
        return deadlines.compactMap { $0 }.min()
    }

    /// Answers one connection and closes it; true when it asked the agent to stop.
    private func serve(_ connection: Int32) -> Bool {
        defer { close(connection) }
        // Only our own uid is answered. Other users cannot even reach the socket through the 0700 directory,
        // but root can hand a descriptor on, and a directory's mode can be changed: the peer's credentials,
        // which the kernel records at connect(2), are the check that does not depend on the file system.
        guard let peer = AgentSocketDirectory.peer(connection), peer.uid == geteuid() else { return false }
        AgentWire.setTimeouts(connection, seconds: 1)
        var buffer = [UInt8](repeating: 0, count: AgentWire.maxRequest)
        let deadline = MonotonicClock.nanoseconds() + AgentWire.nanoseconds(AgentWire.requestDeadline)
        guard case .line(let count) = AgentWire.readLine(connection, into: &buffer, deadline: deadline),
            let request = AgentWire.parse(buffer[0..<count])
        else {
            AgentWire.send(connection, AgentWire.error("BAD_REQUEST", "expected KEY <vault id>, STATUS or STOP on one line"))
            return false
        }
        switch request {
        case .key(let id):
            guard id == vaultID else {
                AgentWire.send(connection, AgentWire.error("WRONG_VAULT", "this agent holds the key of vault \(vaultID), not \(id)"))
                return false
            }
            guard var reply = state.withLock({ $0.key }).map(AgentWire.keyReply) else {
                AgentWire.send(connection, AgentWire.error("NO_KEY", "the agent is ending"))
                return false
            }
            if AgentWire.send(connection, reply) { state.withLock { $0.lastServed = clock.elapsed() } }
            Sodium.wipe(&reply)
        case .status:
            AgentWire.send(connection, Array(("OK " + status().json.serialized() + "\n").utf8))
        case .stop:
            // Gone before the reply: whoever waits for it (a new `unlock`) can bind the name at once.
            tearDown()
            AgentWire.send(connection, Array("OK stopped\n".utf8))
            return true
        }
        return false
    }

    /// What `STATUS` reports.
    public func status() -> MemoryAgentStatus {
        let lastServed = state.withLock { $0.lastServed }
        func wall(_ elapsed: UInt64) -> Timestamp {
            startedAt + Int64((elapsed &- started) / 1_000_000_000)
        }
        return MemoryAgentStatus(
            pid: getpid(), vaultID: vaultID, startedAt: startedAt,
            expiresAt: ttl.map { wall(started &+ AgentWire.nanoseconds($0)) },
            idleExpiresAt: idle.map { wall(lastServed &+ AgentWire.nanoseconds($0)) })
    }

    /// Unlinks the socket (if it is still ours), closes the listener and drops the key. Idempotent.
    private func tearDown() {
        let listener = state.withLock { state -> Int32 in
            let fd = state.listener
            state.listener = -1
            state.key = nil
            return fd
        }
        guard listener >= 0 else { return }
        directory.removeSocket(name, identity: identity)
        close(listener)
    }

    /// Binds `name`, replacing a stale socket (no listener: ECONNREFUSED) but never a live agent's.
    private static func bind(_ fd: Int32, _ name: String, in directory: AgentSocketDirectory, vaultID: String) throws(StarlineError) {
        let path = directory.path + "/" + name
        var result = try directory.bind(fd, name)
        // "EADDRINUSE: The given address is already in use" (bind(2)): bind never replaces a file, nor
        // follows a symbolic link there. Look at what it is before touching it.
        if result == EADDRINUSE, try directory.socketEntry(name) != nil {
            let probe = try AgentSocketDirectory.newSocket()
            defer { close(probe) }
            switch try directory.connect(probe, name) {
            case 0:
                let pid = AgentSocketDirectory.peer(probe).map { " (pid \($0.pid))" } ?? ""
                throw StarlineError(
                    .conflict, "an unlock agent for vault \(vaultID) is already running on \(path)\(pid); stop it first",
                    details: .object([("path", .string(path))]))
            case ECONNREFUSED:
                // "ECONNREFUSED: ... No-one listening on the remote address" (connect(2)): its agent is gone.
                try directory.removeStale(name)
                result = try directory.bind(fd, name)
            case let e:
                throw AgentSocketDirectory.failure("cannot probe the existing memory agent socket", path, e)
            }
        } else if result == EADDRINUSE {
            result = try directory.bind(fd, name)
        }
        guard result == 0 else { throw AgentSocketDirectory.failure("cannot bind the memory agent socket", path, result) }
    }
}
