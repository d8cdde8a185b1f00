import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// The harness's own promises, on which every end-to-end test leans: a child's end is seen when *it* ends,
/// whatever other children the tests keep running meanwhile, and a child that hangs is killed, not waited
/// for forever.
@Suite struct TestHarnessTests {
    /// Foundation's `Process` learned of a child's exit through a socket the child inherited without
    /// close-on-exec; a server started meanwhile by another thread inherited it too, and `waitUntilExit`
    /// then waited for that server. With both threads of the pool taken by such waits, the test run hung.
    @Test("a short child's end is seen while servers started at the same moment on another thread run on")
    func aChildsEndIsSeenWhileSiblingsStartedMeanwhileRun() throws {
        let servers = Locked<[DevServerProcess]>([])
        let starting = startThread {
            for _ in 0..<6 {
                if let server = try? DevServerProcess() { servers.withLock { $0.append(server) } }
            }
        }
        let quick = DispatchGroup()
        quick.enter()
        let statuses = Locked<[Int32]>([])
        Thread {
            for _ in 0..<40 {
                let status = (try? Tools.runInstalled("/bin/true", []).status) ?? -1
                statuses.withLock { $0.append(status) }
            }
            quick.leave()
        }.start()
        // The servers run until this test stops them, below: a quick run that waited for one of them would
        // still be waiting here.
        let seen = quick.wait(timeout: .now() + 120) == .success
        starting.wait()
        #expect(seen, "a run of /bin/true did not end while the servers ran: its end waited for another child")
        #expect(servers.withLock { $0.count } == 6)
        for server in servers.withLock({ $0 }) { #expect(server.stop() == 0) }
        _ = quick.wait(timeout: .now() + 60)
        #expect(statuses.withLock { $0 } == Array(repeating: 0, count: 40))
    }

    @Test("a tool that hangs is killed after the wait limit, and its stderr names it")
    func aHangingToolIsKilledAndNamed() throws {
        let home = TemporaryDirectory("harness-hang")
        let sleeper = try Tools.spawn("/bin/sleep", ["600"], home: home.path)
        // What `wait()` does after `RunningTool.waitLimit`, with a limit this test can wait for.
        let run = sleeper.wait(killingAfter: 0.5)
        #expect(run.killedBy == SIGKILL && run.status == 128 + SIGKILL)
        #expect(run.stderrText.contains("test harness: killed /bin/sleep 600 after 0.5 s: it hung"), "\(run.stderrText)")
        #expect(sleeper.wait().status == run.status, "later waits return the same result")
    }
}
