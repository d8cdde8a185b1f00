import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// `sl-devserver --db FILE` keeps its dev token with its data: a helper script that read the token once
/// keeps working after the server restarts on the same file.
@Suite struct DevTokenPersistenceTests {
    @Test func aServerRestartedOnTheSameDatabaseKeepsItsDevToken() throws {
        let dir = TemporaryDirectory("devtoken")
        let db = dir.file("dev.db")
        let first = try DevServerProcess(["--db", db])
        let token = first.devToken
        #expect(try first.dev("GET", "/__dev/counters").status == 200)
        #expect(first.stop() == 0)

        let second = try DevServerProcess(["--db", db])
        #expect(second.devToken == token)
        // The old token opens the control routes of the new process; a reset keeps it.
        #expect(try second.request("GET", "/__dev/counters", headers: [("X-Dev-Token", token)]).status == 200)
        #expect(try second.dev("POST", "/__dev/reset").status / 100 == 2)
        second.kill()  // as a crash or a reboot ends it
        #expect(try DevServerProcess(["--db", db]).devToken == token)

        // Another database, or none, has a token of its own.
        let other = try DevServerProcess(["--db", dir.file("other.db")])
        #expect(other.devToken != token)
        let memory = try DevServerProcess()
        #expect(memory.devToken != token)
        #expect(try memory.request("GET", "/__dev/counters", headers: [("X-Dev-Token", token)]).status == 401)
    }

    @Test func anExplicitDevTokenWinsAndIsKeptForLaterRuns() throws {
        let dir = TemporaryDirectory("devtoken")
        let db = dir.file("dev.db")
        let random = try DevServerProcess(["--db", db]).devToken
        let explicit = try DevServerProcess(["--db", db], environment: ["STARLINE_DEV_TOKEN": "helper-script-token"])
        #expect(explicit.devToken == "helper-script-token" && explicit.devToken != random)
        explicit.stop()
        #expect(try DevServerProcess(["--db", db]).devToken == "helper-script-token")
        #expect(try DevServerProcess(["--db", db, "--dev-token", "another"]).devToken == "another")
        #expect(try DevServerProcess(["--db", db]).devToken == "another")
    }
}
