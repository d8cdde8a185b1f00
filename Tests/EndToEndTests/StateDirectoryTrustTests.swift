import Foundation
import Glibc
import StarlineCore
import StarlineSQLite
import StarlineTestSupport
import Testing

/// The built tools refuse a state or data directory that another user owns or that group or
/// others may write (INSECURE_PERMISSIONS, exit 10, naming the directory, as ssh does), and refuse a symbolic
/// link where their own lock, database or key file belongs (STORAGE_ERROR, exit 10), never following it.
/// The tests run as root here, which is what lets them chown a directory to another uid.
@Suite struct StateDirectoryTrustTests {
    static let otherUID: uid_t = 12345

    func harness() throws -> SessionToolsHarness {
        try SessionToolsHarness(server: try DevServerProcess())
    }

    /// The per-key lock of `withState`, `<key digest>.lock`: the one that is not the verification lock, the
    /// device key's or the host id's.
    static func keyLockName(_ state: String) throws -> String? {
        try FileManager.default.contentsOfDirectory(atPath: state + "/locks").first {
            $0.hasSuffix(".lock") && !$0.hasSuffix(".verify.lock") && !$0.hasPrefix("device-key") && !$0.hasPrefix("host-id")
        }
    }

    /// The error object of a run, and its path detail.
    func error(_ run: ToolRun) -> (code: String?, message: String, path: String?) {
        let json = try? run.error()
        return (
            json?["error"]?["code"]?.stringValue, json?["error"]?["message"]?.stringValue ?? run.stderrText,
            json?["error"]?["details"]?["path"]?.stringValue
        )
    }

    // MARK: The session store's directories

    /// A state directory writable by group or others, or owned by another user, is refused by
    /// sl-login and sl-restore alike; sl-restore still prints its state record. Fixing the mode or owner fixes it.
    @Test(
        "an insecure state or locks directory is INSECURE_PERMISSIONS naming it; sl-restore still prints its state",
        .requiresRoot("gives the directory to another uid (chown)"), arguments: ["state", "state/locks"])
    func insecureStateDirectory(_ relative: String) throws {
        let h = try harness()
        try h.storeLogin("bob")
        let directory = h.home.file("starline/" + relative)
        for mode: mode_t in [0o777, 0o775, 0o720] {
            #expect(chmod(directory, mode) == 0)
            let status = try h.run("sl-login", ["status"])
            #expect(status.status == 10, "mode \(String(mode, radix: 8)): \(status.stderrText)")
            let e = error(status)
            #expect(e.code == "INSECURE_PERMISSIONS" && e.path == directory)
            #expect(e.message.contains("\(directory) is writable by group or others"), "\(e.message)")
            let restore = try h.restore()
            #expect(restore.status == 10 && restore.run.errorCode == "INSECURE_PERMISSIONS")
            #expect(restore.state == "keptUnverified", "the state record is printed whatever the exit code")
        }
        #expect(chmod(directory, 0o700) == 0)
        #expect(chown(directory, Self.otherUID, Self.otherUID) == 0)
        let foreign = try h.restore()
        #expect(foreign.status == 10 && foreign.state == "keptUnverified")
        #expect(error(foreign.run).message == "\(directory) is owned by another user (uid \(Self.otherUID), not \(ToolUser.uid))")
        #expect(chown(directory, ToolUser.uid, ToolUser.gid) == 0)
        #expect(try h.restore().state == "valid")
    }

    // MARK: Symbolic links where the tools' own files belong

    /// sessions.db, device.key, a lock file and the revocation marker are never followed
    /// through a symbolic link: the run fails with STORAGE_ERROR naming the link, and the link's target is
    /// neither created nor changed.
    @Test(
        "a symlinked database, device key or lock file is STORAGE_ERROR naming it; the target is untouched",
        arguments: ["sessions.db", "device.key", "lock"])
    func symlinkedStoreFile(_ which: String) throws {
        let h = try harness()
        try h.storeLogin("bob")
        let state = h.home.file("starline/state")
        let path: String
        if which == "lock" {
            path = state + "/locks/" + (try #require(try Self.keyLockName(state)))
        } else {
            path = state + "/" + which
        }
        // The real file moves elsewhere; a link takes its place. A dangling link is tried too (O_CREAT would make its target).
        let elsewhere = h.home.file("elsewhere-" + which)
        #expect(rename(path, elsewhere) == 0)
        let before = FileManager.default.contents(atPath: elsewhere)
        #expect(symlink(elsewhere, path) == 0)
        let restore = try h.restore()
        #expect(restore.status == 10, "\(restore.run.stderrText)")
        #expect(restore.state == "keptUnverified")
        let e = error(restore.run)
        #expect(e.code == "STORAGE_ERROR" && e.path == path, "\(restore.run.stderrText)")
        #expect(e.message.contains("\(path) is a symbolic link"), "\(e.message)")
        #expect(FileManager.default.contents(atPath: elsewhere) == before)

        let dangling = h.home.file("never-created")
        #expect(unlink(path) == 0 && symlink(dangling, path) == 0)
        #expect(try h.restore().status == 10)
        #expect(access(dangling, F_OK) != 0, "the link's target was created")

        #expect(unlink(path) == 0 && rename(elsewhere, path) == 0)
        #expect(try h.restore().state == "valid")
    }

    /// The S13 revocation marker is read without following a link.
    @Test("a symlinked revocation marker is STORAGE_ERROR, not read through")
    func symlinkedRevocationMarker() throws {
        let h = try harness()
        try h.storeLogin("bob")
        let state = h.home.file("starline/state")
        let target = h.home.file("marker-target")
        try "someone-else\n".write(toFile: target, atomically: true, encoding: .utf8)
        let digest = try #require(try Self.keyLockName(state)?.dropLast(".lock".count))
        let marker = state + "/sessions.db.revoked-" + digest
        #expect(symlink(target, marker) == 0)
        let restore = try h.restore()
        #expect(restore.status == 10 && error(restore.run).path == marker, "\(restore.run.stderrText)")
        #expect(unlink(marker) == 0)
        #expect(try h.restore().state == "valid")
    }

    // MARK: sl-tasks

    func tasks(_ h: TemporaryDirectory, _ arguments: [String]) throws -> ToolRun {
        try Tools.run("sl-tasks", arguments, home: h.path)
    }

    /// The default data directory and a directory named with --workspace are checked the
    /// same way, for reads and writes; a sticky world-writable directory (what /tmp is) is refused too, with
    /// advice that fits it.
    @Test(
        "sl-tasks refuses a workspace directory that is group/world-writable, sticky-shared or another user's",
        .requiresRoot("gives a directory to another uid (chown)"))
    func insecureWorkspaceDirectory() throws {
        let home = TemporaryDirectory("trust-tasks")
        #expect(try tasks(home, ["add", "first"]).status == 0)
        let data = home.file("starline/data")
        #expect(chmod(data, 0o777) == 0)
        for words in [["add", "second"], ["list"]] {
            let r = try tasks(home, words)
            #expect(r.status == 10 && r.errorCode == "INSECURE_PERMISSIONS", "\(words): \(r.stderrText)")
            #expect(error(r).message.contains("\(data) is writable by group or others (mode 0777); run chmod 700 \(data)"))
        }
        #expect(chmod(data, 0o700) == 0)
        #expect(try tasks(home, ["list"]).status == 0)

        let shared = home.file("shared")
        #expect(mkdir(shared, 0o700) == 0 && chmod(shared, 0o1777) == 0)
        let sticky = try tasks(home, ["add", "x", "--workspace", shared + "/ws.json"])
        #expect(sticky.status == 10 && sticky.errorCode == "INSECURE_PERMISSIONS")
        #expect(error(sticky).message.contains("(mode 1777); keep the file in a directory only you can write"), "\(sticky.stderrText)")
        #expect(access(shared + "/ws.json", F_OK) != 0 && access(shared + "/ws.json.lock", F_OK) != 0)

        let foreign = home.file("foreign")
        #expect(mkdir(foreign, 0o700) == 0 && chown(foreign, Self.otherUID, Self.otherUID) == 0)
        let r = try tasks(home, ["list", "--workspace", foreign + "/ws.json"])
        #expect(r.status == 10 && r.errorCode == "INSECURE_PERMISSIONS" && error(r).path == foreign, "\(r.stderrText)")
    }

    /// A symlinked workspace.json keeps working, and the directory checked is the
    /// target's (where the lock, temporary file and .bak go); a symlinked lock file there is refused.
    @Test("a symlinked workspace.json is checked at its target's directory; a symlinked lock file is refused")
    func symlinkedWorkspace() throws {
        let home = TemporaryDirectory("trust-link")
        #expect(mkdir(home.file("dotfiles"), 0o700) == 0)
        // The link is followed with realpath(3), so messages name the target's canonical path.
        let dotfiles = try #require(
            realpath(home.file("dotfiles"), nil).map { p in
                defer { free(p) }; return String(cString: p)
            })
        let link = home.file("ws.json")
        #expect(symlink(dotfiles + "/ws.json", link) == 0)
        #expect(try tasks(home, ["add", "linked", "--workspace", link]).status == 0)
        #expect(FileManager.default.fileExists(atPath: dotfiles + "/ws.json"))
        // The link's own directory may be anything the user likes; the target's is what matters.
        #expect(chmod(dotfiles, 0o777) == 0)
        let open = try tasks(home, ["add", "again", "--workspace", link])
        #expect(open.status == 10 && error(open).path == dotfiles, "\(open.stderrText)")
        #expect(chmod(dotfiles, 0o700) == 0)

        let lock = dotfiles + "/ws.json.lock"
        #expect(unlink(lock) == 0 && symlink(home.file("lock-target"), lock) == 0)
        let locked = try tasks(home, ["add", "again", "--workspace", link])
        #expect(locked.status == 10 && locked.errorCode == "STORAGE_ERROR", "\(locked.stderrText)")
        #expect(error(locked).message.contains("lock file \(lock) is a symbolic link"))
        #expect(access(home.file("lock-target"), F_OK) != 0)
    }
}
