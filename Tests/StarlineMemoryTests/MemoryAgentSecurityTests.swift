import CProcess
import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
@testable import StarlineMemory
import StarlineTestSupport
import Testing

@Suite("Memory unlock agent: directories, other users, process hardening")
final class MemoryAgentSecurityTests: @unchecked Sendable {
    let fixture: AgentFixture
    init() throws { fixture = try AgentFixture() }

    private func serverError() -> StarlineError? {
        starlineError {
            _ = try MemoryAgentServer(
                vaultID: self.fixture.vaultID, key: AgentFixture.randomKey(), ttl: nil, idle: nil,
                environment: self.fixture.environment)
        }
    }

    private func clientError() -> StarlineError? {
        starlineError { _ = try MemoryAgentClient.fetchKey(vaultID: self.fixture.vaultID, environment: self.fixture.environment) }
    }

    @Test("a socket directory open to group or others is refused by agent and client (INSECURE_PERMISSIONS)")
    func openDirectoryRefused() throws {
        #expect(mkdir(fixture.socketDirectory, 0o700) == 0)
        for mode: mode_t in [0o777, 0o1777, 0o750, 0o701] {
            #expect(chmod(fixture.socketDirectory, mode) == 0)
            #expect(serverError()?.code == .insecurePermissions, "mode \(String(mode, radix: 8))")
            #expect(clientError()?.code == .insecurePermissions, "mode \(String(mode, radix: 8))")
        }
        #expect(chmod(fixture.socketDirectory, 0o700) == 0)
        let key = AgentFixture.randomKey()
        try fixture.serve(key)
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == key)
    }

    @Test("a socket directory owned by another user (nobody) is refused, even at 0700", .requiresRoot("chowns the directory to nobody"))
    func foreignDirectoryRefused() throws {
        #expect(mkdir(fixture.socketDirectory, 0o700) == 0)
        #expect(chown(fixture.socketDirectory, 65534, 65534) == 0)
        let server = serverError()
        #expect(server?.code == .insecurePermissions)
        #expect(server?.message.contains("another user") == true)
        #expect(clientError()?.code == .insecurePermissions)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.socketDirectory).isEmpty)
    }

    @Test("a symbolic link in place of the socket directory is refused, not followed")
    func linkedDirectoryRefused() throws {
        let elsewhere = fixture.dir + "/elsewhere"
        #expect(mkdir(elsewhere, 0o700) == 0)
        #expect(symlink(elsewhere, fixture.socketDirectory) == 0)
        #expect(serverError()?.code == .storage)
        #expect(clientError()?.code == .storage)
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
    }

    @Test(
        "SO_PEERCRED: a client of another uid (setpriv → nobody) that reaches the socket gets no reply at all",
        .requiresRoot("runs the client as nobody (setpriv)"))
    func otherUIDClientRefused() throws {
        #expect(FileManager.default.isExecutableFile(atPath: setpriv), "util-linux setpriv is needed for this test")
        #expect(FileManager.default.isExecutableFile(atPath: perl), "perl is needed for this test")
        let key = AgentFixture.randomKey()
        let server = try fixture.serve(key)
        // Open the way for nobody (the file system would stop it first): only the credentials check is left.
        for path in [fixture.dir, fixture.runtime, fixture.socketDirectory] { #expect(chmod(path, 0o711) == 0) }
        #expect(chmod(server.socketPath, 0o777) == 0)
        let script = """
            use Socket; $| = 1; $SIG{PIPE} = 'IGNORE';
            socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
            connect($s, pack_sockaddr_un($ARGV[0])) or die "connect: $!";
            print "uid $< connected\\n";
            syswrite($s, "KEY $ARGV[1]\\n");
            my $reply = ''; my $n = sysread($s, $reply, 4096);
            print(($n ? "reply: $reply" : "eof") . "\\n");
            """
        let child = try ChildProcess(setpriv, asNobody + [perl, "-e", script, server.socketPath, fixture.vaultID])
        let run = child.wait()
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(run.stdoutText == "uid 65534 connected\neof\n")
        // The agent is unharmed and still serves its own user (with the directory private again).
        for path in [fixture.runtime, fixture.socketDirectory] { #expect(chmod(path, 0o700) == 0) }
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: fixture.environment) == key)
    }

    @Test(
        "SO_PEERCRED on the client: a fake agent run by another uid is refused, and nothing is sent to it",
        .requiresRoot("runs the fake agent as nobody and chowns its socket"))
    func fakeAgentRefused() throws {
        #expect(FileManager.default.isExecutableFile(atPath: setpriv), "util-linux setpriv is needed for this test")
        let planted = fixture.dir + "/nobody"
        #expect(mkdir(planted, 0o700) == 0)
        #expect(chown(planted, 65534, 65534) == 0)
        #expect(chmod(fixture.dir, 0o711) == 0)
        let script = """
            use Socket; $| = 1; $SIG{PIPE} = 'IGNORE';
            socket(my $l, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
            bind($l, pack_sockaddr_un($ARGV[0])) or die "bind: $!";
            listen($l, 5) or die "listen: $!";
            print "listening\\n";
            while (accept(my $c, $l)) {
                my $d = ''; sysread($c, $d, 4096); $d =~ s/\\n/|/g; print "request:$d\\n";
                syswrite($c, "OK " . ("00" x 32) . "\\n"); close($c);
            }
            """
        let fake = try ChildProcess(setpriv, asNobody + [perl, "-e", script, planted + "/fake.sock"])
        #expect(eventually(seconds: 10) { fake.text.contains("listening") })
        #expect(mkdir(fixture.socketDirectory, 0o700) == 0)
        #expect(rename(planted + "/fake.sock", fixture.socketPath) == 0)

        // First line of defence: the socket file is not ours.
        let byOwner = clientError()
        #expect(byOwner?.code == .insecurePermissions)
        #expect(byOwner?.details?["owner"]?.intValue == 65534)
        // With the file made to look ours, the listener's credentials still give it away.
        #expect(lchown(fixture.socketPath, 0, 0) == 0)
        let byPeer = clientError()
        #expect(byPeer?.code == .insecurePermissions)
        #expect(byPeer?.details?["peerUid"]?.intValue == 65534)
        #expect(
            starlineError { _ = try MemoryAgentClient.status(vaultID: self.fixture.vaultID, environment: self.fixture.environment) }?.code
                == .insecurePermissions)

        #expect(eventually(seconds: 10) { fake.text.components(separatedBy: "request:").count == 3 })
        let output = fake.kill()
        // It was connected to twice (fetchKey, status) and heard nothing either time.
        #expect(output == "listening\nrequest:\nrequest:\n")
    }

    // The helpers on this process; the agent itself is checked through /proc in SLMemoryAgentTests.
    @Test("the hardening helpers: make_undumpable clears PR_GET_DUMPABLE and sets RLIMIT_CORE to 0 (soft and hard)")
    func hardeningHelpers() throws {
        let dumpable = starline_process_dumpable()
        var core = rlimit()
        #expect(getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &core) == 0)
        defer {
            // Put this test process back as it was (root may raise the hard limit again).
            _ = starline_process_set_dumpable(dumpable)
            _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &core)
        }
        #expect(starline_process_make_undumpable() == 0)
        #expect(starline_process_dumpable() == 0)
        var after = rlimit()
        #expect(getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &after) == 0)
        #expect(after.rlim_cur == 0 && after.rlim_max == 0)
    }

    @Test(
        "socket directory rule: XDG_RUNTIME_DIR, STARLINE_HOME, then /run/user/<uid> if private, then the state dir",
        .requiresRoot("gives a /run/user directory to another uid (chown 65534)"))
    func socketDirectoryRule() throws {
        let uid = geteuid()
        let base = fixture.dir + "/run-user"
        #expect(mkdir(base, 0o755) == 0)
        func rule(_ environment: Environment) -> String {
            MemoryAgentClient.socketDirectory(environment: environment, uid: uid, systemRuntimeBase: base)
        }
        #expect(rule(["XDG_RUNTIME_DIR": "/run/x", "HOME": "/h"]) == "/run/x/starline")
        #expect(rule(["STARLINE_HOME": "/s", "XDG_RUNTIME_DIR": "/run/x"]) == "/s/run")
        // No /run/user/<uid>: StarlinePaths' fallback in the home (a relative XDG_RUNTIME_DIR is ignored).
        #expect(rule(["HOME": "/h", "XDG_RUNTIME_DIR": "relative"]) == "/h/.local/state/starline/run")
        #expect(mkdir(base + "/\(uid)", 0o700) == 0)
        #expect(rule(["HOME": "/h"]) == base + "/\(uid)/starline")
        // Not private, or not ours: not used.
        #expect(chmod(base + "/\(uid)", 0o755) == 0)
        #expect(rule(["HOME": "/h"]) == "/h/.local/state/starline/run")
        #expect(chmod(base + "/\(uid)", 0o700) == 0)
        #expect(chown(base + "/\(uid)", 65534, 65534) == 0)
        #expect(rule(["HOME": "/h"]) == "/h/.local/state/starline/run")
        #expect(
            MemoryAgentClient.socketPath(vaultID: "ab12", environment: ["XDG_RUNTIME_DIR": "/run/x"])
                == "/run/x/starline/memory-agent-ab12.sock")
    }

    @Test("a socket directory deeper than sun_path's 108 bytes still works (bound and reached through /proc/self/fd)")
    func deepDirectory() throws {
        var home = fixture.dir + "/h"
        while home.utf8.count < 150 { home += "/ddddddddddddddddddddd" }
        let environment = Environment(["STARLINE_HOME": home])
        let key = AgentFixture.randomKey()
        let server = try MemoryAgentServer(vaultID: fixture.vaultID, key: key, ttl: nil, idle: nil, environment: environment)
        let thread = startThread { _ = server.run() }
        defer { server.stop(); thread.wait() }
        #expect(server.socketPath == home + "/run/memory-agent-\(fixture.vaultID).sock")
        #expect(server.socketPath.utf8.count > 108)
        #expect(permissionBits(home + "/run") == 0o700)
        #expect(try MemoryAgentClient.fetchKey(vaultID: fixture.vaultID, environment: environment) == key)
    }
}
