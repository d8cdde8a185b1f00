import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// A file named by a path is opened once, checked with fstat on that descriptor, and read from it, bounded
/// (README, Security notes: every read of untrusted input is bounded before it is buffered). Input files (imports,
/// batches, plans) may be regular files, FIFOs or devices but not directories or sockets, and a FIFO nobody
/// writes never hangs the open; state files (workspace.json, config.json) must be regular files of the user
/// that nobody else may write; standard input is bounded for every command that reads it whole.
@Suite struct InputFileTrustTests {
    let home = TemporaryDirectory("input-file-trust")

    func run(_ tool: String, _ arguments: [String], stdinPath: String? = nil, environment: [String: String] = [:]) throws -> ToolRun {
        // Bounded: the old code hung (a FIFO's open) or grew without end (/dev/zero); 60 s, then SIGKILL.
        try Tools.spawn(tool, arguments, stdinPath: stdinPath, home: home.path, environment: environment).waitOrKill(seconds: 60)
    }

    @Test("an import from a FIFO nobody writes ends (no hang in open); a directory is a usage error")
    func importFromSpecialFilesEnds() throws {
        let fifo = home.file("import.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let fromFIFO = try run("sl-tasks", ["import", fifo])
        #expect(fromFIFO.killedBy == nil, "still blocked in open after 60 s")
        #expect(fromFIFO.status == 12, "\(fromFIFO.stderrText)")
        let fromDirectory = try run("sl-tasks", ["import", home.path])
        #expect(fromDirectory.status == 2 && fromDirectory.stderrText.contains("is a directory"), "\(fromDirectory.stderrText)")
        let plan = try run("sl-sessions", ["journal", "verify", "--plan", home.path, home.file("none.jsonl")])
        #expect(plan.status == 2 && plan.stderrText.contains("the plan \(home.path): it is a directory"), "\(plan.stderrText)")
    }

    @Test("an endless import or standard input stops at its limit: DATA_ERROR, not unbounded memory")
    func endlessInputStopsAtTheLimit() throws {
        let importZeros = try run("sl-tasks", ["import", "/dev/zero"])
        #expect(importZeros.killedBy == nil && importZeros.status == 12, "\(importZeros.stderrText)")
        #expect(importZeros.errorCode == "DATA_ERROR")
        let token = try run("sl-login", ["--with-token", "--api", "http://127.0.0.1:9"], stdinPath: "/dev/zero")
        #expect(token.killedBy == nil && token.status == 12 && token.errorCode == "DATA_ERROR", "\(token.stderrText)")
        let callback = try run("sl-login", ["complete", "-", "--api", "http://127.0.0.1:9"], stdinPath: "/dev/zero")
        #expect(callback.killedBy == nil && callback.status == 12 && callback.errorCode == "DATA_ERROR", "\(callback.stderrText)")
        let notes = try run("sl-tasks", ["add", "title", "--notes", "-"], stdinPath: "/dev/zero")
        #expect(notes.killedBy == nil && notes.status == 12 && notes.errorCode == "DATA_ERROR", "\(notes.stderrText)")
    }

    @Test(
        "workspace.json and config.json owned by another user, writable by others, or a FIFO are refused, never read",
        .requiresRoot("gives the files to another uid (chown 65534)"))
    func stateFilesMustBeTheUsers() throws {
        let data = home.path + "/starline/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let workspace = data + "/workspace.json"
        try #"{"version":1,"tasks":[],"sites":[],"recent":[]}"#.write(toFile: workspace, atomically: true, encoding: .utf8)
        #expect(chmod(workspace, 0o600) == 0)
        #expect(try run("sl-tasks", ["list"]).status == 0)

        // Readable, so that the tool (an ordinary user) can open it and then refuses it for its owner.
        #expect(chown(workspace, 65534, 65534) == 0 && chmod(workspace, 0o644) == 0)
        let foreign = try run("sl-tasks", ["list"])
        #expect(foreign.status == 10 && foreign.errorCode == "INSECURE_PERMISSIONS", "\(foreign.stderrText)")
        #expect(chown(workspace, 0, 0) == 0 && chmod(workspace, 0o622) == 0)
        let writable = try run("sl-tasks", ["list"])
        #expect(writable.status == 10 && writable.stderrText.contains("is writable by others"), "\(writable.stderrText)")

        #expect(unlink(workspace) == 0 && mkfifo(workspace, 0o600) == 0)
        let fifo = try run("sl-tasks", ["list"])
        #expect(fifo.killedBy == nil && fifo.status == 10 && fifo.stderrText.contains("not a regular file"), "\(fifo.stderrText)")

        let config = home.path + "/starline/config"
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let configFile = config + "/config.json"
        // A profile that sends the token elsewhere: from a file someone else wrote, it must not be believed.
        try #"{"profiles":{"default":{"api":"http://127.0.0.1:9"}}}"#.write(toFile: configFile, atomically: true, encoding: .utf8)
        // Readable by the tool whatever the umask (CI's may be 077), so that it is refused for its owner, not unread.
        #expect(chown(configFile, 65534, 65534) == 0 && chmod(configFile, 0o644) == 0)
        let status = try run("sl-login", ["status"])
        #expect(status.status == 10 && status.errorCode == "INSECURE_PERMISSIONS", "\(status.stderrText)")
    }
}
