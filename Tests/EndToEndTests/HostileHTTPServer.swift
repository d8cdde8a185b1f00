import Foundation
import StarlineCore
#if canImport(Glibc)
import Glibc
#endif

/// A hostile HTTP/1.1 peer for the clients' end-to-end tests: it listens on 127.0.0.1 (a free port), answers
/// each GET with whatever `handler` says (JSON, `Connection: close`) and counts the requests per path. What a
/// real server never does — cursors that go round in a cycle, pages that never end — is written in the test.
final class HostileHTTPServer: @unchecked Sendable {
    // @unchecked: everything is immutable after init; the request log and the stop flag are `Locked`.
    struct Request: Sendable {
        var path: String
        var query: [String: String]
        /// When it was read (`MonotonicClock` nanoseconds).
        var arrived: UInt64 = 0
    }

    typealias Handler = @Sendable (Request) -> (status: Int, body: JSON)

    let port: Int
    var baseURL: String { "http://127.0.0.1:\(port)" }
    private let listener: Int32
    private let handler: Handler
    private let log = Locked<[Request]>([])
    private let stopped = Locked(false)

    init(_ handler: @escaping Handler) throws {
        self.handler = handler
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw StarlineError(.internalError, "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, listen(fd, 128) == 0 else {
            close(fd)
            throw StarlineError(.internalError, "bind/listen: \(String(cString: strerror(errno)))")
        }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        // The threads hold the parts they use, not the server: releasing it closes the listener, which ends them.
        let (listening, stopped, log) = (self.listener, self.stopped, self.log)
        Thread.detachNewThread {
            while true {
                let connection = accept(listening, nil, nil)
                if connection < 0 {
                    if stopped.withLock({ $0 }) { return }
                    continue
                }
                Thread.detachNewThread { Self.serve(connection, handler, log) }
            }
        }
    }

    deinit {
        stopped.withLock { $0 = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    /// Requests whose path is `path`.
    func count(_ path: String) -> Int { log.withLock { $0.filter { $0.path == path }.count } }

    /// Every request so far.
    var requests: [Request] { log.withLock { $0 } }

    private static func serve(_ connection: Int32, _ handler: Handler, _ log: Locked<[Request]>) {
        defer { close(connection) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let end = Array("\r\n\r\n".utf8)
        while received.count < 65_536 {
            let n = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return }
            received += chunk[..<n]
            if received.count >= 4, received.indices.dropLast(3).contains(where: { Array(received[$0..<$0 + 4]) == end }) { break }
        }
        let head = String(decoding: received, as: UTF8.self)
        let requestLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let target = requestLine.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
        let parts = target.split(separator: "?", maxSplits: 1).map(String.init)
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                query[kv[0]] = kv.count == 2 ? kv[1] : ""
            }
        }
        let request = Request(path: parts.first ?? "/", query: query, arrived: MonotonicClock.nanoseconds())
        log.withLock { $0.append(request) }
        let (status, json) = handler(request)
        let body = Array((json.serialized() + "\n").utf8)
        let response =
            Array(
                "HTTP/1.1 \(status) X\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8)
            + body
        var sent = 0
        while sent < response.count {
            let n = response[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    /// `{"error":{"code":…,"message":…}}`
    static func error(_ code: String) -> JSON {
        .object([("error", .object([("code", .string(code)), ("message", .string("hostile test server"))]))])
    }
}
