#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD
import StarlineCore

/// A deadline for each whole request, and room kept for clients that send theirs promptly.
///
/// MHD's connection timeout counts idle seconds: a client that trickles one header byte at a time is never
/// idle, and every client of a loopback server has the same address, so 128 such connections filled the
/// per-address limit and shut every other local client out. The watch looks at each connection every
/// `tick`: one whose client has begun a request (its socket received bytes since the last answer: TCP_INFO's
/// `tcpi_bytes_received`) must have sent all of it — headers and body — within `deadline`, and at most
/// `maxSlow` connections may be in the middle of receiving a request for longer than `slowAfter`; past either,
/// the connection is shut (shutdown(2) on a duplicate of its socket, so the number is never someone else's).
/// A request being answered (a long poll) is not receiving: its time is the handler's. An idle keep-alive
/// connection is left to MHD's idle timeout.
final class ConnectionWatch: @unchecked Sendable {
    // @unchecked: every entry lives in `entries`, under its lock; `stopped` too.
    struct Entry {
        /// A duplicate of the connection's socket, ours to close.
        var socket: Int32
        /// Bytes received when the connection last became idle (opened, or answered).
        var idleBytes: Int64
        /// When bytes beyond `idleBytes` were first seen: a request is arriving.
        var receivingSince: UInt64?
        var answering = false
        var shut = false
    }

    let deadline: UInt64
    let slowAfter: UInt64
    let maxSlow: Int
    static let tick: UInt64 = 200_000_000
    private let state = Locked((entries: [OpaquePointer: Entry](), stopped: false))

    init(deadlineSeconds: Int, maxSlow: Int, slowAfterMilliseconds: Int = 1000) {
        deadline = UInt64(max(1, deadlineSeconds)) * 1_000_000_000
        slowAfter = UInt64(max(1, slowAfterMilliseconds)) * 1_000_000
        self.maxSlow = max(1, maxSlow)
        _ = WorkerThreads.detach { [self] in run() }
    }

    func started(_ connection: OpaquePointer) {
        let fd = starline_mhd_connection_fd(connection)
        guard fd >= 0 else { return }
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 3)
        guard copy >= 0 else { return }
        let bytes = max(0, starline_tcp_bytes_received(copy))
        state.withLock { $0.entries[connection] = Entry(socket: copy, idleBytes: bytes) }
    }

    func closed(_ connection: OpaquePointer) {
        let entry = state.withLock { $0.entries.removeValue(forKey: connection) }
        if let entry { close(entry.socket) }
    }

    /// The whole request has arrived; the handler answers it.
    func answering(_ connection: OpaquePointer) {
        state.withLock { s in
            s.entries[connection]?.answering = true
            s.entries[connection]?.receivingSince = nil
        }
    }

    /// The answer is sent (or the request abandoned): the connection is idle until bytes arrive again.
    func answered(_ connection: OpaquePointer) {
        state.withLock { s in
            guard var entry = s.entries[connection] else { return }
            entry.answering = false
            entry.receivingSince = nil
            entry.idleBytes = max(0, starline_tcp_bytes_received(entry.socket))
            s.entries[connection] = entry
        }
    }

    func stop() { state.withLockNotifying { $0.stopped = true } }

    private func run() {
        while true {
            let now = MonotonicClock.nanoseconds()
            let stopped = state.withLock { s -> Bool in
                if s.stopped { return true }
                sweep(&s.entries, now: now)
                return false
            }
            if stopped { return }
            _ = state.await(deadline: now + Self.tick) { $0.stopped ? true : nil }
        }
    }

    private func sweep(_ entries: inout [OpaquePointer: Entry], now: UInt64) {
        var slow: [(since: UInt64, connection: OpaquePointer)] = []
        for (connection, var entry) in entries where !entry.answering && !entry.shut {
            if entry.receivingSince == nil, starline_tcp_bytes_received(entry.socket) > entry.idleBytes {
                entry.receivingSince = now
            }
            if let since = entry.receivingSince {
                if now - since > deadline {
                    shut(&entry)
                } else if now - since > slowAfter {
                    slow.append((since, connection))
                }
            }
            entries[connection] = entry
        }
        guard slow.count > maxSlow else { return }
        // The oldest go first: the room is kept for whoever sends a request promptly.
        for (_, connection) in slow.sorted(by: { $0.since < $1.since }).prefix(slow.count - maxSlow) {
            if var entry = entries[connection] {
                shut(&entry)
                entries[connection] = entry
            }
        }
    }

    private func shut(_ entry: inout Entry) {
        _ = shutdown(entry.socket, Int32(SHUT_RDWR))
        entry.shut = true
    }
}

/// MHD_NotifyConnectionCallback (on MHD's threads).
nonisolated func mhdConnectionNotice(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ code: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection else { return }
    let watch = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().watch
    // MHD_CONNECTION_NOTIFY_STARTED = 0, MHD_CONNECTION_NOTIFY_CLOSED = 1 (microhttpd.h).
    switch code.rawValue {
    case 0: watch.started(connection)
    case 1: watch.closed(connection)
    default: break
    }
}
