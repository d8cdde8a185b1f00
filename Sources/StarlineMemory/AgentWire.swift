import Glibc
import StarlineCore
import StarlineCrypto

/// The unlock agent's line protocol: one request line per connection, one reply line, then the agent
/// closes the connection.
///
///     KEY <vaultID>   →  OK <data key, lowercase hex>
///     STATUS          →  OK {"pid":…,"vaultId":…,"startedAt":…,"expiresAt":…,"idleExpiresAt":…}
///     STOP            →  OK stopped        (the socket is gone and the key dropped before this is sent)
///     anything else   →  ERR <CODE> <message>   (BAD_REQUEST, WRONG_VAULT, NO_KEY)
///
/// Requests are at most `maxRequest` bytes and must arrive within `requestDeadline`; a peer of another uid
/// gets no reply at all. Hex rather than base64 for the key: it decodes straight into protected memory,
/// two characters a byte, with no table and no intermediate array.
enum AgentWire {
    static let maxRequest = 256
    static let maxReply = 4096
    static let requestDeadline: Duration = .seconds(1)

    enum Request: Equatable {
        case key(vaultID: String)
        case status
        case stop
    }

    static func parse(_ line: ArraySlice<UInt8>) -> Request? {
        let text = String(decoding: line, as: UTF8.self)
        if text == "STATUS" { return .status }
        if text == "STOP" { return .stop }
        if text.hasPrefix("KEY "), case let id = String(text.dropFirst(4)), !id.isEmpty { return .key(vaultID: id) }
        return nil
    }

    static func line(_ request: Request) -> [UInt8] {
        switch request {
        case .key(let id): Array("KEY \(id)\n".utf8)
        case .status: Array("STATUS\n".utf8)
        case .stop: Array("STOP\n".utf8)
        }
    }

    static func error(_ code: String, _ message: String) -> [UInt8] { Array("ERR \(code) \(message)\n".utf8) }

    /// `OK <hex>\n` for `key`, in a buffer the caller wipes once it is sent.
    static func keyReply(_ key: SecretBytes) -> [UInt8] {
        var reply = [UInt8](repeating: 0, count: 3 + 2 * key.count + 1)
        reply[0] = UInt8(ascii: "O"); reply[1] = UInt8(ascii: "K"); reply[2] = UInt8(ascii: " ")
        let digits = Array("0123456789abcdef".utf8)
        key.withUnsafeBytes { bytes in
            for (i, byte) in bytes.enumerated() {
                reply[3 + 2 * i] = digits[Int(byte >> 4)]
                reply[4 + 2 * i] = digits[Int(byte & 0x0F)]
            }
        }
        reply[reply.count - 1] = UInt8(ascii: "\n")
        return reply
    }

    /// The key in `hex` (lowercase or uppercase), decoded straight into protected memory; nil when it is not
    /// an even number of hex digits or is empty.
    static func decodeKey(_ hex: ArraySlice<UInt8>) -> SecretBytes? {
        guard !hex.isEmpty, hex.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        struct NotHex: Error {}
        return try? SecretBytes(count: hex.count / 2) { (buffer: UnsafeMutableRawBufferPointer) throws(NotHex) in
            var i = hex.startIndex
            for n in 0..<buffer.count {
                guard let high = value(hex[i]), let low = value(hex[i + 1]) else { throw NotHex() }
                buffer[n] = high << 4 | low
                i += 2
            }
        }
    }

    enum LineRead: Equatable {
        /// The line (without its newline) is `buffer[0..<count]`.
        case line(count: Int)
        case tooLong
        case timedOut
        /// The peer closed (or the read failed) before a newline.
        case closed
    }

    /// Reads one line into `buffer` (its size is the limit, so it never grows and leaves no copies behind in
    /// freed memory), waiting at most until `deadline` (`MonotonicClock` nanoseconds).
    static func readLine(_ fd: Int32, into buffer: inout [UInt8], deadline: UInt64) -> LineRead {
        var used = 0
        while true {
            if let newline = buffer[0..<used].firstIndex(of: UInt8(ascii: "\n")) { return .line(count: newline) }
            if used == buffer.count { return .tooLong }
            let now = MonotonicClock.nanoseconds()
            guard now < deadline else { return .timedOut }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min((deadline - now) / 1_000_000 + 1, 60_000)))
            if ready < 0 { if errno == EINTR { continue }; return .closed }
            if ready == 0 { continue }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + used, $0.count - used) }
            if n < 0 { if errno == EINTR || errno == EAGAIN { continue }; return .closed }
            if n == 0 { return .closed }
            used += n
        }
    }

    /// Sends all of `bytes`; MSG_NOSIGNAL, so a peer that went away is a failed send, never a SIGPIPE.
    @discardableResult
    static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return true
        }
    }

    /// SO_RCVTIMEO and SO_SNDTIMEO: a blocking call on `fd` gives up after `seconds`.
    static func setTimeouts(_ fd: Int32, seconds: Int) {
        var limit = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (total, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? UInt64.max / 2 : total + UInt64(attoseconds / 1_000_000_000)
    }
}
