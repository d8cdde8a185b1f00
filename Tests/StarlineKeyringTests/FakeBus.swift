import Foundation
import Glibc
import StarlineCore
@testable import StarlineKeyring
import StarlineTestSupport

/// A D-Bus "bus" written for the tests: a Unix socket (a path, or an abstract name) served on a thread of
/// its own, speaking just enough of the wire protocol for the direct reader — SASL EXTERNAL, then framed
/// messages. Each method call it receives is recorded and answered by `respond` with raw messages, so a
/// test can send what no honest bus would: replies from a forger, hostile signatures, floods.
final class FakeBus: @unchecked Sendable {
    // @unchecked: `listener` is immutable; the thread's state is behind `log`.
    let address: String
    private let listener: Int32
    private let respond: @Sendable (DBusMessage) -> [[UInt8]]
    private let log = Locked(Log())
    private let scratch = TemporaryDirectory("fake-bus")

    struct Log {
        var calls: [DBusMessage] = []
        var authentication: [String] = []
        var connections = 0
    }

    /// Starts listening. `abstract`: on a random name in the abstract namespace ("unix:abstract="),
    /// otherwise on a socket file ("unix:path=").
    init(abstract: Bool = false, respond: @escaping @Sendable (DBusMessage) -> [[UInt8]]) throws {
        self.respond = respond
        let name = abstract ? "starline-fake-bus-\(UUID().uuidString)" : scratch.file("bus")
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.listener = listener
        guard listener >= 0 else { throw StarlineError(.internalError, "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = abstract ? [0] + Array(name.utf8) : Array(name.utf8) + [0]
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
        // unix(7): an abstract name is exactly the bytes the length covers.
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        guard bound == 0, listen(listener, 8) == 0 else {
            let message = String(cString: strerror(errno))
            close(listener)
            throw StarlineError(.internalError, "cannot listen on \(name): \(message)")
        }
        self.address = (abstract ? "unix:abstract=" : "unix:path=") + name + ",guid=0123456789abcdef0123456789abcdef"
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    /// Stops accepting (the serving thread ends with its current connection).
    func stop() { shutdown(listener, Int32(SHUT_RDWR)) }

    deinit { close(listener) }

    /// The method calls received so far, in order.
    var calls: [DBusMessage] { log.withLock { $0.calls } }
    var connections: Int { log.withLock { $0.connections } }

    /// Waits until `condition` holds of the log (true), or `seconds` pass (false).
    func eventually(seconds: Double = 20, _ condition: (Log) -> Bool) -> Bool {
        log.await(deadline: MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)) { condition($0) ? true : nil } ?? false
    }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                return
            }
            log.withLockNotifying { $0.connections += 1 }
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            _ = setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            converse(connection)
            close(connection)
        }
    }

    /// One client: the SASL lines, then messages until it hangs up.
    private func converse(_ fd: Int32) {
        var buffer: [UInt8] = []
        func fill() -> Bool {
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return false }
            buffer += chunk[0..<n]
            return true
        }
        func line() -> String? {
            while true {
                if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let text = String(decoding: buffer[..<end].filter { $0 != 0 && $0 != UInt8(ascii: "\r") }, as: UTF8.self)
                    buffer.removeSubrange(...end)
                    return text
                }
                guard fill() else { return nil }
            }
        }
        guard let auth = line() else { return }
        log.withLockNotifying { $0.authentication.append(auth) }
        guard auth.hasPrefix("AUTH EXTERNAL") else { return }
        write(fd, Array("OK 0123456789abcdef0123456789abcdef\r\n".utf8))
        guard let begin = line(), begin == "BEGIN" else { return }
        while true {
            while buffer.count < 16 { guard fill() else { return } }
            guard let total = try? DBusMessage.frameLength(Array(buffer[0..<16])) else { return }
            while buffer.count < total { guard fill() else { return } }
            let bytes = Array(buffer[0..<total])
            buffer.removeSubrange(0..<total)
            guard let call = try? DBusMessage.decode(bytes) else { return }
            log.withLockNotifying { $0.calls.append(call) }
            for reply in respond(call) { guard write(fd, reply) else { return } }
        }
    }

    @discardableResult
    private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && errno == EINTR { continue }
            return false
        }
        return true
    }
}

/// What an honest bus and Secret Service answer, as `FakeBus` replies: the bus (`org.freedesktop.DBus`)
/// answers Hello and GetNameOwner, the service's owner `owner` answers OpenSession, SearchItems and
/// GetSecrets with one unlocked item holding `secret`. Tests add to or replace these answers.
struct FakeSecretService: Sendable {
    static let bus = "org.freedesktop.DBus"
    var owner = ":1.7"
    var client = ":1.42"
    var item = "/org/freedesktop/secrets/collection/login/1"
    var session = "/org/freedesktop/secrets/session/s1"
    var secret: [UInt8]
    private let serials = Locked(UInt32(1000))

    init(secret: [UInt8]) { self.secret = secret }

    func replies(to call: DBusMessage) -> [[UInt8]] {
        switch call.member {
        case "Hello": [reply(call, from: Self.bus, "s", [.string(client)])]
        case "GetNameOwner": [reply(call, from: Self.bus, "s", [.string(owner)])]
        case "OpenSession": [reply(call, from: owner, "vo", [.variant(signature: "s", .string("")), .objectPath(session)])]
        case "SearchItems":
            [reply(call, from: owner, "aoao", [.array(elementSignature: "o", [.objectPath(item)]), .array(elementSignature: "o", [])])]
        case "GetSecrets": [secrets(call, from: owner, secret)]
        default: [error(call, from: Self.bus, "org.freedesktop.DBus.Error.UnknownMethod")]
        }
    }

    /// A GetSecrets answer, `a{o(oayays)}`: the item → (session, parameters, value, content type).
    func secrets(_ call: DBusMessage, from sender: String?, _ value: [UInt8]) -> [UInt8] {
        reply(
            call, from: sender, "a{o(oayays)}",
            [
                .array(
                    elementSignature: "{o(oayays)}",
                    [
                        .dictEntry(
                            .objectPath(item),
                            .structure([.objectPath(session), .bytes([]), .bytes(value), .string("application/octet-stream")]))
                    ])
            ])
    }

    func reply(_ call: DBusMessage, from sender: String?, _ signature: String, _ body: [DBusValue]) -> [UInt8] {
        var message = DBusMessage.reply(to: call, serial: nextSerial(), sender: sender, signature: signature, body: body)
        message.destination = client
        return try! message.encoded()
    }

    func error(_ call: DBusMessage, from sender: String?, _ name: String) -> [UInt8] {
        var message = DBusMessage.reply(to: call, serial: nextSerial(), sender: sender, errorName: name)
        message.destination = client
        return try! message.encoded()
    }

    /// A reply whose body is `body` as it stands (unchecked against `signature`): shapes the writer cannot make.
    func raw(_ call: DBusMessage, from sender: String?, _ signature: String, body: [UInt8]) -> [UInt8] {
        var message = DBusMessage.reply(to: call, serial: nextSerial(), sender: sender, signature: signature)
        message.destination = client
        return try! message.encoded(body: body)
    }

    /// A signal to us, as a bus sends NameAcquired after Hello.
    func signal() -> [UInt8] {
        var message = DBusMessage.call(
            serial: nextSerial(), destination: client, path: "/org/freedesktop/DBus", interface: Self.bus,
            member: "NameAcquired", signature: "s", body: [.string(client)])
        message.kind = .signal
        message.sender = Self.bus
        return try! message.encoded()
    }

    private func nextSerial() -> UInt32 {
        serials.withLock {
            $0 += 1; return $0
        }
    }
}

/// `message` (a whole encoded message) with one more header field, `code` of type `signature`, whose value
/// `value` writes as raw bytes — e.g. a variant of `a()` with elements of no bytes, which no writer makes.
func addingHeaderField(_ message: [UInt8], code: UInt8, signature: String, value: (inout DBusWriter) -> Void) -> [UInt8] {
    func le(_ v: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(v).littleEndian) { Array($0) } }
    let fieldsLength = Int(message[12]) | Int(message[13]) << 8 | Int(message[14]) << 16 | Int(message[15]) << 24
    let bodyLength = Int(message[4]) | Int(message[5]) << 8 | Int(message[6]) << 16 | Int(message[7]) << 24
    let body = Array(message.suffix(bodyLength))
    var writer = DBusWriter()
    writer.bytes = Array(message[0..<(16 + fieldsLength)])
    writer.align(8)
    writer.bytes.append(code)
    try! writer.write(.signature(signature), "g")
    value(&writer)
    writer.bytes.replaceSubrange(12..<16, with: le(writer.bytes.count - 16))
    writer.align(8)
    return writer.bytes + body
}

/// Runs `body` on a thread of its own and waits up to `seconds` for it. A reader that never ends — the
/// fault these tests look for, which also allocates as it spins — must not hang the run and then eat the
/// machine's memory: the test process stops with a message saying so instead.
func finishing<T: Sendable>(within seconds: Double = 30, _ what: String, _ body: @escaping @Sendable () -> T) -> T {
    let result = Locked<T?>(nil)
    Thread {
        let value = body(); result.withLockNotifying { $0 = value }
    }.start()
    guard let value = result.await(deadline: MonotonicClock.nanoseconds() + UInt64(seconds * 1e9), { $0 }) else {
        fatalError("\(what) did not end within \(Int(seconds)) s: the D-Bus reader spins (and allocates) without end")
    }
    return value
}
