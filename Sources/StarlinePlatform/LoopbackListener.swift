#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineCrypto
import StarlineHTTP

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
        guard LoopbackAddress.bind(fd, port: port) == 0, listen(fd, 8) == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            throw StarlineError(
                .usage, "cannot listen on 127.0.0.1:\(port) for the login redirect: \(message)",
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

    /// Waits (off the caller's thread) up to `seconds` for the one `/callback` request carrying `state`. A wait
    /// on sockets, so on the monotonic clock: the pending login's lifetime, not an instant of the wall clock.
    public func waitForCallback(state: String, within seconds: Int64) async throws -> StarlightClient.Callback {
        let deadline = MonotonicClock.nanoseconds() &+ UInt64(min(max(0, seconds), 86_400)) * 1_000_000_000
        return try await WorkerThreads.awaiting { [self] in try acceptCallback(state: state, deadline: deadline) }
    }

    /// What one connection may take: a browser sends its request line at once, so a connection still without
    /// one after this long is dropped — one slow (or hostile) client never holds the listener.
    static let connectionBudget: UInt64 = 5_000_000_000
    /// Connections served at once; when more arrive the oldest is dropped.
    static let maxConnections = 16
    static let maxRequestBytes = 16 * 1024

    private struct Connection {
        var fd: Int32
        var bytes: [UInt8] = []
        var deadline: UInt64
    }

    /// Serves connections side by side (one poll over the listener and every open connection), each with its
    /// own overall deadline, until the one `/callback` carrying `state` arrives or the pending login's
    /// `deadline` (monotonic nanoseconds) passes — that deadline always wins, whatever the connections do.
    func acceptCallback(state: String, deadline: UInt64) throws -> StarlightClient.Callback {
        var connections: [Connection] = []
        defer { for connection in connections { Glibc.close(connection.fd) } }
        while true {
            let now = MonotonicClock.nanoseconds()
            guard now < deadline else { throw StarlineError(.noResult, "no browser callback arrived before the login expired") }
            // Whole milliseconds, rounded up: the poll below never wakes before the deadline only to spin.
            let remaining = Int64((deadline - now + 999_999) / 1_000_000)
            connections.removeAll { connection in
                if connection.deadline > now { return false }
                Glibc.close(connection.fd)
                return true
            }
            var timeout = min(remaining, 60_000)
            if let soonest = connections.map(\.deadline).min() { timeout = min(timeout, Int64((soonest - now) / 1_000_000) + 1) }
            var pollers =
                [pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0)]
                + connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&pollers, nfds_t(pollers.count), Int32(timeout))
            if ready < 0 && errno != EINTR { throw StarlineError(.internalError, "poll: \(String(cString: strerror(errno)))") }
            guard ready > 0 else { continue }
            // Connections first (their indices are those of the poll), then a new one.
            var finished: [Int] = []
            for (index, poller) in pollers.enumerated().dropFirst() where poller.revents != 0 {
                let slot = index - 1
                switch Self.receive(&connections[slot]) {
                case .waiting: continue
                case .closed: finished.append(slot)
                case .request(let target):
                    finished.append(slot)
                    if let callback = Self.answer(connections[slot].fd, target: target, state: state) {
                        return callback
                    }
                }
            }
            for slot in finished.reversed() { Glibc.close(connections.remove(at: slot).fd) }
            if pollers[0].revents != 0 {
                let client = accept(socketFD, nil, nil)
                guard client >= 0 else { continue }
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                if connections.count >= Self.maxConnections { Glibc.close(connections.removeFirst().fd) }
                connections.append(Connection(fd: client, deadline: MonotonicClock.nanoseconds() + Self.connectionBudget))
            }
        }
    }

    private enum Received { case waiting, closed, request(String?) }

    /// Reads what has arrived, without waiting; a complete request line is the request.
    private static func receive(_ connection: inout Connection) -> Received {
        var chunk = [UInt8](repeating: 0, count: 2048)
        let n = recv(connection.fd, &chunk, chunk.count, Int32(MSG_DONTWAIT))
        if n < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? .waiting : .closed }
        if n == 0 { return .closed }
        connection.bytes += chunk[0..<n]
        if connection.bytes.contains(0x0A) { return .request(requestTarget(connection.bytes)) }
        return connection.bytes.count >= maxRequestBytes ? .request(nil) : .waiting
    }

    /// Answers one request; returns the callback when it is the one carrying `state`.
    private static func answer(_ fd: Int32, target: String?, state: String) -> StarlightClient.Callback? {
        guard let target, target.hasPrefix("/callback"), let url = WebURL("http://127.0.0.1" + target), url.path == "/callback" else {
            respond(fd, status: target == nil ? "400 Bad Request" : "404 Not Found", body: target == nil ? "Bad request." : "Not found.")
            return nil
        }
        let callback = StarlightClient.Callback(
            code: url.queryValue("code"), state: url.queryValue("state"), error: url.queryValue("error"))
        guard let got = callback.state, Sodium.constantTimeEquals(Array(got.utf8), Array(state.utf8)) else {
            // Someone else's request (or a stale tab): not ours, keep waiting for the real one.
            respond(fd, status: "400 Bad Request", body: "This sign-in link is not the one sl-login is waiting for.")
            return nil
        }
        if let error = callback.error {
            // The error comes from the URL, i.e. from whoever sent the request: escaped, and shortened.
            let shown = error.count > 200 ? String(error.prefix(200)) + "…" : error
            respond(fd, status: "200 OK", body: "The sign-in was not completed (\(HTMLText.escape(shown))). You can close this tab.")
        } else {
            respond(fd, status: "200 OK", body: "Signed in. You can close this tab and return to the terminal.")
        }
        return callback
    }

    /// The request target of `GET TARGET HTTP/1.x`, from the bytes up to the end of the request line.
    static func requestTarget(_ bytes: [UInt8]) -> String? {
        guard let line = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", maxSplits: 1).first else { return nil }
        let parts = line.split(separator: " ")
        guard parts.count == 3, parts[0] == "GET" else { return nil }
        return String(parts[1])
    }

    /// `body` is HTML: callers escape what they did not write themselves.
    static func respond(_ fd: Int32, status: String, body: String) {
        let html =
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Starline</title></head><body style=\"font-family:system-ui,sans-serif;margin:3rem\"><p>\(body)</p></body></html>"
        let response =
            "HTTP/1.1 \(status)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(html.utf8.count)\r\nConnection: close\r\nCache-Control: no-store\r\nContent-Security-Policy: default-src 'none'; style-src 'unsafe-inline'\r\nReferrer-Policy: no-referrer\r\n\r\n\(html)"
        var bytes = Array(response.utf8)
        // A small answer on a fresh socket fits its send buffer; MSG_DONTWAIT so a client that never reads cannot block us.
        _ = send(fd, &bytes, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
    }
}
