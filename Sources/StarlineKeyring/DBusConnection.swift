#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// A connection to the D-Bus session bus over its Unix socket: SASL EXTERNAL authentication, `Hello`,
/// and blocking method calls — the whole client side the keyring's read path needs, without GLib (the
/// D-Bus Specification, "Authentication Protocol" and "Message Protocol"). Every read and write is
/// bounded by the deadline (SO_RCVTIMEO / SO_SNDTIMEO), so a bus that accepts and never answers ends in
/// a TIMEOUT-like KEYRING_UNAVAILABLE instead of a hang.
///
/// Who it talks to: before the first byte is sent, the process listening on the socket must be this user
/// (the effective uid) or root (SO_PEERCRED), or nothing is sent at all — a bus address in the environment
/// can name a socket someone else serves. And a reply is taken only from the connection it was asked of
/// (`call(_:replyFrom:)`): the bus sets every message's SENDER, so another client cannot pass for it.
final class DBusConnection {
    private let fd: Int32
    private let deadline: UInt64
    private var serial: UInt32 = 0
    private var buffer: [UInt8] = []
    /// Our unique name on the bus, from Hello.
    private(set) var uniqueName = ""

    /// The bus itself: the name, object and interface of its driver, which no client can own.
    static let bus = "org.freedesktop.DBus"
    static let busPath = "/org/freedesktop/DBus"

    /// Connects to the first `unix:path=` or `unix:abstract=` address of `address` (a D-Bus server
    /// address list: "unix:path=/run/user/1000/bus,guid=…;…"), checks who listens, authenticates and
    /// says Hello.
    init(address: String, timeoutNanoseconds: UInt64) throws(StarlineError) {
        deadline = MonotonicClock.nanoseconds() &+ timeoutNanoseconds
        fd = try Self.connectedSocket(address, deadline: deadline)
        do throws(StarlineError) {
            try Self.checkListener(fd)
            try authenticate()
            let hello = try call(
                .call(serial: 0, destination: Self.bus, path: Self.busPath, interface: Self.bus, member: "Hello"),
                replyFrom: Self.bus)
            guard hello.kind == .methodReturn, hello.body.count == 1, case .string(let name) = hello.body[0], name.hasPrefix(":") else {
                throw KeyringCall.unavailable("the D-Bus session bus refused Hello")
            }
            uniqueName = name
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(fd) }

    /// Connects to the bus at `address`, checks who listens and closes without sending anything: the same
    /// check for a client that does not speak through this class (GDBus, under libsecret, does not look at
    /// the server's credentials).
    static func checkListener(address: String, timeoutNanoseconds: UInt64) throws(StarlineError) {
        let fd = try connectedSocket(address, deadline: MonotonicClock.nanoseconds() &+ timeoutNanoseconds)
        defer { close(fd) }
        try checkListener(fd)
    }

    /// The unique name that owns `name` now (GetNameOwner), after starting it by activation when nobody
    /// does (StartServiceByName, as a call to the well-known name would); nil when nobody owns it.
    func owner(of name: String) throws(StarlineError) -> String? {
        for attempt in 0..<2 {
            let reply = try call(
                .call(
                    serial: 0, destination: Self.bus, path: Self.busPath, interface: Self.bus, member: "GetNameOwner",
                    signature: "s", body: [.string(name)]), replyFrom: Self.bus)
            if reply.kind == .methodReturn {
                guard reply.body.count == 1, case .string(let owner) = reply.body[0], owner.hasPrefix(":") else {
                    throw DBusReader.malformed("GetNameOwner answered with \(reply.signature)")
                }
                return owner
            }
            guard attempt == 0, reply.errorName == "org.freedesktop.DBus.Error.NameHasNoOwner" else { return nil }
            // "StartServiceByName: Tries to launch the executable associated with a name"; it answers once the
            // service has taken the name (1 DBUS_START_REPLY_SUCCESS, 2 ALREADY_RUNNING).
            let started = try call(
                .call(
                    serial: 0, destination: Self.bus, path: Self.busPath, interface: Self.bus, member: "StartServiceByName",
                    signature: "su", body: [.string(name), .uint32(0)]), replyFrom: Self.bus)
            guard started.kind == .methodReturn else { return nil }
        }
        return nil
    }

    /// Sends `message` with the next serial and returns its reply — a method return or an error whose
    /// REPLY_SERIAL is that serial and whose SENDER is `sender` (or an error from the bus itself, which
    /// answers for a destination that is gone). Anything else is skipped unread past its header, at most
    /// `DBusLimits.ignoredMessagesPerCall` messages.
    func call(_ message: DBusMessage, replyFrom sender: String) throws(StarlineError) -> DBusMessage {
        let expected = try post(message)
        var ignored = 0
        while true {
            let bytes = try receive()
            // "Messages with an unknown type ... must be ignored."
            if DBusMessage.Kind(rawValue: bytes[1]) != nil {
                var answers = false
                let reply = try DBusMessage.decode(bytes) { header in
                    answers = Self.answers(header, serial: expected, from: sender)
                    return answers
                }
                if answers { return reply }
            }
            ignored += 1
            guard ignored <= DBusLimits.ignoredMessagesPerCall else {
                throw StarlineError(
                    .keyringUnavailable,
                    "the D-Bus session bus sent more than \(DBusLimits.ignoredMessagesPerCall) messages that were not the answer of \(sender); gave up",
                    retryable: true)
            }
        }
    }

    /// Sends `message` with the next serial, awaiting nothing: for a client that reads what comes itself
    /// (`nextMessage`), such as a monitor or a test's forger.
    @discardableResult
    func post(_ message: DBusMessage) throws(StarlineError) -> UInt32 {
        serial = serial == UInt32.max ? 1 : serial + 1
        var outgoing = message
        outgoing.serial = serial
        try send(try outgoing.encoded())
        return serial
    }

    /// The next message the bus sends, whatever it is.
    func nextMessage() throws(StarlineError) -> DBusMessage {
        try DBusMessage.decode(try receive())
    }

    static func answers(_ header: DBusMessage, serial: UInt32, from sender: String) -> Bool {
        guard header.kind == .methodReturn || header.kind == .error, header.replySerial == serial else { return false }
        if header.sender == sender { return true }
        // ServiceUnknown, NoReply (the service went away before answering): errors only, from the bus only.
        return header.kind == .error && header.sender == bus
    }

    // MARK: Wire

    /// SASL: a NUL byte, "AUTH EXTERNAL <uid as hex of its decimal digits>", the server's "OK <guid>",
    /// then "BEGIN" — after which the stream carries messages. The uid is the effective one, which is what
    /// the bus sees in the socket's credentials.
    private func authenticate() throws(StarlineError) {
        let uid = Array(String(geteuid()).utf8).map { String($0, radix: 16) }.joined()
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

    /// The bytes of the next whole message (at most `DBusLimits.messageBytes`, checked before buffering).
    private func receive() throws(StarlineError) -> [UInt8] {
        while buffer.count < 16 { try fill() }
        let total = try DBusMessage.frameLength(Array(buffer[0..<16]))
        while buffer.count < total { try fill() }
        let bytes = Array(buffer[0..<total])
        buffer.removeSubrange(0..<total)
        return bytes
    }

    /// Appends what the socket has (at least one byte), or throws: the deadline, a closed connection.
    private func fill() throws(StarlineError) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            try Self.bound(fd, deadline: deadline)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { buffer += chunk[0..<n]; return }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { throw Self.timedOut() }
            throw KeyringCall.unavailable("the D-Bus session bus closed the connection")
        }
    }

    private func send(_ bytes: [UInt8]) throws(StarlineError) {
        var sent = 0
        while sent < bytes.count {
            try Self.bound(fd, deadline: deadline)
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { throw Self.timedOut() }
            throw KeyringCall.unavailable("cannot write to the D-Bus session bus: \(String(cString: strerror(errno)))")
        }
    }

    /// Sets the socket's timeouts to what is left before the deadline (or throws when it has passed), so
    /// each loop around a blocking call ends by the deadline.
    static func bound(_ fd: Int32, deadline: UInt64) throws(StarlineError) {
        let now = MonotonicClock.nanoseconds()
        guard now < deadline else { throw Self.timedOut() }
        // Rounded up to a whole microsecond: a zero timeval would mean "never time out", and tv_usec must stay
        // below 1,000,000 (setsockopt fails with EDOM otherwise, leaving the previous timeout).
        let micros = (deadline - now) / 1000 + 1
        var tv = timeval(tv_sec: Int(micros / 1_000_000), tv_usec: Int(micros % 1_000_000))
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    static func timedOut() -> StarlineError {
        StarlineError(.keyringUnavailable, "the Secret Service did not answer in time", retryable: true)
    }
}
