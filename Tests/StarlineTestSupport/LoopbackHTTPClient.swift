import StarlineCore
#if canImport(Glibc)
import Glibc
#endif

/// The tests' own HTTP/1.1 client for a dev server on loopback: one connection per request (`Connection: close`),
/// the answer read to its end, in the test process. It replaced a curl process per request, which cost a tenth of
/// the suite's CPU. It shares nothing with the tools' client (libcurl through StarlineHTTP), so a test of the server
/// does not go through the code under test on the other side. Plain `http://` only: the dev server serves no TLS.
///
/// A failure is reported as curl's exit code for it, so a test reads one number however the exchange went:
/// 0, 3 (not an http:// URL), 7 (no connection), 8 (not an HTTP answer), 18 (a body shorter than its length or an
/// unfinished chunked body), 28 (timed out), 52 (closed with nothing sent), 56 (closed or reset mid-answer). A
/// request the server stops reading (a 413 before the whole body) is not a failure: its answer is read.
public enum LoopbackHTTPClient {
    struct Target {
        var host: String
        var port: String
        /// The request target: the path and query, as given.
        var path: String
    }

    /// `http://HOST:PORT/path?query` (HOST a name, an IPv4 address or `[IPv6]`); nil for anything else.
    static func target(_ url: String) -> Target? {
        guard url.hasPrefix("http://") else { return nil }
        let rest = url.dropFirst("http://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let path = slash == rest.endIndex ? "/" : String(rest[slash...])
        guard let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") else { return nil }
        var host = String(authority[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = String(authority[authority.index(after: colon)...])
        guard !host.isEmpty, UInt16(port) != nil else { return nil }
        return Target(host: host, port: port, path: path)
    }

    /// One exchange. `headers` may replace the defaults (`Host`, `User-Agent`, `Accept`); `seconds` bounds the
    /// whole of it, as curl's `--max-time` does.
    static func exchange(
        _ method: String, _ url: String, headers: [(String, String)], body: [UInt8]?, seconds: Double
    ) -> HTTPResult {
        var result = HTTPResult(status: 0, headers: [:], body: [], curlExit: 0)
        guard let target = target(url) else {
            result.curlExit = 3  // curl: URL malformed
            return result
        }
        let deadline = MonotonicClock.nanoseconds() &+ UInt64(max(0, seconds) * 1e9)
        guard let socket = connect(target) else {
            result.curlExit = 7
            return result
        }
        defer { close(socket) }
        let given = Set(headers.map { $0.0.lowercased() })
        var head = "\(method) \(target.path) HTTP/1.1\r\n"
        let hostPort = target.host.contains(":") ? "[\(target.host)]:\(target.port)" : "\(target.host):\(target.port)"
        for (name, value) in [("Host", hostPort), ("User-Agent", "starline-tests"), ("Accept", "*/*")]
        where !given.contains(name.lowercased()) {
            head += "\(name): \(value)\r\n"
        }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "Connection: close\r\n\r\n"
        // A server that answers before reading the whole body (a 413) may close its side meanwhile: what could not
        // be sent is left, and the answer is read all the same.
        switch send(socket, Array(head.utf8) + (body ?? []), deadline: deadline) {
        case .timedOut:
            result.curlExit = 28
            return result
        case .sent, .closed:
            break
        }
        let (received, ending) = receive(socket, deadline: deadline)
        return parse(received, ending: ending, method: method)
    }

    private static func connect(_ target: Target) -> Int32? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(target.host, target.port, &hints, &list) == 0 else { return nil }
        defer { freeaddrinfo(list) }
        var entry = list
        while let info = entry?.pointee {
            let fd = socket(info.ai_family, info.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.ai_protocol)
            if fd >= 0 {
                if Glibc.connect(fd, info.ai_addr, info.ai_addrlen) == 0 { return fd }
                close(fd)
            }
            entry = info.ai_next
        }
        return nil
    }

    private enum SendOutcome { case sent, closed, timedOut }

    private static func send(_ socket: Int32, _ bytes: [UInt8], deadline: UInt64) -> SendOutcome {
        var offset = 0
        while offset < bytes.count {
            guard setTimeout(socket, SO_SNDTIMEO, until: deadline) else { return .timedOut }
            let n = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                return .timedOut
            } else {
                return .closed
            }
        }
        return .sent
    }

    /// How the connection ended: closed by the server, reset (or another error), or out of time.
    public enum Ending: Sendable { case end, reset, timedOut }

    private static func receive(_ socket: Int32, deadline: UInt64) -> ([UInt8], Ending) {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            guard setTimeout(socket, SO_RCVTIMEO, until: deadline) else { return (received, .timedOut) }
            let n = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                received += chunk[0..<n]
            } else if n == 0 {
                return (received, .end)
            } else if errno == EINTR {
                continue
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                return (received, .timedOut)
            } else {
                return (received, .reset)
            }
        }
    }

    /// The time left until `deadline` as the socket's timeout for one call; false when none is left.
    private static func setTimeout(_ socket: Int32, _ option: Int32, until deadline: UInt64) -> Bool {
        let now = MonotonicClock.nanoseconds()
        guard now < deadline else { return false }
        let left = deadline - now
        var value = timeval(tv_sec: Int(left / 1_000_000_000), tv_usec: Int(left % 1_000_000_000 / 1000) + 1)
        return setsockopt(socket, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size)) == 0
    }

    /// The last answer in `bytes` (interim 1xx answers skipped): its status, headers (names lowercased, the last
    /// of a repeated one) and body.
    public static func parse(_ bytes: [UInt8], ending: Ending, method: String) -> HTTPResult {
        let failure: Int32 =
            switch ending {
            case .end: bytes.isEmpty ? 52 : 0
            case .reset: 56
            case .timedOut: 28
            }
        var result = HTTPResult(status: 0, headers: [:], body: [], curlExit: failure)
        var start = 0
        while true {
            guard let end = find([13, 10, 13, 10], in: bytes, from: start) else {
                if result.curlExit == 0 { result.curlExit = 56 }  // closed inside the header block
                return result
            }
            let lines = String(decoding: bytes[start..<end], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
            let statusWords = lines.first?.split(separator: " ", maxSplits: 2) ?? []
            guard statusWords.count >= 2, statusWords[0].hasPrefix("HTTP/"), let status = Int(statusWords[1]) else {
                result.curlExit = 8  // curl: weird server reply
                return result
            }
            start = end + 4
            if (100..<200).contains(status) { continue }
            result.status = status
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                result.headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            break
        }
        if method == "HEAD" || result.status == 204 || result.status == 304 { return result }
        let rest = Array(bytes[start...])
        if result.headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            guard let decoded = dechunk(rest) else {
                result.body = rest
                if result.curlExit == 0 { result.curlExit = 18 }
                return result
            }
            result.body = decoded
        } else if let lengthText = result.headers["content-length"], let length = Int(lengthText), length >= 0 {
            result.body = Array(rest.prefix(length))
            if rest.count < length && result.curlExit == 0 { result.curlExit = 18 }
        } else {
            result.body = rest
        }
        return result
    }

    /// Where `pattern` (a CRLF, the blank line after a header block) first occurs in `bytes` from `start`.
    private static func find(_ pattern: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        var i = start
        while i + pattern.count <= bytes.count {
            if bytes[i..<(i + pattern.count)].elementsEqual(pattern) { return i }
            i += 1
        }
        return nil
    }

    /// A chunked body decoded; nil when it stops before its last chunk.
    private static func dechunk(_ bytes: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var i = 0
        while true {
            guard let lineEnd = find([13, 10], in: bytes, from: i) else { return nil }
            let sizeText = String(decoding: bytes[i..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else { return nil }
            i = lineEnd + 2
            if size == 0 { return out }
            guard size <= bytes.count - i - 2 else { return nil }
            out += bytes[i..<(i + size)]
            i += size + 2
        }
    }
}
