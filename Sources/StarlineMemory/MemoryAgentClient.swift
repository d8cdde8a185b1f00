import Glibc
import StarlineCore
import StarlineCrypto

/// Talking to a vault's unlock agent: fetch the data key, ask its status, stop it.
///
/// "No agent" (no directory, no socket, a socket nobody listens on, an agent that closed without a reply
/// because it was just ending) is nil or false: the caller asks for the passphrase instead. Anything that
/// looks wrong is an error, never a quiet nil: a socket directory another user owns or others can enter,
/// a symbolic link or a non-socket in the socket's place, and above all an agent that is not our uid —
/// the listener's credentials come from SO_PEERCRED, so a socket someone else planted cannot pass for
/// ours, and its "key" is never read.
public enum MemoryAgentClient {
    /// How long a reply may take: the agent serves one connection at a time, each within 1 s.
    public static let replyTimeout: Duration = .seconds(3)

    /// The directory of the agents' sockets:
    /// - `$XDG_RUNTIME_DIR/starline` when XDG_RUNTIME_DIR is set (absolute), and `$STARLINE_HOME/run` under
    ///   STARLINE_HOME (`StarlinePaths`' rule, the one sl-login's runtime files follow);
    /// - otherwise `/run/user/<uid>/starline` when `/run/user/<uid>` exists and is ours and private: that is
    ///   the directory pam_systemd would have named, so a cron job or an `env -i` shell (no XDG_RUNTIME_DIR)
    ///   finds the agent its login session started;
    /// - otherwise `StarlinePaths`' fallback, `<state>/run` (`~/.local/state/starline/run`): a 0700 directory
    ///   in the home, never a shared one like /tmp, where another user could take the name first.
    /// Whatever the rule picks must be ours and 0700 (the server creates it so; both sides check).
    public static func socketDirectory(environment: Environment) -> String {
        socketDirectory(environment: environment, uid: geteuid(), systemRuntimeBase: "/run/user")
    }

    static func socketDirectory(environment: Environment, uid: uid_t, systemRuntimeBase: String) -> String {
        let paths = StarlinePaths(environment: environment)
        if environment["STARLINE_HOME"].map({ !$0.isEmpty }) == true || environment["XDG_RUNTIME_DIR"]?.hasPrefix("/") == true {
            return paths.runtime
        }
        let system = "\(systemRuntimeBase)/\(uid)"
        var info = stat()
        if lstat(system, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == uid, info.st_mode & 0o077 == 0 {
            return system + "/starline"
        }
        return paths.runtime
    }

    /// `<socketDirectory>/memory-agent-<vaultID>.sock`.
    public static func socketPath(vaultID: String, environment: Environment) -> String {
        socketDirectory(environment: environment) + "/" + socketName(vaultID)
    }

    static func socketName(_ vaultID: String) -> String { "memory-agent-\(vaultID).sock" }

    /// A vault id is lowercase hex (`MemoryVault.vaultID`); it names a file, so nothing else is accepted.
    static func checkVaultID(_ vaultID: String) throws(StarlineError) {
        let ok =
            (1...64).contains(vaultID.utf8.count)
            && vaultID.utf8.allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }
        guard ok else {
            throw StarlineError(.usage, "not a memory vault id: \(vaultID)", details: .object([("vaultId", .string(vaultID))]))
        }
    }

    /// The data key the agent of `vaultID` holds, in protected memory; nil when no agent runs for it.
    public static func fetchKey(vaultID: String, environment: Environment) throws(StarlineError) -> SecretBytes? {
        try exchange(.key(vaultID: vaultID), vaultID: vaultID, environment: environment) { (body, path) throws(StarlineError) in
            guard let key = AgentWire.decodeKey(body) else {
                throw StarlineError(.internalError, "the memory agent on \(path) sent a malformed key")
            }
            return key
        }
    }

    /// What the agent of `vaultID` reports; nil when none runs.
    public static func status(vaultID: String, environment: Environment) throws(StarlineError) -> MemoryAgentStatus? {
        try exchange(.status, vaultID: vaultID, environment: environment) { (body, path) throws(StarlineError) in
            guard let json = try? JSON.parse(body), let status = MemoryAgentStatus(json: json), status.vaultID == vaultID else {
                throw StarlineError(.internalError, "the memory agent on \(path) sent a malformed status")
            }
            return status
        }
    }

    /// Stops the agent of `vaultID`: true when one was running (it has unlinked its socket and dropped the
    /// key by the time this returns), false when none was.
    @discardableResult
    public static func stop(vaultID: String, environment: Environment) throws(StarlineError) -> Bool {
        try exchange(.stop, vaultID: vaultID, environment: environment) { (_, _) throws(StarlineError) in true } ?? false
    }

    /// One request and its `OK` reply's body, handed to `body` while still in the reply buffer (wiped after);
    /// nil when no agent answers.
    private static func exchange<T>(
        _ request: AgentWire.Request, vaultID: String, environment: Environment,
        _ body: (ArraySlice<UInt8>, String) throws(StarlineError) -> T
    ) throws(StarlineError) -> T? {
        try checkVaultID(vaultID)
        guard let directory = try AgentSocketDirectory(path: socketDirectory(environment: environment), create: false) else { return nil }
        let name = socketName(vaultID)
        let path = directory.path + "/" + name
        guard try directory.socketEntry(name) != nil else { return nil }
        let fd = try AgentSocketDirectory.newSocket()
        defer { close(fd) }
        switch try directory.connect(fd, name) {
        case 0: break
        // A socket whose agent died (ECONNREFUSED), or one removed since we looked (ENOENT): no agent.
        case ECONNREFUSED, ENOENT: return nil
        case let e: throw AgentSocketDirectory.failure("cannot connect to the memory agent on", path, e)
        }
        guard let peer = AgentSocketDirectory.peer(fd) else {
            throw AgentSocketDirectory.failure("cannot read the peer credentials of the memory agent on", path, errno)
        }
        guard peer.uid == geteuid() else {
            throw StarlineError(
                .insecurePermissions,
                "the process listening on \(path) runs as uid \(peer.uid), not \(geteuid()): it is not your unlock agent, and nothing was sent to it",
                details: .object([("path", .string(path)), ("peerUid", .int(Int64(peer.uid))), ("peerPid", .int(Int64(peer.pid)))]))
        }
        AgentWire.setTimeouts(fd, seconds: Int(replyTimeout.components.seconds))
        guard AgentWire.send(fd, AgentWire.line(request)) else { return nil }
        var buffer = [UInt8](repeating: 0, count: AgentWire.maxReply)
        defer { Sodium.wipe(&buffer) }
        let deadline = MonotonicClock.nanoseconds() + AgentWire.nanoseconds(replyTimeout)
        switch AgentWire.readLine(fd, into: &buffer, deadline: deadline) {
        case .line(let count):
            let ok = Array("OK ".utf8), refused = Array("ERR ".utf8)
            if count >= ok.count, buffer[0..<ok.count].elementsEqual(ok) { return try body(buffer[ok.count..<count], path) }
            guard count >= refused.count, buffer[0..<refused.count].elementsEqual(refused) else {
                throw StarlineError(.internalError, "the memory agent on \(path) sent a malformed reply")
            }
            let words = String(decoding: buffer[refused.count..<count], as: UTF8.self).split(separator: " ", maxSplits: 1)
            let code = words.first.map(String.init) ?? ""
            let message = words.count > 1 ? String(words[1]) : code
            throw StarlineError(
                code == "WRONG_VAULT" ? .wrongKey : .internalError, "the memory agent on \(path) refused: \(message)",
                details: .object([("path", .string(path)), ("agentCode", .string(code))]))
        case .closed:
            // It closed without a word: it was ending (an expiry as we connected).
            return nil
        case .timedOut:
            throw StarlineError(
                .timeout, "the memory agent on \(path) did not answer within \(replyTimeout)", retryable: true,
                details: .object([("path", .string(path))]))
        case .tooLong:
            throw StarlineError(.internalError, "the memory agent on \(path) sent a reply over \(AgentWire.maxReply) bytes")
        }
    }
}
