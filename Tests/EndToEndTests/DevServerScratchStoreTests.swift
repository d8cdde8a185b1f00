import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// Without `--db` the dev server keeps its state in a scratch WAL file of its own under the runtime directory,
/// not in an in-memory database that slows as it fills (README, sl-devserver): the file is there while it
/// serves, gone when it stops, and one left by a killed server is removed by the next server started there.
@Suite struct DevServerScratchStoreTests {
    let home = TemporaryDirectory("devserver-scratch")
    var runtime: String { home.path + "/run" }

    func scratchDirectories() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? []).filter { $0.hasPrefix("devserver-") }.sorted()
    }

    func mode(_ path: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int) ?? -1 }

    /// The rows of `table` in the scratch database of `directory`, read by the sqlite3 shell.
    func count(_ table: String, in directory: String) throws -> Int {
        let run = try Tools.runInstalled("/usr/bin/sqlite3", [directory + "/state.db", "SELECT count(*) FROM \(table)"])
        return run.status == 0 ? Int(run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1 : -1
    }

    @Test(
        """
        S16: the default store is a scratch file under the runtime directory, removed at stop; a killed server's by \
        the next
        """)
    func s16ScratchStoreLivesWithTheServer() throws {
        let environment = ["STARLINE_HOME": home.path]
        // --routes serves nothing: it makes no scratch file either.
        let routes = try Tools.run("sl-devserver", ["--routes"], home: home.path, environment: environment)
        #expect(routes.status == 0 && routes.stdoutText.contains("GET /api/me") && !FileManager.default.fileExists(atPath: runtime))
        let first = try DevServerProcess([], environment: environment)
        let made = scratchDirectories()
        try #require(made.count == 1, "\(made)")
        let directory = runtime + "/" + made[0]
        // Private, and the server's real state: the fixture's users are rows of that file.
        #expect(mode(runtime) == 0o700 && mode(directory) == 0o700)
        #expect(FileManager.default.fileExists(atPath: directory + "/state.db-wal"))
        #expect(try count("users", in: directory) == 3)
        #expect(try first.createSessions(count: 50).count == 50)
        let sessions = try count("sessions", in: directory)
        #expect(sessions >= 50)

        // kill -9 leaves the directory behind; the next server removes it and makes its own.
        first.kill()
        #expect(scratchDirectories() == made)
        let second = try DevServerProcess([], environment: environment)
        let now = scratchDirectories()
        #expect(now.count == 1 && now != made, "\(now)")
        // Its state is its own: the fixture again, none of the first server's sessions.
        #expect(try count("sessions", in: runtime + "/" + now[0]) == sessions - 50)
        #expect(second.stop() == 0)
        #expect(scratchDirectories().isEmpty, "stopped cleanly, nothing left: \(scratchDirectories())")
    }

    @Test("S16: a runtime directory that cannot be used keeps the state in memory, and the server still serves")
    func s16UnusableRuntimeDirectoryFallsBackToMemory() throws {
        // A file where the runtime directory would be.
        try FileManager.default.createDirectory(atPath: home.path, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: runtime, contents: Data("not a directory".utf8)))
        let server = try DevServerProcess([], environment: ["STARLINE_HOME": home.path])
        let metadata = try server.request("GET", "/.well-known/oauth-authorization-server")
        #expect(metadata.status == 200)
        #expect(server.stop() == 0)
        #expect(try String(contentsOfFile: runtime, encoding: .utf8) == "not a directory")
    }
}
