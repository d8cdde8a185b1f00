import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Stopping is prompt: on SIGTERM sl-devserver answers its long polls, closes keep-alive connections and ends
/// injected delays, exits 0 and frees its port, whatever its clients do; a port in use is ADDRESS_IN_USE
/// (exit 7), an environment failure reported without usage text.
@Suite struct DevServerStopTests {
    /// A curl request on a thread of its own; `finish()` waits for its result.
    final class Request: @unchecked Sendable {
        private let done = DispatchGroup()
        private var result: HTTPResult?

        init(_ body: @escaping @Sendable () throws -> HTTPResult) {
            done.enter()
            Thread.detachNewThread { [self] in
                result = try? body()
                done.leave()
            }
        }

        /// True once the request has its result (or failed).
        var finished: Bool { done.wait(timeout: .now()) == .success }

        func finish() -> HTTPResult? {
            done.wait()
            return result
        }
    }

    /// True when 127.0.0.1:`port` can be bound (no one listens there).
    func portIsFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    @Test(
        """
        SIGTERM ends a 30 s long poll (answered, empty), an idle keep-alive connection, a 45-second injected \
        delay and a held request; exit 0, port free
        """)
    func stopsPromptlyWhateverItsClientsDo() throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        let cursor = try #require(try server.request("GET", "/chat/v1/sync", token: bob.token).json()["cursor"]?.stringValue)
        let poll = Request { try server.request("GET", "/chat/v1/sync?since=\(cursor)&timeout=30", token: bob.token, maxTime: 60) }
        #expect(
            try server.dev(
                "POST", "/__dev/faults", .object([("route", .string("GET /api/me")), ("delayMs", .int(45_000)), ("count", .int(1))])
            ).status / 100 == 2)
        let delayed = Request { try server.request("GET", "/api/me", token: bob.token, maxTime: 60) }
        let metadata = "/.well-known/oauth-authorization-server"
        #expect(
            try server.dev("POST", "/__dev/faults", .object([("route", .string("GET " + metadata)), ("hold", .bool(true))])).status == 201)
        let held = Request { try server.request("GET", metadata, maxTime: 60) }
        // An idle keep-alive connection: one request answered, the connection left open.
        let idle = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(idle) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(server.port).bigEndian
        #expect(
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(idle, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0)
        let get = "GET /openapi.yaml HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n\r\n"
        #expect(get.withCString { send(idle, $0, strlen($0), Int32(MSG_NOSIGNAL)) } > 0)
        #expect(try server.waitForRequests("GET /chat/v1/sync", atLeast: 2, seconds: 10), "the long poll reached the server")
        #expect(try server.waitForRequests("GET /api/me", atLeast: 1, seconds: 10), "the delayed request reached the server")
        #expect(try server.waitForRequests("GET /openapi.yaml", atLeast: 1, seconds: 10), "the keep-alive request was served")
        #expect(try server.waitForRequests("GET " + metadata, atLeast: 1, seconds: 10), "the held request reached the server")

        let clock = ContinuousClock(), signalled = clock.now
        let status = server.stop()
        let took = clock.now - signalled
        print("sl-devserver stopped in \(took) with a long poll, a delayed request and a keep-alive connection open")
        #expect(status == 0)
        #expect(took < .seconds(5), "the target is 2 s; it took \(took) (before: until the long poll's 30 s deadline)")
        #expect(portIsFree(server.port), "the port is free once it exited")
        let answered = try #require(poll.finish())
        #expect(
            answered.status == 200 && (try? answered.json()["events"]?.arrayValue?.isEmpty) == true,
            "the long poll was answered with an empty page, not cut off: \(answered.status) \(answered.text)")
        _ = delayed.finish()
        _ = held.finish()
    }

    @Test("a port in use is ADDRESS_IN_USE, exit 7, retryable, with no usage text")
    func aPortInUseIsItsOwnError() throws {
        let first = try DevServerProcess()
        let home = TemporaryDirectory("devserver-busy")
        let run = try Tools.spawn("sl-devserver", ["--port", String(first.port)], home: home.path).waitOrKill(seconds: 30)
        #expect(run.status == 7, "\(run.stderrText)")
        #expect(run.errorCode == "ADDRESS_IN_USE", "\(run.stderrText)")
        #expect(try run.error()["error"]?["retryable"] == .bool(true))
        #expect(!run.stderrText.contains("Usage:"), "\(run.stderrText)")
        #expect(run.stdout.isEmpty, "nothing claims it is listening")
    }
}
