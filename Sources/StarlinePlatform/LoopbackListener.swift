#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import StarlineCore
import StarlineCrypto

/// The browser login's redirect target (RFC 8252 §7.3): bound before the authorization URL is built, so
/// `redirect_uri` names the port actually held; accepts exactly one valid `/callback` request and
/// ignores other paths (`/favicon.ico`), answering with a small "you can close this tab" page.
public final class LoopbackListener: @unchecked Sendable {
    // @unchecked: the socket is used by one waiting thread at a time; `close` is idempotent.
    public let port: UInt16
    public var redirectURI: String { "http://127.0.0.1:\(port)/callback" }
    private var socketFD: Int32

    /// Binds 127.0.0.1:`port` (0 picks a free one; a fixed port suits `ssh -L`).
    public init(port: UInt16 = 0) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw StarlineError(.internalError, "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(fd, 8) == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            throw StarlineError(.usage, "cannot listen on 127.0.0.1:\(port) for the login redirect: \(message)",
                                details: .object([("port", .int(Int(port)))]))
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.port = UInt16(bigEndian: actual.sin_port)
        socketFD = fd
    }

    deinit { close() }

    public func close() {
        if socketFD >= 0 { Glibc.close(socketFD) }
        socketFD = -1
    }

    /// Waits (off the caller's thread) for the one `/callback` request carrying `state`.
    public func waitForCallback(state: String, deadline: Int64) async throws -> StarlightClient.Callback {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { [self] in
                continuation.resume(with: Result { try self.acceptCallback(state: state, deadline: deadline) })
            }
        }
    }

    func acceptCallback(state: String, deadline: Int64) throws -> StarlightClient.Callback {
        while true {
            let remaining = deadline - Timestamp.now().seconds
            guard remaining > 0 else { throw StarlineError(.noResult, "no browser callback arrived before the login expired") }
            var poller = pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining, 60) * 1000))
            if ready < 0 && errno != EINTR { throw StarlineError(.internalError, "poll: \(String(cString: strerror(errno)))") }
            guard ready > 0 else { continue }
            let client = accept(socketFD, nil, nil)
            guard client >= 0 else { continue }
            defer { Glibc.close(client) }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            guard let target = Self.readRequestTarget(client) else { continue }
            guard target.hasPrefix("/callback"), let url = WebURL("http://127.0.0.1" + target), url.path == "/callback" else {
                Self.respond(client, status: "404 Not Found", body: "Not found.")
                continue
            }
            let callback = StarlightClient.Callback(code: url.queryValue("code"), state: url.queryValue("state"), error: url.queryValue("error"))
            guard let got = callback.state, Sodium.constantTimeEquals(Array(got.utf8), Array(state.utf8)) else {
                // Someone else's request (or a stale tab): not ours, keep waiting for the real one.
                Self.respond(client, status: "400 Bad Request", body: "This sign-in link is not the one sl-login is waiting for.")
                continue
            }
            Self.respond(client, status: "200 OK", body: callback.error == nil
                ? "Signed in. You can close this tab and return to the terminal."
                : "The sign-in was not completed (\(callback.error!)). You can close this tab.")
            return callback
        }
    }

    /// The request target of `GET TARGET HTTP/1.x`, reading until the end of the request line.
    static func readRequestTarget(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        while bytes.count < 16 * 1024, !bytes.contains(0x0A) {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return nil }
            bytes += chunk[0..<n]
        }
        guard let line = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", maxSplits: 1).first else { return nil }
        let parts = line.split(separator: " ")
        guard parts.count == 3, parts[0] == "GET" else { return nil }
        return String(parts[1])
    }

    static func respond(_ fd: Int32, status: String, body: String) {
        let html = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Starline</title></head><body style=\"font-family:system-ui,sans-serif;margin:3rem\"><p>\(body)</p></body></html>"
        let response = "HTTP/1.1 \(status)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(html.utf8.count)\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n\(html)"
        var bytes = Array(response.utf8)
        _ = send(fd, &bytes, bytes.count, Int32(MSG_NOSIGNAL))
    }
}
