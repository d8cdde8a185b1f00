#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// A connection to the D-Bus session bus over its Unix socket: SASL EXTERNAL authentication, `Hello`,
/// and blocking method calls — the whole client side the keyring's read path needs, without GLib (the
/// D-Bus Specification, "Authentication Protocol" and "Message Protocol"). Every read and write is
/// bounded by the deadline (SO_RCVTIMEO / SO_SNDTIMEO), so a bus that accepts and never answers ends in
/// a TIMEOUT-like KEYRING_UNAVAILABLE instead of a hang.
final class DBusConnection {
    private let fd: Int32
    private let deadline: UInt64
    private var serial: UInt32 = 0
    private var buffer: [UInt8] = []

    /// Connects to the first `unix:path=` or `unix:abstract=` address of `address` (a D-Bus server
    /// address list: "unix:path=/run/user/1000/bus,guid=…;…"), authenticates and says Hello.
    init(address: String, timeoutNanoseconds: UInt64) throws(StarlineError) {
        deadline = MonotonicClock.nanoseconds() + timeoutNanoseconds
        guard let target = Self.socketAddress(address) else {
            throw KeyringCall.unavailable("the D-Bus session bus address has no unix:path or unix:abstract entry")
        }
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw KeyringCall.unavailable("cannot create a socket: \(String(cString: strerror(errno)))") }
        do throws(StarlineError) {
            try bound()
            var address = target
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard connected == 0 else { throw KeyringCall.unavailable("cannot connect to the D-Bus session bus: \(String(cString: strerror(errno)))") }
            try authenticate()
            let hello = try call(.call(serial: 0, destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                       interface: "org.freedesktop.DBus", member: "Hello"))
            guard hello.kind == .methodReturn else { throw KeyringCall.unavailable("the D-Bus session bus refused Hello") }
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(fd) }

    /// The `sockaddr_un` of the first usable address; values are %-escaped ("%2f" is "/").
    static func socketAddress(_ list: String) -> sockaddr_un? {
        for entry in list.splitAtScalar(";") where entry.hasPrefix("unix:") {
            for pair in entry.dropFirst(5).splitAtScalar(",") {
                let kv = pair.splitAtScalar("=")
                guard kv.count == 2 else { continue }
                let key = String(kv[0]), value = PercentEncoding.decodeForm(kv[1].replacingPluses())
                guard key == "path" || key == "abstract" else { continue }
                var path = Array(value.utf8)
                if key == "abstract" { path.insert(0, at: 0) }
                var address = sockaddr_un()
                address.sun_family = sa_family_t(AF_UNIX)
                guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
                withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in path.enumerated() { raw[i] = b } }
                return address
            }
        }
        return nil
    }

    /// Sends `message` with the next serial and returns its reply (a method return or an error), skipping
    /// signals and anything else the bus sends meanwhile.
    func call(_ message: DBusMessage) throws(StarlineError) -> DBusMessage {
        serial &+= 1
        var outgoing = message
        outgoing.serial = serial
        try send(try outgoing.encoded())
        while true {
            let reply = try receive()
            if (reply.kind == .methodReturn || reply.kind == .error) && reply.replySerial == serial { return reply }
        }
    }

    // MARK: Wire

    /// SASL: a NUL byte, "AUTH EXTERNAL <uid as hex of its decimal digits>", the server's "OK <guid>",
    /// then "BEGIN" — after which the stream carries messages.
    private func authenticate() throws(StarlineError) {
        let uid = Array(String(getuid()).utf8).map { String($0, radix: 16) }.joined()
        try send([0] + Array("AUTH EXTERNAL \(uid)\r\n".utf8))
        let line = try readLine()
        guard line.hasPrefix("OK ") else { throw KeyringCall.unavailable("the D-Bus session bus did not accept us (\(line.prefix(60)))") }
        try send(Array("BEGIN\r\n".utf8))
    }

    private func readLine() throws(StarlineError) -> String {
        while true {
            if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeSubrange(...end)
                return line.hasSuffix("\r") ? String(line.dropLast()) : line
            }
            guard buffer.count < 4096 else { throw DBusReader.malformed("an authentication line longer than 4096 bytes") }
            try fill()
        }
    }

    private func receive() throws(StarlineError) -> DBusMessage {
        while buffer.count < 16 { try fill() }
        let fixed = try DBusReader(Array(buffer[0..<16]))
        var header = fixed
        header.offset = 4
        let bodyLength = Int(try header.uint32())
        header.offset = 12
        let fieldsLength = Int(try header.uint32())
        // "The maximum length of a message, including header, header alignment padding, and body is 2 to the
        // 27th power or 134217728."
        guard bodyLength <= 1 << 27, fieldsLength <= 1 << 26 else { throw DBusReader.malformed("a message longer than D-Bus allows") }
        let total = (16 + fieldsLength + 7) / 8 * 8 + bodyLength
        while buffer.count < total { try fill() }
        let bytes = Array(buffer[0..<total])
        buffer.removeSubrange(0..<total)
        return try DBusMessage.decode(bytes)
    }

    private func fill() throws(StarlineError) {
        try bound()
        var chunk = [UInt8](repeating: 0, count: 16384)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 { buffer += chunk[0..<n]; return }
        if n < 0 && errno == EINTR { return }
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { throw Self.timedOut() }
        throw KeyringCall.unavailable("the D-Bus session bus closed the connection")
    }

    private func send(_ bytes: [UInt8]) throws(StarlineError) {
        var sent = 0
        while sent < bytes.count {
            try bound()
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { throw Self.timedOut() }
            throw KeyringCall.unavailable("cannot write to the D-Bus session bus: \(String(cString: strerror(errno)))")
        }
    }

    /// Sets the socket's timeouts to what is left before the deadline.
    private func bound() throws(StarlineError) {
        let now = MonotonicClock.nanoseconds()
        guard now < deadline else { throw Self.timedOut() }
        let left = deadline - now
        var tv = timeval(tv_sec: Int(left / 1_000_000_000), tv_usec: Int((left % 1_000_000_000) / 1000) + 1)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    static func timedOut() -> StarlineError {
        StarlineError(.keyringUnavailable, "the Secret Service did not answer in time", retryable: true)
    }
}

private extension Substring {
    /// D-Bus addresses escape with %XX only; a "+" is a plus (decodeForm would read it as a space).
    func replacingPluses() -> String { String(self).splitAtScalar("+").joined(separator: "%2B") }
}
