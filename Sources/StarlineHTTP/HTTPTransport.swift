#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// HTTP/1.1 over libcurl (loaded with dlopen on the first request), with a pool of easy handles so
/// connections are kept alive and reused across requests. The suite's `HTTPExchange`: `send` and
/// `sendBlocking` (from the protocol) repeat requests as a `RetryPolicy` says. A tool builds it in one place,
/// the front ends' factory (`PlatformFactory`); libraries take any `HTTPExchange`.
///
/// Sendable without a lock of its own: the configuration is immutable, and the pool — the only mutable
/// state — locks itself. `curl_global_init` runs once, inside `CurlLibrary.shared` (swift_once).
public final class HTTPTransport: HTTPExchange {
    /// Loads libcurl in the background ahead of a request that local work precedes; see `CurlLibrary.preload`.
    public static func preloadLibrary() { CurlLibrary.preload() }

    public let timeout: Double
    public let userAgent: String
    public let maxConnections: Int
    /// Response bodies larger than this fail with `DATA_ERROR` instead of filling memory.
    public let maxResponseBytes: Int
    /// The certificate authorities trusted for `https://` (the run's, `TLSTrust.configured`, unless given).
    public let trust: TLSTrust
    /// The CA bundle's bytes, read once at the first https request (nil until then; `.success(nil)`: the
    /// system store).
    private let trustLoaded = Locked<Result<[UInt8]?, StarlineError>?>(nil)
    let pool: CurlHandlePool
    /// Loopback or not, per origin (`scheme://authority`): a bulk run sends thousands of requests to one
    /// origin, and parsing each URL again cost more than the rest of building the request.
    private let loopbackOrigins = Locked([String: Bool]())

    public static let defaultUserAgent = "starline/\(StarlineVersion.current) (Linux)"

    public init(
        timeout: Double = 30, userAgent: String = HTTPTransport.defaultUserAgent, maxConnections: Int = 8,
        maxResponseBytes: Int = 32 << 20, trust: TLSTrust? = nil
    ) {
        self.timeout = HTTPTransport.sane(timeout) ?? 30
        self.userAgent = userAgent
        self.maxConnections = max(1, maxConnections)
        self.maxResponseBytes = maxResponseBytes
        self.trust = trust ?? TLSTrust.configured
        pool = CurlHandlePool(capacity: max(1, maxConnections))
    }

    /// Connections libcurl opened so far (`CURLINFO_NUM_CONNECTS` summed over every request): with
    /// keep-alive, sequential requests to one server open one.
    var connectionsOpened: Int { pool.connections }

    // MARK: One attempt

    /// One blocking transfer on the calling thread.
    package func transfer(_ request: HTTPRequestSpec, cancel: CancelFlag?) throws -> HTTPReply {
        let curl = try CurlLibrary.loaded.get()
        let bundle = Self.isHTTPS(request.url) ? try loadedTrust() : nil
        let transfer = try CurlTransfer(
            request, timeout: timeout, userAgent: userAgent, maxResponseBytes: maxResponseBytes, cancel: cancel,
            loopback: isLoopback(request.url), trust: trust, caBundleBytes: bundle)
        return try transfer.run(curl, pool: pool)
    }

    /// The scheme is https (ASCII case-insensitive), without building a lowercased copy of every URL of a bulk run.
    static func isHTTPS(_ url: String) -> Bool {
        var bytes = url.utf8.makeIterator()
        for expected in "https:".utf8 {
            guard let byte = bytes.next(), byte | 0x20 == expected | 0x20 else { return false }
        }
        return true
    }

    /// The CA bundle, read once (`TLSTrust.loadBundle`) at the first https request, not at start, so local
    /// commands and plain http to a loopback sl-devserver run whatever it names. A bundle that cannot be read
    /// or trusted is an error before anything is sent over https (never retried).
    private func loadedTrust() throws -> [UInt8]? {
        let result = trustLoaded.withLock { loaded in
            if let loaded { return loaded }
            let result: Result<[UInt8]?, StarlineError>
            do throws(StarlineError) { result = .success(try trust.loadBundle()) } catch { result = .failure(error) }
            loaded = result
            return result
        }
        return try result.get()
    }

    func isLoopback(_ url: String) -> Bool {
        // The origin: up to the first "/" after "://" (or the whole URL).
        let bytes = Array(url.utf8)
        var end = bytes.count
        if let scheme = bytes.firstIndex(of: UInt8(ascii: ":")), scheme + 2 < bytes.count,
            let slash = bytes[(scheme + 3)...].firstIndex(where: {
                $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
            })
        {
            end = slash
        }
        let origin = String(decoding: bytes[..<end], as: UTF8.self)
        if let known = loopbackOrigins.withLock({ $0[origin] }) { return known }
        let loopback = WebURL(url)?.hostIsLoopback ?? false
        loopbackOrigins.withLock { cache in
            if cache.count >= 64 { cache.removeAll() }
            cache[origin] = loopback
        }
        return loopback
    }

    // MARK: Blocking

    /// One attempt on the calling thread, which cannot be cancelled (`sendBlocking` retries it).
    public func performBlocking(_ request: HTTPRequestSpec) throws -> HTTPReply {
        try transfer(request, cancel: nil)
    }

    /// One attempt on the calling thread, aborted once `cancel` is set (the progress callback reads it).
    public func performBlocking(_ request: HTTPRequestSpec, cancel: CancelFlag?) throws -> HTTPReply {
        try transfer(request, cancel: cancel)
    }

    /// Sleeps the calling thread, resuming after signals.
    package static func sleep(seconds: Double) {
        StarlineClock.threadSleep(seconds: min(seconds, 86_400))  // never beyond a day
    }

    /// A usable timeout: positive, finite, at most a day; nil otherwise.
    static func sane(_ seconds: Double) -> Double? {
        seconds.isFinite && seconds > 0 ? min(seconds, 86_400) : nil
    }
}
