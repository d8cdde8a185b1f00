#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD
import StarlineCore

/// An HTTP/1.1 server on libmicrohttpd, bound to a loopback address only. Every connection gets a
/// thread (long polls and delay faults simply block it); the handler is called on those threads.
///
/// Stopping is prompt: `stop` wakes the delay faults (`pause`), then has MHD shut every connection down and
/// join its thread — the owner first ends its own waits (long polls), since MHD can only join a handler
/// that returns.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked: the handler is immutable and Sendable; the daemon pointer lives in a lock (set once
    // in init, cleared by the idempotent stop()); `port` is written only in init.
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    public static let maxBodyBytes = 64 * 1024

    let handler: Handler
    private let daemon = Locked<OpaquePointer?>(nil)
    /// `stopping` is set by `stop` (`pause` waits on it); `active` counts the requests begun and not yet
    /// completed (answered and sent, or their connection gone), which `stop` lets finish.
    private let requests = Locked((stopping: false, active: 0))
    /// How long `stop` waits for the requests in progress (long polls answer at once) before closing them.
    static let drainNanoseconds: UInt64 = 1_000_000_000
    public private(set) var port: UInt16 = 0

    /// What one client can hold: connections (each a thread), idle seconds, and seconds to send a whole
    /// request (`ConnectionWatch`: half the per-address connections at most may be slow to send theirs).
    public struct ConnectionLimits: Sendable {
        public var connections = 512
        public var connectionsPerIP = 128
        public var idleTimeoutSeconds = 30
        public var requestDeadlineSeconds = 10
        public init() {}
    }

    /// Each request's deadline to arrive whole, and the room kept for clients that send theirs promptly.
    let watch: ConnectionWatch

    /// Starts listening on 127.0.0.1:`port` (0 picks a free port; read `port` afterwards).
    public init(port: UInt16, limits: ConnectionLimits = ConnectionLimits(), handler: @escaping Handler) throws {
        self.handler = handler
        watch = ConnectionWatch(deadlineSeconds: limits.requestDeadlineSeconds, maxSlow: max(1, limits.connectionsPerIP / 2))
        var address = LoopbackAddress.ipv4(port: port)
        // MHD_USE_ITC: "required for use of MHD_quiesce_daemon" (microhttpd.h).
        let flags = UInt32(MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_THREAD_PER_CONNECTION.rawValue | MHD_USE_ITC.rawValue)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let started = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                starline_mhd_start(
                    flags, mhdAccessHandler, me, mhdRequestCompleted, me, mhdConnectionNotice, me, sa,
                    UInt32(limits.connections), UInt32(limits.connectionsPerIP), 256 * 1024,
                    UInt32(limits.idleTimeoutSeconds))
            }
        }
        guard let started else {
            let failure = errno
            watch.stop()
            throw Self.listenError(port: port, errno: failure)
        }
        daemon.withLock { $0 = started }
        self.port = starline_mhd_bound_port(started)
    }

    /// Why the server could not listen. A port in use is ADDRESS_IN_USE (exit 7, retryable): an environment
    /// failure, never a usage error (no usage text). MHD's errno is not documented, so a busy port is
    /// confirmed by binding a probe socket the way MHD binds (SO_REUSEADDR); anything else is NETWORK_ERROR.
    static func listenError(port: UInt16, errno failure: Int32) -> StarlineError {
        let details = JSON.object([("port", .int(Int(port)))])
        if port != 0, failure == EADDRINUSE || Self.portIsTaken(port) {
            return StarlineError(
                .addressInUse, "cannot listen on 127.0.0.1:\(port): the address is in use by another process",
                retryable: true, details: details)
        }
        return StarlineError(.network, "cannot listen on 127.0.0.1:\(port): \(String(cString: strerror(failure)))", details: details)
    }

    /// True when binding 127.0.0.1:`port` fails with EADDRINUSE right now.
    static func portIsTaken(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        return LoopbackAddress.bind(fd, port: port) != 0 && errno == EADDRINUSE
    }

    /// Stops: wakes `pause`, stops accepting, closes every connection (keep-alive ones too), joins the
    /// server's threads and closes the listening socket. Each handler must return promptly once stopping
    /// (see the type's doc): MHD joins a connection's thread only when its handler returns.
    public func stop() {
        requests.withLockNotifying { $0.stopping = true }
        daemon.withLock { daemon in
            guard let running = daemon else { return }
            // No new connections from here. "The caller is responsible for closing the returned socket;
            // however, if MHD is run using threads … it must not be closed until AFTER MHD_stop_daemon"
            // (microhttpd.h).
            let listening = MHD_quiesce_daemon(running)
            // The requests in progress are answered and sent before their connections are shut (a long poll
            // gets its empty page, not a reset); a client that does not read its answer is not waited for long.
            _ = requests.await(deadline: MonotonicClock.nanoseconds() + Self.drainNanoseconds) { $0.active == 0 ? true : nil }
            MHD_stop_daemon(running)
            if listening >= 0 { close(listening) }
            watch.stop()
            daemon = nil
        }
    }

    /// Waits `milliseconds`, or less when the server stops meanwhile (an injected delay must not hold a stop).
    func pause(milliseconds: Int) {
        let deadline = MonotonicClock.nanoseconds() + UInt64(max(0, milliseconds)) * 1_000_000
        _ = requests.await(deadline: deadline) { $0.stopping ? true : nil }
    }

    fileprivate func requestBegan() { requests.withLock { $0.active += 1 } }
    fileprivate func requestCompleted() { requests.withLockNotifying { $0.active -= 1 } }

    deinit { stop() }
}

/// Per-request state kept between MHD's calls for one request (headers, then body chunks, then done).
final class RequestContext {
    var body: [UInt8] = []
    var tooLarge = false
}

/// Collects header or query values through MHD's iterator.
final class ValueCollector {
    var pairs: [(String, String)] = []
}

// MARK: - C callbacks (run on MHD's threads: nonisolated free functions)

/// "MHD_AccessHandlerCallback: … called first with upload_data_size 0 after the headers, then once
/// per chunk of the body (set *upload_data_size to the amount consumed), then with 0 again."
func mhdAccessHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadDataSize: UnsafeMutablePointer<Int>?, _ contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let contextSlot, let uploadDataSize else { return .NO }
    guard let raw = contextSlot.pointee else {
        contextSlot.pointee = Unmanaged.passRetained(RequestContext()).toOpaque()
        Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().requestBegan()
        return .YES
    }
    let context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
    if uploadDataSize.pointee > 0 {
        if !context.tooLarge, let uploadData {
            if context.body.count + uploadDataSize.pointee > HTTPServer.maxBodyBytes {
                context.tooLarge = true
                context.body = []
            } else {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: uploadDataSize.pointee) {
                    context.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: uploadDataSize.pointee))
                }
            }
        }
        uploadDataSize.pointee = 0
        return .YES
    }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    server.watch.answering(connection)
    let request = HTTPRequest(
        method: method.map { String(cString: $0) } ?? "GET",
        path: url.map { String(cString: $0) } ?? "/",
        // MHD leaves the escapes in place (starline_mhd_keep_escaped): the query is decoded here, the path after routing.
        query: collect(connection, .GET_ARGUMENT_KIND).map { (PercentEncoding.decodeForm($0.0), PercentEncoding.decodeForm($0.1)) },
        headers: Dictionary(collect(connection, .HEADER_KIND).map { ($0.0.lowercased(), $0.1) }, uniquingKeysWith: { first, _ in first }),
        body: context.body,
        clientAddress: clientAddress(connection),
        bodyTooLarge: context.tooLarge)
    let response = server.handler(request)
    if response.dropConnection { return .NO }
    if response.delayMilliseconds > 0 { server.pause(milliseconds: min(response.delayMilliseconds, Limits.maxFaultWaitMilliseconds)) }
    let mhdResponse = response.body.withUnsafeBytes { buffer in
        // MHD_RESPMEM_MUST_COPY (2): MHD copies the buffer.
        MHD_create_response_from_buffer(
            buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), MHD_ResponseMemoryMode(rawValue: 2)!)
    }
    guard let mhdResponse else { return .NO }
    for (name, value) in response.headers { MHD_add_response_header(mhdResponse, name, value) }
    let result = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    MHD_destroy_response(mhdResponse)
    return result
}

func mhdRequestCompleted(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ reason: MHD_RequestTerminationCode
) {
    if let cls, let connection { Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().watch.answered(connection) }
    guard let contextSlot, let raw = contextSlot.pointee else { return }
    Unmanaged<RequestContext>.fromOpaque(raw).release()
    if let cls { Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().requestCompleted() }
    contextSlot.pointee = nil
}

func mhdCollectValue(_ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?)
    -> MHD_Result
{
    guard let cls, let key else { return .YES }
    let collector = Unmanaged<ValueCollector>.fromOpaque(cls).takeUnretainedValue()
    collector.pairs.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
    return .YES
}

func collect(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> [(String, String)] {
    let collector = ValueCollector()
    withExtendedLifetime(collector) {
        _ = MHD_get_connection_values(connection, kind, mhdCollectValue, Unmanaged.passUnretained(collector).toOpaque())
    }
    return collector.pairs
}

func clientAddress(_ connection: OpaquePointer) -> String {
    guard let address = starline_mhd_client_address(connection) else { return "" }
    var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
    let length = socklen_t(
        address.pointee.sa_family == sa_family_t(AF_INET6) ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
    guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { return "" }
    let end = host.firstIndex(of: 0) ?? host.endIndex
    return String(decoding: host[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
