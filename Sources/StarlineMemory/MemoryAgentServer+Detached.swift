import CProcess
import Glibc
import StarlineCore
import StarlineCrypto

extension MemoryAgentServer {
    /// The hidden argument that turns sl-memory into its own unlock agent (`MemoryAgentLauncher`). Never typed.
    public static let detachedAgentArgument = "--internal-memory-agent-v1"

    /// The detached agent's main, to be called first thing in the tool's `main` (see `MemoryAgentLauncher`
    /// for what the front-end does). `arguments` are the process's arguments after argv[0]: the hidden
    /// argument, then `MemoryAgentLauncher.agentArguments`. `environment` only names the socket directory
    /// when `--socket-dir` is absent.
    ///
    /// In order: descriptors from 3 up are closed; the process is made undumpable and core-less before the
    /// key exists in it; the key is read from stdin (at most `MemoryAgentLauncher.maxKeyBytes`, then stdin is
    /// closed); the socket is bound; `ready` (or the error) is written on stdout, and stdout and stderr go to
    /// /dev/null; then it serves until the end, and exits 0. SIGINT, SIGTERM and SIGHUP end it the same way
    /// (socket unlinked, key zeroed), with 128 + the signal.
    public static func runAsDetachedAgent(arguments: [String], environment: Environment) -> Never {
        exit(detachedMain(arguments: arguments, environment: environment))
    }

    /// Everything the agent holds is local here, so it is released (the key zeroed, the socket unlinked)
    /// before `exit`.
    private static func detachedMain(arguments: [String], environment: Environment) -> Int32 {
        // Whatever the caller left open goes: a pipe inherited from `x=$(sl-memory unlock)` or a CI step
        // would otherwise stay open for the agent's whole life, and its reader would wait for EOF as long.
        // Nothing of ours is open yet (this runs first thing in main); 0 and 1 are the launcher's sockets.
        starline_close_descriptors_from(3)
        umask(0o077)
        _ = chdir("/")
        // Replies go out with MSG_NOSIGNAL; this covers the ready line, whose reader may be gone.
        signal(SIGPIPE, SIG_IGN)
        // prctl(2), PR_SET_DUMPABLE: the attribute "determines whether core dumps are produced for the calling
        // process upon delivery of a signal whose default behavior is to produce a core dump", and ptrace(2):
        // a process whose dumpable attribute is not SUID_DUMP_USER may only be attached, and its
        // /proc/PID/mem read, with CAP_SYS_PTRACE — so another process of the same uid cannot read the key
        // out of it. RLIMIT_CORE 0 as well, for a core pattern that ignores the flag.
        let hardened = starline_process_make_undumpable()
        guard hardened == 0 else {
            return report(StarlineError(.internalError, "cannot make the memory agent undumpable: \(String(cString: strerror(hardened)))"))
        }
        let options: DetachedOptions
        var key: SecretBytes?
        do throws(StarlineError) {
            options = try DetachedOptions(arguments, environment: environment)
            key = try readKey(STDIN_FILENO)
        } catch {
            return report(error)
        }
        redirectToDevNull(STDIN_FILENO)
        Interrupts.install()
        let server: MemoryAgentServer
        do throws(StarlineError) {
            server = try MemoryAgentServer(
                socketDirectory: options.socketDirectory, vaultID: options.vaultID, key: key!,
                ttl: options.ttl, idle: options.idle)
        } catch {
            key = nil
            return report(error)
        }
        key = nil
        let registration = Interrupts.onInterrupt {
            server.stop()
            _ = server.waitUntilEnded(timeout: .milliseconds(1500))
        }
        guard writeLine("ready") else { return 1 }
        redirectToDevNull(STDOUT_FILENO)
        redirectToDevNull(STDERR_FILENO)
        _ = server.run()
        registration.cancel()
        return 0
    }

    struct DetachedOptions {
        var vaultID: String
        var socketDirectory: String
        var ttl: Duration?
        var idle: Duration?

        init(_ arguments: [String], environment: Environment) throws(StarlineError) {
            var values: [String: String] = [:]
            var rest = arguments[...]
            if rest.first == MemoryAgentServer.detachedAgentArgument { rest = rest.dropFirst() }
            while let option = rest.popFirst() {
                guard ["--vault-id", "--socket-dir", "--ttl-ms", "--idle-ms"].contains(option), let value = rest.popFirst() else {
                    throw StarlineError(.usage, "the memory agent does not take \(option) here")
                }
                values[option] = value
            }
            guard let vaultID = values["--vault-id"] else { throw StarlineError(.usage, "the memory agent needs --vault-id") }
            try MemoryAgentClient.checkVaultID(vaultID)
            self.vaultID = vaultID
            socketDirectory = values["--socket-dir"] ?? MemoryAgentClient.socketDirectory(environment: environment)
            func milliseconds(_ option: String) throws(StarlineError) -> Duration? {
                guard let text = values[option] else { return nil }
                guard let n = Int64(text), n > 0 else {
                    throw StarlineError(.usage, "\(option) must be a positive number of milliseconds, not \(text)")
                }
                return .milliseconds(n)
            }
            ttl = try milliseconds("--ttl-ms")
            idle = try milliseconds("--idle-ms")
        }
    }

    /// The key: everything on `fd` up to end of file, 1 to `maxKeyBytes` bytes, within 5 s.
    static func readKey(_ fd: Int32) throws(StarlineError) -> SecretBytes {
        var buffer = [UInt8](repeating: 0, count: MemoryAgentLauncher.maxKeyBytes + 1)
        defer { Sodium.wipe(&buffer) }
        var used = 0
        let deadline = MonotonicClock.nanoseconds() + 5_000_000_000
        while true {
            let now = MonotonicClock.nanoseconds()
            guard now < deadline else { throw StarlineError(.timeout, "the memory agent got no key on its standard input") }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32((deadline - now) / 1_000_000 + 1))
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { continue }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + used, $0.count - used) }
            if n < 0 { if errno == EINTR { continue }; throw FileBytes.posixError("cannot read the key from standard input", path: "-") }
            if n == 0 { break }
            used += n
            guard used <= MemoryAgentLauncher.maxKeyBytes else {
                throw StarlineError(.usage, "the memory agent takes a key of at most \(MemoryAgentLauncher.maxKeyBytes) bytes")
            }
        }
        guard used > 0 else { throw StarlineError(.usage, "the memory agent got an empty key on its standard input") }
        return SecretBytes(count: used) { $0.copyBytes(from: buffer[0..<used]) }
    }

    /// The error as the launcher reads it (`MemoryAgentLauncher.reportedError`); returns its exit status.
    private static func report(_ error: StarlineError) -> Int32 {
        var json = error.json
        json.set("exit", .int(Int64(error.exitStatus.rawValue)))
        _ = writeLine(json.serialized())
        return error.exitStatus.rawValue
    }

    private static func writeLine(_ text: String) -> Bool {
        Array((text + "\n").utf8).withUnsafeBytes { FileBytes.write(fd: STDOUT_FILENO, $0) }
    }

    private static func redirectToDevNull(_ fd: Int32) {
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard null >= 0 else { close(fd); return }
        dup2(null, fd)
        close(null)
    }
}
