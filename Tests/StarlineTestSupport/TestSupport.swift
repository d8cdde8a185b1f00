import Foundation
import CProcess
import StarlineCore

/// A directory under the system temp dir, removed when released.
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String

    public init(_ prefix: String = "starline-test") {
        var template = Array((NSTemporaryDirectory() + "/\(prefix)-XXXXXX").utf8CString)
        let result = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(result != nil, "mkdtemp failed")
        path = String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
        Self.registry.withLock { _ = $0.insert(path) }
    }

    public func file(_ name: String) -> String { path + "/" + name }

    deinit {
        Self.registry.withLock { _ = $0.remove(path) }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// The paths of the temporary directories that exist now (`ToolUser.handOver` gives those a run names to
    /// the tools' account).
    static func live() -> [String] { registry.withLock { Array($0) } }

    private static let registry = Locked(Set<String>())
}

/// Whom a child of the tests runs as (`ToolUser`).
public enum RunAs: Sendable {
    /// The tools' ordinary account (`ToolUser.dropped`) when the test process is root.
    case toolUser
    /// The test process's own uid: installed programs that run none of our tools, daemons an in-process test
    /// talks to, and the few tests that say why they need root.
    case testProcess
}

/// What a finished tool run produced.
public struct ToolRun: Sendable {
    /// The exit status, or 128 + the signal that killed it (as a shell's `$?`).
    public var status: Int32
    public var stdout: [UInt8]
    public var stderr: [UInt8]
    /// The signal that killed the process, nil when it exited (with `status`).
    public var killedBy: Int32? = nil

    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }

    /// stdout as one JSON document.
    public func json() throws -> JSON { try JSON.parse(stdout) }

    /// stdout as JSON Lines.
    public func jsonLines() throws -> [JSON] {
        try stdoutText.split(separator: "\n").map { try JSON.parse(String($0)) }
    }

    /// The error object on the first line of stderr.
    public func error() throws -> JSON {
        let first = stderrText.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
        return try JSON.parse(first)
    }

    public var errorCode: String? { (try? error())?["error"]?["code"]?.stringValue }
}

/// Runs the built executables of this package.
public enum Tools {
    /// The build products directory: `STARLINE_BIN_DIR`, or the directory of the running test bundle,
    /// where SwiftPM also puts the package's executables.
    public static var binDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["STARLINE_BIN_DIR"], !dir.isEmpty { return dir }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("sl-qr").path) { return url.path }
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug"
    }

    public static func path(_ tool: String) -> String { binDirectory + "/" + tool }

    /// Runs `tool` with a clean environment (PATH, HOME and STARLINE_HOME in `home`, plus `environment`).
    /// Output goes through files so large outputs cannot deadlock a pipe. Spawned with posix_spawn and an
    /// empty signal mask and default handlers: test threads (libdispatch workers) block every signal, and a
    /// child inheriting that mask never sees SIGCHLD or SIGTERM — a shell's `wait` then hangs forever.
    public static func run(
        _ tool: String, _ arguments: [String], stdin: [UInt8]? = nil, home: String,
        environment: [String: String] = [:], workingDirectory: String? = nil, runAs: RunAs? = nil
    ) throws -> ToolRun {
        try spawn(tool, arguments, stdin: stdin, home: home, environment: environment, workingDirectory: workingDirectory, runAs: runAs)
            .wait()
    }

    /// `run`, without waiting: the test can signal the process, then `wait()` for its result.
    /// `stdinPath` names a file (a FIFO the test holds open, say) to open as stdin instead of `stdin`'s bytes.
    ///
    /// `runAs` nil decides by what runs (`runsATool`): one of the built tools, or a program whose arguments
    /// name one (a shell script that starts them), runs as `ToolUser`; anything else as the test process.
    public static func spawn(
        _ tool: String, _ arguments: [String], stdin: [UInt8]? = nil, stdinPath: String? = nil, home: String,
        environment: [String: String] = [:], workingDirectory: String? = nil, runAs: RunAs? = nil
    ) throws -> RunningTool {
        var home = home
        // STARLINE_TEST_CHEAP_KEYS (a debug build's test hook, TestHooks): a vault's passphrase key and an export's
        // scrypt key are derived at the least cost, not seconds of Argon2id and scrypt per command; a test about
        // the cost sets it empty.
        var env = [
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "STARLINE_HOME": home + "/starline", "LANG": "C.UTF-8",
            "STARLINE_TEST_CHEAP_KEYS": "1"
        ]
        for (k, v) in environment { env[k] = v }
        let scratch = TemporaryDirectory("starline-run")
        let outPath = scratch.file("stdout"), errPath = scratch.file("stderr"), inPath = scratch.file("stdin")
        _ = FileManager.default.createFile(atPath: inPath, contents: Data(stdin ?? []))
        var executable = tool.hasPrefix("/") ? tool : path(tool)
        var arguments = arguments
        if let workingDirectory {
            // posix_spawn_file_actions_addchdir_np is not visible from Swift here; coreutils env -C changes directory.
            arguments = ["-C", workingDirectory, executable] + arguments
            executable = "/usr/bin/env"
        }
        if (runAs ?? (runsATool(executable, arguments, path: env["PATH"]) ? .toolUser : .testProcess)) == .toolUser,
            let account = ToolUser.dropped
        {
            // A program started with the test process's own HOME (root's, which the account cannot read) gets a
            // home of its own in the run's scratch directory, as a user has.
            if home == ProcessInfo.processInfo.environment["HOME"] {
                let ownHome = scratch.file("home")
                mkdir(ownHome, 0o700)
                for (key, value) in env where value == home || value.hasPrefix(home + "/") {
                    env[key] = ownHome + value.dropFirst(home.count)
                }
                home = ownHome
            }
            ToolUser.handOver(mentionedIn: [executable, home, stdinPath ?? ""] + arguments + Array(env.values), to: account)
            arguments = ToolUser.arguments(account) + [executable] + arguments
            executable = ToolUser.setpriv
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdinPath ?? inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // Nothing else of the test process goes to the child: tests run in parallel, and a pipe another test
        // has open (its write end) inherited by a long-lived child here (a keyring daemon) would keep that
        // test's reader from ever seeing EOF.
        _ = starline_spawn_close_from(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw StarlineError(.internalError, "cannot run \(executable): \(String(cString: strerror(rc)))") }
        let command = ([executable] + arguments).joined(separator: " ")
        return RunningTool(pid: pid, command: command, scratch: scratch, outPath: outPath, errPath: errPath)
    }

    /// Runs a shell command line (for tools like zbarimg, bash, groff); returns status, stdout and stderr.
    public static func shell(
        _ command: String, stdin: [UInt8]? = nil, environment: [String: String] = [:], runAs: RunAs? = nil
    ) throws -> ToolRun {
        try runInstalled("/bin/sh", ["-c", command], stdin: stdin, environment: environment, runAs: runAs)
    }

    /// The names of the built tools (Package.swift's `tools`).
    public static let toolNames = ["sl-chat", "sl-devserver", "sl-login", "sl-memory", "sl-qr", "sl-restore", "sl-sessions", "sl-tasks"]

    /// Whether running `executable` with `arguments` runs one of the built tools: it is one, a word of its
    /// command line names one by path (`'/…/sl-login' --with-token` in a script, a copy in a directory of
    /// its own, `PATH=…` given to env), or its PATH has the build directory (a cron line that says `sl-restore`).
    static func runsATool(_ executable: String, _ arguments: [String], path: String?) -> Bool {
        if let path, path.split(separator: ":").contains(where: { $0 == binDirectory }) { return true }
        return ([executable] + arguments).contains { word in
            word.contains(binDirectory) || toolNames.contains { word.hasSuffix("/" + $0) || word.contains("/" + $0 + "'") }
        }
    }

    /// Runs an installed program (qrencode, zbarimg, flock, python3, …) with the test process's environment
    /// plus `environment`; returns status, stdout and stderr.
    ///
    /// Every child of the tests is spawned here (`spawn`), never with Foundation's `Process`: its children
    /// inherit the spawning thread's blocked signals, and it learns of a child's exit through one end of a
    /// socket pair the child inherits, without close-on-exec. A child another thread spawned meanwhile keeps
    /// that end (and the end of any `Pipe`) open too, so `waitUntilExit` and a read to EOF wait for *that*
    /// child as well: with a server kept by a test that is itself waiting for a thread of the pool, the test
    /// run hung for good.
    public static func runInstalled(
        _ program: String, _ arguments: [String], stdin: [UInt8]? = nil, environment: [String: String] = [:], runAs: RunAs? = nil
    ) throws -> ToolRun {
        try runningInstalled(program, arguments, stdin: stdin, environment: environment, runAs: runAs).wait()
    }

    /// `runInstalled`, without waiting.
    public static func runningInstalled(
        _ program: String, _ arguments: [String], stdin: [UInt8]? = nil, environment: [String: String] = [:], runAs: RunAs? = nil
    ) throws -> RunningTool {
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        return try spawn(program, arguments, stdin: stdin, home: env["HOME"] ?? NSTemporaryDirectory(), environment: env, runAs: runAs)
    }

    /// True when `program` is on PATH.
    public static func available(_ program: String) -> Bool {
        (try? shell("command -v \(program)"))?.status == 0
    }
}

/// A tool started by `Tools.spawn`.
public final class RunningTool: @unchecked Sendable {
    public let pid: pid_t
    /// The command line, for the message when it hangs.
    let command: String
    let scratch: TemporaryDirectory
    let outPath: String
    let errPath: String
    private var result: ToolRun?

    init(pid: pid_t, command: String, scratch: TemporaryDirectory, outPath: String, errPath: String) {
        self.pid = pid
        self.command = command
        self.scratch = scratch
        self.outPath = outPath
        self.errPath = errPath
    }

    /// What it has written to stderr so far.
    public var stderrSoFar: String { String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self) }

    /// What it has written to stdout so far.
    public var stdoutSoFar: String { String(decoding: FileManager.default.contents(atPath: outPath) ?? Data(), as: UTF8.self) }

    public func signal(_ signal: Int32) { kill(pid, signal) }

    /// Waits up to `seconds` until its stderr so far satisfies `condition`; false when it never did.
    public func waitForStderr(seconds: Double = 20, _ condition: (String) -> Bool) -> Bool {
        waitFor(seconds: seconds) { condition(stderrSoFar) }
    }

    /// Waits up to `seconds` until its stdout so far satisfies `condition`; false when it never did.
    public func waitForStdout(seconds: Double = 20, _ condition: (String) -> Bool) -> Bool {
        waitFor(seconds: seconds) { condition(stdoutSoFar) }
    }

    /// Every 10 ms (a server's first line is awaited at every start of one) until `done` or `seconds` passed.
    private func waitFor(seconds: Double, _ done: () -> Bool) -> Bool {
        let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
        while MonotonicClock.nanoseconds() < deadline {
            if done() { return true }
            usleep(10_000)
        }
        return false
    }

    /// How long `wait()` lets a tool run: no tool run of the tests needs a minute, so one still running after
    /// `waitLimit` seconds hangs. It is killed and its test fails on what it reads, naming the tool in stderr,
    /// instead of the whole test run never ending.
    public static let waitLimit: Double = 300

    /// Waits for it to end (once; later calls return the same result); kills it after `waitLimit` seconds.
    public func wait() -> ToolRun { wait(killingAfter: Self.waitLimit) }

    /// Waits for it to end; one still running after `seconds` hangs: it is killed (SIGKILL), and a line in
    /// its stderr names it and says so.
    public func wait(killingAfter seconds: Double) -> ToolRun {
        if let run = wait(seconds: seconds) { return run }
        var run = killAndReap()
        run.stderr += Array("\ntest harness: killed \(command) after \(seconds) s: it hung\n".utf8)
        result = run
        return run
    }

    /// Waits up to `seconds` for it to end; nil when it is still running then (it is left running).
    /// `seconds` 0 only looks.
    public func wait(seconds: Double) -> ToolRun? {
        let deadline = MonotonicClock.nanoseconds() + UInt64(max(0, seconds) * 1e9)
        while true {
            if let run = poll() { return run }
            if MonotonicClock.nanoseconds() >= deadline { return nil }
            usleep(20_000)
        }
    }

    /// Its result when it has ended, nil while it runs; does not wait.
    public func poll() -> ToolRun? {
        if let result { return result }
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == pid ? finish(status) : nil
    }

    private func finish(_ status: Int32) -> ToolRun {
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros: decode the wait status by hand.
        let signaled = (status & 0x7F) != 0
        let run = ToolRun(
            status: signaled ? 128 + (status & 0x7F) : (status >> 8) & 0xFF,
            stdout: Array(FileManager.default.contents(atPath: outPath) ?? Data()),
            stderr: Array(FileManager.default.contents(atPath: errPath) ?? Data()),
            killedBy: signaled ? status & 0x7F : nil)
        result = run
        return run
    }

    /// Waits up to `seconds`, then kills it (SIGKILL) and waits: a test never hangs on a tool that does not end.
    public func waitOrKill(seconds: Double) -> ToolRun {
        wait(seconds: seconds) ?? killAndReap()
    }

    /// SIGKILL, then its result (the wait cannot last: SIGKILL ends any process that is not a zombie already).
    private func killAndReap() -> ToolRun {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return finish(status)
    }

    deinit { if result == nil { _ = killAndReap() } }
}
