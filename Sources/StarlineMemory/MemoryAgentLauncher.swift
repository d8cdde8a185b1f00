import CProcess
import Glibc
import StarlineCore
import StarlineCrypto

/// Starts a vault's unlock agent as a detached process (`sl-memory unlock`).
///
/// What the front-end does:
///
/// 1. In its entry point, before `ToolMain.main` (which would reject the argument as an unknown option):
///
///        let arguments = CommandLine.arguments
///        if arguments.count >= 2, arguments[1] == MemoryAgentServer.detachedAgentArgument {
///            MemoryAgentServer.runAsDetachedAgent(arguments: Array(arguments.dropFirst()), environment: .process)
///        }
///
///    and remember, as `IsolatedScan.available` does, that this process is sl-memory: a tool run in-process
///    (tests) must not spawn `/proc/self/exe`, which is then the test runner.
/// 2. `unlock`: open the vault with the passphrase (always checked), then
///
///        let pid = try MemoryAgentLauncher.start(key: vault.dataKey, vaultID: vault.vaultID, ttl: ttl, idle: idle,
///                                                environment: context.environment, executable: "/proc/self/exe",
///                                                arguments: [MemoryAgentServer.detachedAgentArgument])
///
///    `start` first stops an agent already running for the vault (a `STOP`: it unlinks its socket and drops
///    its key before it answers), so a second `unlock` replaces the first, with the new `--ttl`/`--idle`.
/// 3. `lock`: `MemoryAgentClient.stop`; `status`: `MemoryAgentClient.status`; every other command:
///    `MemoryAgentClient.fetchKey`, then `MemoryVault.open(at:dataKey:)` — WRONG_KEY there (a rekey since the
///    unlock) means: stop the agent and ask for the passphrase.
///
/// The child: `executable` with `arguments` and then `agentArguments(…)` (`--vault-id`, `--socket-dir`,
/// `--ttl-ms`, `--idle-ms`), in a new session (POSIX_SPAWN_SETSID: no controlling terminal, so closing the
/// terminal sends it no SIGHUP), default dispositions for SIGINT, SIGTERM, SIGHUP and SIGPIPE and an empty
/// signal mask whatever the caller had. The key goes to its stdin, a socket pair: never argv (world-readable
/// in /proc/PID/cmdline), the environment (/proc/PID/environ) or a file. The child binds, then writes one
/// line on stdout — `ready`, or `{"error":{…},"exit":N}` — and closes it; `start` waits `readyTimeout` for it.
///
/// The agent stays a child of the calling process until that exits (sl-memory exits right after): a caller
/// that lives on should reap it with `waitpid`.
public enum MemoryAgentLauncher {
    public static let readyTimeout: Duration = .seconds(5)
    /// The longest key the agent accepts on stdin.
    public static let maxKeyBytes = 1024

    /// The arguments `start` appends for the agent; `runAsDetachedAgent` reads them back.
    public static func agentArguments(vaultID: String, ttl: Duration?, idle: Duration?, socketDirectory: String) -> [String] {
        var arguments = ["--vault-id", vaultID, "--socket-dir", socketDirectory]
        if let ttl { arguments += ["--ttl-ms", String(AgentWire.nanoseconds(ttl) / 1_000_000)] }
        if let idle { arguments += ["--idle-ms", String(AgentWire.nanoseconds(idle) / 1_000_000)] }
        return arguments
    }

    /// Starts the agent of `vaultID` holding `key` and returns its pid once it serves; throws the child's own
    /// error when it could not (a socket directory with bad permissions: INSECURE_PERMISSIONS), TIMEOUT when
    /// it said nothing within `readyTimeout` (it is killed), INTERNAL when it died or said something else.
    public static func start(
        key: SecretBytes, vaultID: String, ttl: Duration?, idle: Duration?, environment: Environment,
        executable: String, arguments: [String], readyTimeout: Duration = readyTimeout
    ) throws(StarlineError) -> pid_t {
        try MemoryAgentClient.checkVaultID(vaultID)
        guard (1...maxKeyBytes).contains(key.count) else {
            throw StarlineError(.usage, "the unlock agent holds keys of 1 to \(maxKeyBytes) bytes, not \(key.count)")
        }
        for (option, value) in [("--ttl", ttl), ("--idle", idle)] {
            if let value, AgentWire.nanoseconds(value) < 1_000_000 {
                throw StarlineError(.usage, "\(option) must be at least a millisecond", details: .object([("option", .string(option))]))
            }
        }
        let directory = MemoryAgentClient.socketDirectory(environment: environment)
        // One agent per vault: the running one goes first (its socket and key with it).
        try MemoryAgentClient.stop(vaultID: vaultID, environment: environment)
        let argv = arguments + agentArguments(vaultID: vaultID, ttl: ttl, idle: idle, socketDirectory: directory)
        return try spawn(executable: executable, arguments: argv, key: key, readyTimeout: readyTimeout)
    }

    static func spawn(executable: String, arguments: [String], key: SecretBytes, readyTimeout: Duration) throws(StarlineError) -> pid_t {
        // Socket pairs (`ChildChannels`): MSG_NOSIGNAL makes a child that died before reading its key a failed
        // send here, not a SIGPIPE that ends the caller.
        guard let channels = ChildChannels() else { throw failure("socketpair", errno) }
        let (input, output) = (channels.input, channels.output)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy; the originals close at exec.
        posix_spawn_file_actions_adddup2(&actions, input[1], STDIN_FILENO)
        posix_spawn_file_actions_adddup2(&actions, output[1], STDOUT_FILENO)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), defaults = sigset_t()
        sigemptyset(&none)
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, starline_posix_spawn_setsid_flag() | Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid = pid_t()
        // Not `environ`: the agent runs for hours, and STARLINE_MEMORY_PASSPHRASE would stay readable in its
        // /proc/PID/environ, in swappable memory, all that time.
        var environment = ChildEnvironment.entries(for: .sameTool)
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, &argv, &environment)
        close(input[1])
        close(output[1])
        guard spawned == 0 else {
            close(input[0]); close(output[0])
            throw failure("posix_spawn \(executable)", spawned)
        }
        // The key straight from protected memory; a failed send (the child is gone) shows below as its exit.
        key.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = send(input[0], bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if n < 0 { if errno == EINTR { continue }; break }
                offset += n
            }
        }
        close(input[0])
        var line = [UInt8](repeating: 0, count: 4096)
        let read = AgentWire.readLine(output[0], into: &line, deadline: MonotonicClock.nanoseconds() + AgentWire.nanoseconds(readyTimeout))
        close(output[0])
        switch read {
        case .line(let count) where String(decoding: line[0..<count], as: UTF8.self) == "ready":
            return pid
        case .line(let count):
            let status = reap(pid)
            if let reported = reportedError(line[0..<count]) { throw reported }
            throw StarlineError(
                .internalError,
                "the memory agent did not start (\(describe(status))): it said '\(String(decoding: line[0..<min(count, 200)], as: UTF8.self))'"
            )
        case .closed:
            throw StarlineError(.internalError, "the memory agent ended before it was ready (\(describe(reap(pid))))")
        case .timedOut:
            kill(pid, SIGKILL)
            _ = reap(pid)
            throw StarlineError(
                .timeout, "the memory agent did not say it was ready within \(readyTimeout); it was killed", retryable: true)
        case .tooLong:
            kill(pid, SIGKILL)
            _ = reap(pid)
            throw StarlineError(.internalError, "the memory agent wrote an overlong line instead of 'ready'; it was killed")
        }
    }

    /// The child's `{"error":{…},"exit":N}` as the error it describes.
    static func reportedError(_ line: ArraySlice<UInt8>) -> StarlineError? {
        guard let json = try? JSON.parse(line), let error = json["error"], let code = error["code"]?.stringValue,
            let message = error["message"]?.stringValue
        else { return nil }
        let exit = json["exit"]?.intValue.flatMap { Int32(exactly: $0) }.flatMap(ExitStatus.init(rawValue:)) ?? .internalError
        return StarlineError(
            ErrorCode(code, exit: exit), message, retryable: error["retryable"]?.boolValue ?? false,
            details: error["details"].flatMap { $0.isNull ? nil : $0 })
    }

    /// Waits for `pid` (a second, then SIGKILL) and returns its wait status.
    static func reap(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        let deadline = MonotonicClock.nanoseconds() + 1_000_000_000
        while MonotonicClock.nanoseconds() < deadline {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid || (r < 0 && errno != EINTR) { return status }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    static func describe(_ status: Int32) -> String {
        status & 0x7F == 0 ? "exit status \((status >> 8) & 0xFF)" : "killed by signal \(status & 0x7F)"
    }

    private static func failure(_ call: String, _ code: Int32) -> StarlineError {
        StarlineError(.internalError, "cannot start the memory agent: \(call): \(String(cString: strerror(code)))")
    }
}
