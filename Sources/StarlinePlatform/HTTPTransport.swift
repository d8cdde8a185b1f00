#if canImport(Glibc)
import Glibc
#endif
import CCurl
import StarlineCore

/// One HTTP request.
public struct HTTPRequestSpec: Sendable {
    public var method: String
    public var url: String
    /// Sent in order; values must not contain line breaks.
    public var headers: [(String, String)]
    /// The request body, sent as is (nil: none; POST without a body sends an empty one).
    public var body: [UInt8]?
    /// Overrides the transport's timeout for this request (e.g. a long poll), in seconds.
    public var timeout: Double?

    public init(method: String = "GET", url: String, headers: [(String, String)] = [], body: [UInt8]? = nil, timeout: Double? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// A complete HTTP answer, whatever its status: the transport throws only when there is no answer.
public struct HTTPReply: Sendable {
    public var status: Int
    /// Header names lowercased; repeated headers joined with ", ".
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as JSON; `DATA_ERROR` when it is not.
    public func json() throws -> JSON {
        do {
            return try JSON.parse(body)
        } catch let error as StarlineError {
            throw StarlineError(.data, "the server's answer (HTTP \(status)) is not JSON: \(error.message)",
                                details: .object([("status", .int(status))]))
        }
    }
}

/// When to repeat a request. Only for requests that are safe to repeat (GET, DELETE, idempotent PUT):
/// the transport cannot tell whether a failed request reached the server.
public struct RetryPolicy: Sendable, Equatable {
    /// Retries after the first attempt (0: none).
    public var retries: Int
    /// The first backoff; attempt n waits `baseDelay × 2^n`, with jitter, at most `maxDelay`.
    public var baseDelay: Double
    public var maxDelay: Double
    /// A server's `Retry-After` is honoured up to this many seconds.
    public var maxRetryAfter: Double

    public init(retries: Int, baseDelay: Double = 0.2, maxDelay: Double = 5, maxRetryAfter: Double = 10) {
        self.retries = max(0, retries)
        // Negative or non-finite delays would be meaningless (and cannot be slept).
        self.baseDelay = baseDelay.isFinite ? max(0, baseDelay) : 0.2
        self.maxDelay = maxDelay.isFinite ? max(0, maxDelay) : 5
        self.maxRetryAfter = maxRetryAfter.isFinite ? max(0, maxRetryAfter) : 10
    }

    public static let none = RetryPolicy(retries: 0)

    /// True for the answers worth repeating: 429 and 5xx (but not 501 Not Implemented or 505).
    public static func isRetryable(status: Int) -> Bool {
        status == 429 || (500...599).contains(status) && status != 501 && status != 505
    }

    /// Seconds to wait before retry number `attempt` (0-based) after `reply`, or nil when it is not retryable.
    func delay(after reply: HTTPReply, attempt: Int) -> Double? {
        guard Self.isRetryable(status: reply.status) else { return nil }
        if let retryAfter = reply.header("Retry-After").flatMap(RetryPolicy.parseRetryAfter) {
            return max(0, min(retryAfter, maxRetryAfter))
        }
        return backoff(attempt)
    }

    /// Seconds to wait before retry number `attempt` after a transport error, or nil when it is not retryable.
    func delay(after error: StarlineError, attempt: Int) -> Double? {
        guard error.retryable, error.code == .network || error.code == .timeout else { return nil }
        return backoff(attempt)
    }

    func backoff(_ attempt: Int) -> Double {
        let full = max(0, min(maxDelay, baseDelay * Double(1 << min(attempt, 20))))
        return full * Double.random(in: 0.5...1.0)  // "equal jitter": spread retries of many clients
    }

    /// `Retry-After`: delta-seconds or an IMF-fixdate (RFC 9110 §10.2.3); seconds from now.
    public static func parseRetryAfter(_ value: String) -> Double? {
        let text = value.trimmingWhitespace()
        if let seconds = Int(text) { return Double(max(0, seconds)) }
        guard let date = parseIMFFixdate(text) else { return nil }
        return Double(max(0, date - Timestamp.now().seconds))
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` → epoch seconds.
    static func parseIMFFixdate(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count == 29, b[3] == UInt8(ascii: ","), b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
              b[19] == UInt8(ascii: ":"), b[22] == UInt8(ascii: ":"), b[25] == 0x20, String(decoding: b[26...], as: UTF8.self) == "GMT" else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for i in range {
                guard (48...57).contains(b[i]) else { return nil }
                value = value * 10 + Int32(b[i] - 48)
            }
            return value
        }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard let month = months.firstIndex(of: String(decoding: b[8..<11], as: UTF8.self)),
              let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19), let minute = number(20..<22),
              let second = number(23..<25), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = Int32(month)
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Int64(timegm(&parts))
    }
}

/// HTTP/1.1 over libcurl (loaded with dlopen on the first request), with a pool of easy handles so
/// connections are kept alive and reused across requests.
///
/// `@unchecked Sendable`: the configuration is immutable; the only mutable state — the pool of idle
/// handles, the number of handles created and the connection counter — lives in `HandlePool` and is
/// read and written only under its pthread mutex. A libcurl easy handle is used by one request at a time
/// (taken out of the pool for the whole transfer and put back afterwards), which is libcurl's
/// thread-safety rule; `curl_global_init` runs once inside `CurlLibrary.shared` (swift_once).
public final class HTTPTransport: @unchecked Sendable {
    /// Loads libcurl in the background ahead of a request that local work precedes; see `CurlLibrary.preload`.
    public static func preloadLibrary() { CurlLibrary.preload() }

    public let timeout: Double
    public let userAgent: String
    public let maxConnections: Int
    /// Response bodies larger than this fail with `DATA_ERROR` instead of filling memory.
    public let maxResponseBytes: Int
    let pool: HandlePool

    public static let defaultUserAgent = "starline/\(StarlineVersion.current) (Linux)"

    public init(timeout: Double = 30, userAgent: String = HTTPTransport.defaultUserAgent, maxConnections: Int = 8,
                maxResponseBytes: Int = 32 << 20) {
        self.timeout = HTTPTransport.sane(timeout) ?? 30
        self.userAgent = userAgent
        self.maxConnections = max(1, maxConnections)
        self.maxResponseBytes = maxResponseBytes
        pool = HandlePool(capacity: max(1, maxConnections))
    }

    /// Connections libcurl opened so far (`CURLINFO_NUM_CONNECTS` summed over every request): with
    /// keep-alive, sequential requests to one server open one.
    var connectionsOpened: Int { pool.connections }

    // MARK: Sending

    /// Sends `request`, repeating it up to `retries` times on network errors, timeouts, 429 and 5xx.
    /// Pass `retries > 0` only for requests that are safe to repeat. Returns the last answer whatever
    /// its status; throws `TIMEOUT` / `NETWORK_ERROR` when the last attempt got none.
    public func send(_ request: HTTPRequestSpec, retries: Int = 0) async throws -> HTTPReply {
        try await send(request, retry: RetryPolicy(retries: retries))
    }

    public func send(_ request: HTTPRequestSpec, retry: RetryPolicy) async throws -> HTTPReply {
        var attempt = 0
        while true {
            let wait: Double
            do {
                let reply = try await performOffThread(request)
                guard attempt < retry.retries, let delay = retry.delay(after: reply, attempt: attempt) else { return reply }
                wait = delay
            } catch let error as StarlineError {
                guard attempt < retry.retries, let delay = retry.delay(after: error, attempt: attempt) else { throw error }
                wait = delay
            }
            attempt += 1
            do {
                try await Task.sleep(nanoseconds: UInt64(wait * 1e9))
            } catch {
                throw HTTPTransport.cancelled(request.url)
            }
        }
    }

    /// The blocking form of `send`, for synchronous callers (it blocks the calling thread).
    public func sendBlocking(_ request: HTTPRequestSpec, retries: Int = 0) throws -> HTTPReply {
        try sendBlocking(request, retry: RetryPolicy(retries: retries))
    }

    public func sendBlocking(_ request: HTTPRequestSpec, retry: RetryPolicy) throws -> HTTPReply {
        var attempt = 0
        while true {
            let wait: Double
            do {
                let reply = try perform(request, cancel: nil)
                guard attempt < retry.retries, let delay = retry.delay(after: reply, attempt: attempt) else { return reply }
                wait = delay
            } catch let error as StarlineError {
                guard attempt < retry.retries, let delay = retry.delay(after: error, attempt: attempt) else { throw error }
                wait = delay
            }
            attempt += 1
            HTTPTransport.sleep(seconds: wait)
        }
    }

    /// Runs the blocking transfer on a thread of its own, so the caller's (cooperative) thread is free.
    /// Task cancellation aborts the transfer (`INTERRUPTED`).
    func performOffThread(_ request: HTTPRequestSpec) async throws -> HTTPReply {
        if Task.isCancelled { throw HTTPTransport.cancelled(request.url) }
        let flag = CancelFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPReply, any Error>) in
                let started = Worker.detach {
                    continuation.resume(with: Result { try self.perform(request, cancel: flag) })
                }
                if !started {
                    continuation.resume(with: Result { try self.perform(request, cancel: flag) })
                }
            }
        } onCancel: {
            flag.cancel()
        }
    }

    // MARK: One transfer

    /// One blocking request with a pooled handle.
    func perform(_ request: HTTPRequestSpec, cancel: CancelFlag?) throws -> HTTPReply {
        let curl = try CurlLibrary.shared.get()
        let method = request.method.uppercased()
        guard !method.isEmpty, method.utf8.allSatisfy({ (0x41...0x5A).contains($0) || $0 == 0x2D || $0 == 0x5F }) else {
            throw StarlineError(.usage, "invalid HTTP method '\(request.method)'")
        }
        for (name, value) in request.headers {
            guard !name.isEmpty, !name.utf8.contains(where: { $0 <= 0x20 || $0 == 0x3A || $0 == 0x7F }) else {
                throw StarlineError(.usage, "invalid HTTP header name '\(name)'")
            }
            // A line break would inject headers; the value is not echoed (it may be a token).
            guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw StarlineError(.usage, "the value of the HTTP header \(name) contains a line break")
            }
        }
        let easy = try pool.acquire(curl)
        defer { pool.release(easy, curl) }

        let state = TransferState(limit: maxResponseBytes, cancel: cancel)
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { errorBuffer.deallocate() }

        var list: CurlLibrary.SList?
        defer { curl.slistFreeAll(list) }
        for (name, value) in request.headers {
            // "Name;" sends a header with an empty value; "Name:" would remove it.
            let line = value.isEmpty ? "\(name);" : "\(name): \(value)"
            guard let appended = curl.slistAppend(list, line) else { throw StarlineError(.internalError, "out of memory building HTTP headers") }
            list = appended
        }
        if !request.headers.contains(where: { $0.0.lowercased() == "expect" }) {
            // No "Expect: 100-continue" round trip for larger bodies.
            list = curl.slistAppend(list, "Expect:") ?? list
        }

        let timeoutMs = Int(((request.timeout.flatMap(HTTPTransport.sane) ?? timeout) * 1000).rounded(.up))
        var failed: (CURLoption, CURLcode)?
        func set(_ option: CURLoption, _ result: CURLcode) {
            if result != CURLE_OK, failed == nil { failed = (option, result) }
        }
        let box = Unmanaged.passRetained(state)
        defer { box.release() }

        let body = request.body ?? (method == "POST" ? [] : nil)
        let code: CURLcode = withBody(body) { bodyPointer, bodyCount in
            set(CURLOPT_URL, curl.setopt(easy, CURLOPT_URL, string: request.url))
            // Protocols: http and https only, whatever the URL says; redirects are never followed.
            let protocols = curl.setopt(easy, CURLOPT_PROTOCOLS_STR, string: "http,https")
            if protocols != CURLE_OK {
                set(CURLOPT_PROTOCOLS, curl.setopt(easy, CURLOPT_PROTOCOLS, starline_curlproto_http_https))  // libcurl < 7.85
            }
            set(CURLOPT_FOLLOWLOCATION, curl.setopt(easy, CURLOPT_FOLLOWLOCATION, 0))
            set(CURLOPT_NOSIGNAL, curl.setopt(easy, CURLOPT_NOSIGNAL, 1))
            set(CURLOPT_TIMEOUT_MS, curl.setopt(easy, CURLOPT_TIMEOUT_MS, max(1, timeoutMs)))
            set(CURLOPT_CONNECTTIMEOUT_MS, curl.setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, max(1, min(timeoutMs, 10_000))))
            set(CURLOPT_USERAGENT, curl.setopt(easy, CURLOPT_USERAGENT, string: userAgent))
            set(CURLOPT_ACCEPT_ENCODING, curl.setopt(easy, CURLOPT_ACCEPT_ENCODING, string: ""))
            set(CURLOPT_ERRORBUFFER, curl.setopt(easy, CURLOPT_ERRORBUFFER, pointer: errorBuffer))
            set(CURLOPT_HTTPHEADER, curl.setopt(easy, CURLOPT_HTTPHEADER, pointer: list))
            set(CURLOPT_WRITEFUNCTION, curl.setopt(easy, CURLOPT_WRITEFUNCTION, callback: curlWriteBody))
            set(CURLOPT_WRITEDATA, curl.setopt(easy, CURLOPT_WRITEDATA, pointer: box.toOpaque()))
            set(CURLOPT_HEADERFUNCTION, curl.setopt(easy, CURLOPT_HEADERFUNCTION, callback: curlWriteHeader))
            set(CURLOPT_HEADERDATA, curl.setopt(easy, CURLOPT_HEADERDATA, pointer: box.toOpaque()))
            if cancel != nil {
                set(CURLOPT_XFERINFOFUNCTION, curl.setopt(easy, CURLOPT_XFERINFOFUNCTION, progress: curlProgress))
                set(CURLOPT_XFERINFODATA, curl.setopt(easy, CURLOPT_XFERINFODATA, pointer: box.toOpaque()))
                set(CURLOPT_NOPROGRESS, curl.setopt(easy, CURLOPT_NOPROGRESS, 0))
            }
            switch method {
            case "GET" where body == nil:
                set(CURLOPT_HTTPGET, curl.setopt(easy, CURLOPT_HTTPGET, 1))
            case "HEAD":
                set(CURLOPT_NOBODY, curl.setopt(easy, CURLOPT_NOBODY, 1))
            default:
                if method != "POST" { set(CURLOPT_CUSTOMREQUEST, curl.setopt(easy, CURLOPT_CUSTOMREQUEST, string: method)) }
            }
            if let bodyPointer {
                // POSTFIELDS is not copied: the bytes stay alive until curl_easy_perform returns.
                set(CURLOPT_POSTFIELDSIZE_LARGE, curl.setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(bodyCount)))
                set(CURLOPT_POSTFIELDS, curl.setopt(easy, CURLOPT_POSTFIELDS, pointer: bodyPointer))
            }
            if failed != nil { return CURLE_OK }
            return curl.easyPerform(easy)
        }
        if let (option, result) = failed {
            throw StarlineError(.internalError, "libcurl rejected option \(option.rawValue): \(curl.describe(result))",
                                details: .object([("curlCode", .int(Int(result.rawValue))), ("libcurl", .string(curl.version))]))
        }
        pool.count(connections: curl.getinfo(easy, CURLINFO_NUM_CONNECTS) ?? 0)
        guard code == CURLE_OK else {
            throw failure(code, request: request, state: state, reason: String(cString: errorBuffer), curl: curl)
        }
        let status = curl.getinfo(easy, CURLINFO_RESPONSE_CODE) ?? 0
        return HTTPReply(status: status, headers: state.headers, body: state.body)
    }

    /// The transport error for a failed transfer. Messages name the host, never the query or headers.
    func failure(_ code: CURLcode, request: HTTPRequestSpec, state: TransferState, reason: String, curl: CurlLibrary) -> StarlineError {
        let url = WebURL(request.url)
        let host = url.map(\.host) ?? "the server"
        let bare = url.map { "\($0.scheme)://\($0.host)\($0.port.map { ":\($0)" } ?? "")\($0.path)" } ?? ""
        var details: [(String, JSON)] = [("url", .string(bare)), ("curlCode", .int(Int(code.rawValue)))]
        var why = reason
        if let query = url?.query, !query.isEmpty, why.contains(query) { why = "" }  // never echo a query (it may hold a code)
        if !why.isEmpty { details.append(("reason", .string(why))) }
        let strerror = curl.describe(code)
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            let seconds = request.timeout.flatMap(HTTPTransport.sane) ?? timeout
            return StarlineError(.timeout, "request to \(host) timed out after \(HTTPTransport.format(seconds)) s", retryable: true,
                                 details: .object(details))
        case CURLE_ABORTED_BY_CALLBACK where state.cancel?.isCancelled == true:
            return HTTPTransport.cancelled(request.url)
        case CURLE_WRITE_ERROR where state.tooLarge:
            return StarlineError(.data, "the answer from \(host) is larger than \(maxResponseBytes) bytes", details: .object(details))
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return StarlineError(.usage, "cannot request '\(bare.isEmpty ? "(invalid URL)" : bare)': \(strerror)", details: .object(details))
        default:
            return StarlineError(.network, "request to \(host) failed: \(strerror)", retryable: true, details: .object(details))
        }
    }

    /// Sleeps the calling thread, resuming after signals.
    static func sleep(seconds: Double) {
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    static func cancelled(_ url: String) -> StarlineError {
        StarlineError(.interrupted, "the request to \(WebURL(url)?.host ?? "the server") was cancelled")
    }

    /// A usable timeout: positive, finite, at most a day; nil otherwise.
    static func sane(_ seconds: Double) -> Double? {
        seconds.isFinite && seconds > 0 ? min(seconds, 86_400) : nil
    }

    static func format(_ seconds: Double) -> String {
        seconds.rounded() == seconds && abs(seconds) < 1e9 ? String(Int(seconds)) : String(seconds)
    }
}

/// Calls `body` with a pointer to the request body that stays valid for the call (nil when there is none).
private func withBody<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawPointer?, Int) -> R) -> R {
    guard let bytes else { return body(nil, 0) }
    if bytes.isEmpty {
        // A valid pointer for an empty body: POSTFIELDS NULL would make curl read the body from stdin.
        return withUnsafePointer(to: UInt8(0)) { body(UnsafeRawPointer($0), 0) }
    }
    return bytes.withUnsafeBytes { body($0.baseAddress, $0.count) }
}


// MARK: - Handle pool

/// Idle easy handles, most recently used first (its connection is the likeliest to be alive).
/// Every member is read and written under `mutex`.
final class HandlePool: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var idle: [CurlLibrary.Easy] = []
    private var created = 0
    private var connectCount = 0
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        // Every transfer holds a strong reference to the transport, so no handle is in use here.
        if !idle.isEmpty, case .success(let curl) = CurlLibrary.shared {
            for easy in idle { curl.easyCleanup(easy) }
        }
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// An idle handle, a new one while fewer than `capacity` exist, or waits for one to be released.
    func acquire(_ curl: CurlLibrary) throws -> CurlLibrary.Easy {
        pthread_mutex_lock(mutex)
        while true {
            if let easy = idle.popLast() {
                pthread_mutex_unlock(mutex)
                return easy
            }
            if created < capacity {
                created += 1
                pthread_mutex_unlock(mutex)
                guard let easy = curl.easyInit() else {
                    locked { created -= 1 }
                    pthread_cond_signal(condition)
                    throw StarlineError(.internalError, "cannot create a libcurl handle")
                }
                return easy
            }
            pthread_cond_wait(condition, mutex)
        }
    }

    /// Clears the handle's options (pointers into the finished request) but keeps its live
    /// connections, then makes it available again.
    func release(_ easy: CurlLibrary.Easy, _ curl: CurlLibrary) {
        curl.easyReset(easy)
        locked { idle.append(easy) }
        pthread_cond_signal(condition)
    }

    func count(connections: Int) { locked { connectCount += connections } }
    var connections: Int { locked { connectCount } }
}

// MARK: - Per-transfer state and libcurl callbacks

/// What the callbacks collect during one transfer; touched only by the thread running it.
final class TransferState {
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    var tooLarge = false
    let limit: Int
    let cancel: CancelFlag?

    init(limit: Int, cancel: CancelFlag?) {
        self.limit = limit
        self.cancel = cancel
    }
}

/// Set from a task-cancellation handler (any thread), read by the transfer's progress callback.
final class CancelFlag: @unchecked Sendable {
    // @unchecked: `value` is only accessed under `mutex`.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value = false

    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func cancel() {
        pthread_mutex_lock(mutex)
        value = true
        pthread_mutex_unlock(mutex)
    }

    var isCancelled: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return value
    }
}

/// CURLOPT_WRITEFUNCTION: appends to the body; a short count (over the size limit) aborts with CURLE_WRITE_ERROR.
private func curlWriteBody(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let context else { return 0 }
    let state = Unmanaged<TransferState>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    guard length > 0, let data else { return length }
    if state.body.count + length > state.limit {
        state.tooLarge = true
        return 0
    }
    data.withMemoryRebound(to: UInt8.self, capacity: length) { state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length)) }
    return length
}

/// CURLOPT_HEADERFUNCTION: one header line per call, status lines included.
private func curlWriteHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let context else { return 0 }
    let state = Unmanaged<TransferState>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    guard length > 0, let data else { return length }
    let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
    if line.hasPrefix("HTTP/") {
        state.headers = [:]  // a new response (after "100 Continue"): only the final one's headers count
        return length
    }
    guard let colon = line.firstIndex(of: ":") else { return length }
    let name = line[..<colon].lowercased()
    var value = Substring(line[line.index(after: colon)...])
    // Character comparison: "\r\n" is one Character (a grapheme cluster), so test isWhitespace.
    while let first = value.first, first.isWhitespace { value.removeFirst() }
    while let last = value.last, last.isWhitespace { value.removeLast() }
    if let existing = state.headers[name] {
        state.headers[name] = existing + ", " + value
    } else {
        state.headers[name] = String(value)
    }
    return length
}

/// CURLOPT_XFERINFOFUNCTION: non-zero aborts the transfer (CURLE_ABORTED_BY_CALLBACK) once cancelled.
private func curlProgress(_ context: UnsafeMutableRawPointer?, _ dlTotal: curl_off_t, _ dlNow: curl_off_t,
                          _ ulTotal: curl_off_t, _ ulNow: curl_off_t) -> Int32 {
    guard let context else { return 0 }
    return Unmanaged<TransferState>.fromOpaque(context).takeUnretainedValue().cancel?.isCancelled == true ? 1 : 0
}

// MARK: - Threads

/// Detached pthreads for blocking transfers (no Foundation `Thread`, no Dispatch: neither is linked).
enum Worker {
    final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Starts `body` on a new detached thread; false when no thread could be created.
    static func detach(_ body: @escaping @Sendable () -> Void) -> Bool {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let result = pthread_create(&thread, &attributes, { raw in
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, context)
        if result != 0 {
            Unmanaged<Body>.fromOpaque(context).release()
            return false
        }
        return true
    }
}
