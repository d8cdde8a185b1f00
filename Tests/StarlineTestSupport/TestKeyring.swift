import Foundation
import StarlineCore

/// A private Secret Service for tests: its own D-Bus session daemon and a `gnome-keyring-daemon` (secrets
/// component only) whose files live in a temporary HOME, with a "login" keyring unlocked by `password`.
///
/// The bus has no standard service directories, only one of ours: the two prompter names gnome-keyring asks
/// D-Bus to activate when it wants to show a password dialog (`org.gnome.keyring.SystemPrompter` and
/// `PrivatePrompter`) run a script that appends a line to `prompted` and fails. So `promptCount` tells
/// whether anything tried to prompt, and no real dialog (gcr-prompter) can appear or hang a test.
///
/// GLib caches the session bus per process: a test process that talks to it through libsecret must set
/// DBUS_SESSION_BUS_ADDRESS to `address` before its first libsecret call and then use only this keyring.
///
/// The daemons run as the account of their clients (`runAs`): a session bus admits only its own uid, and
/// gnome-keyring's control socket answers only its own. `.toolUser` (the default) for the built tools, which
/// run as `ToolUser`; `.testProcess` for tests that call the keyring in-process.
public final class TestKeyring: @unchecked Sendable {
    public let password: String
    public let runAs: RunAs
    public let address: String
    private let scratch = TemporaryDirectory("keyring")
    private var bus: RunningTool?
    private var daemon: RunningTool?
    /// Kills both daemons if the test process dies without stopping them (a crash, SIGKILL, or a static
    /// TestKeyring that is never deinitialised).
    private var reaper: RunningTool?

    public static let daemonPath = "/usr/bin/gnome-keyring-daemon"
    public static let collectionPath = "/org/freedesktop/secrets/collection/login"

    /// Starts both daemons and waits until `org.freedesktop.secrets` has an owner. Throws (it never skips)
    /// when dbus-daemon or gnome-keyring is not installed: scripts/bootstrap installs them.
    public init(password: String = "test-keyring-password", runAs: RunAs = .toolUser) throws {
        self.password = password
        self.runAs = runAs
        for program in ["/usr/bin/dbus-daemon", "/usr/bin/dbus-send", Self.daemonPath]
        where !FileManager.default.isExecutableFile(atPath: program) {
            throw StarlineError(
                .internalError, "\(program) is missing: run scripts/bootstrap (packages dbus, gnome-keyring, libsecret-tools)")
        }
        let fm = FileManager.default
        for directory in ["home", "data", "config", "cache", "runtime", "services"] {
            try fm.createDirectory(
                atPath: scratch.file(directory), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let prompter = scratch.file("prompter")
        try "#!/bin/sh\necho prompted >> '\(scratch.file("prompted"))'\nexit 1\n".write(toFile: prompter, atomically: true, encoding: .utf8)
        try fm.setAttributes([.posixPermissions: 0o700], ofItemAtPath: prompter)
        for name in ["org.gnome.keyring.SystemPrompter", "org.gnome.keyring.PrivatePrompter"] {
            try "[D-BUS Service]\nName=\(name)\nExec=\(prompter)\n".write(
                toFile: scratch.file("services/\(name).service"), atomically: true, encoding: .utf8)
        }
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(scratch.file("bus"))</listen>
          <servicedir>\(scratch.file("services"))</servicedir>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """.write(toFile: scratch.file("bus.conf"), atomically: true, encoding: .utf8)

        let bus = try Tools.spawn(
            "/usr/bin/dbus-daemon", ["--config-file=" + scratch.file("bus.conf"), "--nofork", "--print-address=1"],
            home: scratch.file("home"), runAs: runAs)
        self.bus = bus
        // --print-address=1: the address, then a newline, once the bus listens.
        _ = bus.waitForStdout(seconds: 10) { $0.hasSuffix("\n") }
        address = bus.stdoutSoFar.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !address.isEmpty else { throw StarlineError(.internalError, "dbus-daemon printed no address: \(bus.stderrSoFar)") }

        // --unlock: "read a password from stdin, and use it to unlock the login keyring or create it if the
        // login keyring does not exist"; --foreground keeps it our child, so stop() ends it.
        daemon = try Tools.spawn(
            Self.daemonPath, ["--unlock", "--components=secrets", "--foreground"],
            stdin: Array(password.utf8), home: scratch.file("home"), environment: environment, runAs: runAs)
        let pids = [bus.pid, daemon!.pid].map(String.init).joined(separator: " ")
        reaper = try Tools.spawn(
            "/bin/sh", ["-c", "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; kill -CONT \(pids); kill \(pids)"],
            home: scratch.file("home"), runAs: .testProcess)  // kill -0 of the test process needs its uid
        guard waitForService(seconds: 10) else {
            throw StarlineError(.internalError, "gnome-keyring-daemon did not take org.freedesktop.secrets: \(daemon?.stderrSoFar ?? "")")
        }
    }

    deinit { stop() }

    /// What a client of this keyring needs in its environment (no DISPLAY: nothing may open a window).
    public var environment: [String: String] {
        [
            "DBUS_SESSION_BUS_ADDRESS": address, "HOME": scratch.file("home"), "XDG_DATA_HOME": scratch.file("data"),
            "XDG_CONFIG_HOME": scratch.file("config"), "XDG_CACHE_HOME": scratch.file("cache"), "XDG_RUNTIME_DIR": scratch.file("runtime")
        ]
    }

    /// How many times something asked D-Bus for a prompter (see the type's comment).
    public var promptCount: Int {
        ((try? String(contentsOfFile: scratch.file("prompted"), encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    /// The gnome-keyring-daemon's process id, e.g. to SIGSTOP it and simulate a wedged daemon.
    public var daemonPID: pid_t? { daemon?.pid }

    /// Locks the login collection: org.freedesktop.Secret.Service.Lock, which never prompts.
    public func lock() throws {
        let run = try dbusSend([
            "--print-reply", "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.Lock",
            "array:objpath:" + Self.collectionPath
        ])
        guard run.status == 0 else { throw StarlineError(.internalError, "Lock failed: \(run.stderrText)") }
    }

    /// Unlocks the login keyring without a prompt, the way pam_gnome_keyring does at login: the daemon's
    /// control socket (`$XDG_RUNTIME_DIR/keyring/control`), operation GKD_CONTROL_OP_UNLOCK with the password.
    /// (Unlock over D-Bus always prompts; UnlockWithMasterPassword needs a session on the same connection,
    /// which one dbus-send or gdbus call cannot hold.)
    /// Protocol (gkd-control-client.c): one credentials byte (0; the server reads SO_PEERCRED), then a packet
    /// of big-endian uint32s — total length, op 1, the string's length — and the password; the answer is
    /// [length 8][result], GKD_CONTROL_RESULT_OK being 0 and DENIED 1.
    public func unlock(password: String? = nil) throws {
        if runAs == .toolUser, ToolUser.dropped != nil { return try unlockAsToolUser(password: password ?? self.password) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw StarlineError(.internalError, "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        // A daemon that never answers (stopped, wedged) fails the caller after 30 s instead of blocking its
        // thread, and with it a thread of the test pool, for good.
        var limit = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(scratch.file("runtime/keyring/control").utf8)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw StarlineError(.internalError, "control socket path too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path + [0]) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            throw StarlineError(.internalError, "cannot connect to the keyring control socket: \(String(cString: strerror(errno)))")
        }
        let secret = Array((password ?? self.password).utf8)
        func be(_ value: Int) -> [UInt8] {
            [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        }
        let packet: [UInt8] = [0] + be(12 + secret.count) + be(1) + be(secret.count) + secret
        guard packet.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == packet.count else {
            throw StarlineError(.internalError, "cannot write to the keyring control socket")
        }
        var answer = [UInt8](repeating: 0, count: 8)
        var got = 0
        while got < 8 {
            let n = answer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, 8 - got) }
            guard n > 0 else {
                throw StarlineError(
                    .internalError,
                    n < 0 ? "the keyring control socket did not answer within 30 s" : "the keyring control socket closed early")
            }
            got += n
        }
        let result = answer[4...].reduce(0) { $0 << 8 | Int($1) }
        guard result == 0 else { throw StarlineError(.internalError, "gnome-keyring refused the unlock (result \(result))") }
    }

    /// `unlock`, from a process of the daemon's own uid (python3 speaking the same protocol).
    private func unlockAsToolUser(password: String) throws {
        let script = """
            import socket, struct, sys
            secret = sys.stdin.buffer.read()
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(sys.argv[1])
            s.sendall(b"\\0" + struct.pack(">III", 12 + len(secret), 1, len(secret)) + secret)
            answer = b""
            while len(answer) < 8:
                chunk = s.recv(8 - len(answer))
                if not chunk: sys.exit("the keyring control socket closed early")
                answer += chunk
            sys.exit(struct.unpack(">II", answer)[1])
            """
        let run = try Tools.runInstalled(
            "/usr/bin/python3", ["-c", script, scratch.file("runtime/keyring/control")], stdin: Array(password.utf8), runAs: .toolUser)
        guard run.status == 0 else {
            throw StarlineError(.internalError, "gnome-keyring refused the unlock (\(run.status)): \(run.stderrText)")
        }
    }

    /// Whether the login collection is locked, asked over D-Bus (the Locked property).
    public func isLocked() throws -> Bool {
        let run = try dbusSend([
            "--print-reply", "--dest=org.freedesktop.secrets", Self.collectionPath, "org.freedesktop.DBus.Properties.Get",
            "string:org.freedesktop.Secret.Collection", "string:Locked"
        ])
        guard run.status == 0 else { throw StarlineError(.internalError, "Get Locked failed: \(run.stderrText)") }
        return run.stdoutText.contains("boolean true")
    }

    /// Runs a program against this keyring (e.g. secret-tool), with its environment.
    public func run(_ program: String, _ arguments: [String], stdin: [UInt8]? = nil) throws -> ToolRun {
        try Tools.run(program, arguments, stdin: stdin, home: scratch.file("home"), environment: environment, runAs: runAs)
    }

    /// Ends both daemons (SIGTERM, then SIGKILL after 5 s), the keyring first.
    public func stop() {
        reaper.map { _ = $0.waitOrKill(seconds: 0) }
        reaper = nil
        for process in [daemon, bus].compactMap({ $0 }) {
            kill(process.pid, SIGCONT)
            process.signal(SIGTERM)
            _ = process.waitOrKill(seconds: 5)
        }
        daemon = nil
        bus = nil
    }

    private func dbusSend(_ arguments: [String]) throws -> ToolRun {
        try run("/usr/bin/dbus-send", ["--session", "--reply-timeout=5000"] + arguments)
    }

    private func waitForService(seconds: Double) -> Bool {
        let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
        while MonotonicClock.nanoseconds() < deadline {
            if let reply = try? dbusSend([
                "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                "string:org.freedesktop.secrets"
            ]),
                reply.stdoutText.contains("boolean true"),
                FileManager.default.fileExists(atPath: scratch.file("runtime/keyring/control"))
            {
                return true
            }
            usleep(50_000)
        }
        return false
    }
}
