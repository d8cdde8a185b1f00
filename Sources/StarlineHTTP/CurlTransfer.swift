import CCurl
import StarlineCore

/// One request over libcurl, blocking the calling thread: checks the request, takes an easy handle from the
/// pool, sets its options, runs curl_easy_perform and turns the outcome into a reply or a typed error.
/// Never repeats anything; that is the retry loop's business.
struct CurlTransfer {
    let request: HTTPRequestSpec
    /// Uppercased and checked.
    let method: String
    /// Seconds: the request's own timeout when usable, else the transport's.
    let timeout: Double
    let userAgent: String
    let maxResponseBytes: Int
    /// Set when the task waiting for this transfer is cancelled; nil for blocking callers, which cannot be.
    let cancel: CancelFlag?

    /// `USAGE` for a method or header that cannot be sent (before anything is sent).
    /// The host is a loopback address: no proxy (see `configure`). Decided by the transport, once per origin.
    let loopback: Bool
    /// Where the CA bundle came from (for error details).
    let trust: TLSTrust
    /// The CA bundle's bytes as the transport read and checked them (`TLSTrust.loadBundle`); nil: the system store.
    let caBundleBytes: [UInt8]?

    init(
        _ request: HTTPRequestSpec, timeout: Double, userAgent: String, maxResponseBytes: Int, cancel: CancelFlag?, loopback: Bool,
        trust: TLSTrust = .system, caBundleBytes: [UInt8]? = nil
    ) throws {
        self.loopback = loopback
        self.trust = trust
        self.caBundleBytes = caBundleBytes
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
        self.request = request
        self.method = method
        self.timeout = request.timeout.flatMap(HTTPTransport.sane) ?? timeout
        self.userAgent = userAgent
        self.maxResponseBytes = maxResponseBytes
        self.cancel = cancel
    }

    /// Runs the transfer with a handle from `pool`, which also counts the connections it opened.
    func run(_ curl: CurlLibrary, pool: CurlHandlePool) throws -> HTTPReply {
        let easy = try pool.acquire(curl)
        defer { pool.release(easy, curl) }

        let state = TransferState(limit: maxResponseBytes, cancel: cancel)
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { errorBuffer.deallocate() }
        let headers = try headerList(curl)
        defer { curl.slistFreeAll(headers) }
        // The callbacks get the state as a raw pointer; this reference keeps it alive until perform returns.
        let box = Unmanaged.passRetained(state)
        defer { box.release() }

        var failed: (option: CURLoption, result: CURLcode)?
        let body = request.body ?? (method == "POST" ? [] : nil)
        let code: CURLcode = withBody(body) { bodyPointer, bodyCount in
            failed = configure(
                easy, curl, headers: headers, errorBuffer: errorBuffer, context: box.toOpaque(),
                body: bodyPointer, bodyCount: bodyCount)
            if failed != nil { return CURLE_OK }
            return curl.easyPerform(easy)
        }
        if let (option, result) = failed {
            throw StarlineError(
                .internalError, "libcurl rejected option \(option.rawValue): \(curl.describe(result))",
                details: .object([("curlCode", .int(Int(result.rawValue))), ("libcurl", .string(curl.version))]))
        }
        pool.count(connections: curl.getinfo(easy, CURLINFO_NUM_CONNECTS) ?? 0)
        guard code == CURLE_OK else {
            throw failure(code, state: state, reason: String(cString: errorBuffer), curl: curl)
        }
        let status = curl.getinfo(easy, CURLINFO_RESPONSE_CODE) ?? 0
        return HTTPReply(status: status, headers: state.headers, body: state.body)
    }

    /// The request's headers as a list for CURLOPT_HTTPHEADER; the caller frees it (curl_slist_free_all).
    private func headerList(_ curl: CurlLibrary) throws -> CurlLibrary.SList? {
        var list: CurlLibrary.SList?
        for (name, value) in request.headers {
            // "Name;" sends a header with an empty value; "Name:" would remove it.
            let line = value.isEmpty ? "\(name);" : "\(name): \(value)"
            guard let appended = curl.slistAppend(list, line) else {
                curl.slistFreeAll(list)
                throw StarlineError(.internalError, "out of memory building HTTP headers")
            }
            list = appended
        }
        if !request.headers.contains(where: { $0.0.lowercased() == "expect" }) {
            // No "Expect: 100-continue" round trip for larger bodies.
            list = curl.slistAppend(list, "Expect:") ?? list
        }
        return list
    }

    /// Sets every option of this transfer on `easy`; the first one libcurl rejected, or nil.
    private func configure(
        _ easy: CurlLibrary.Easy, _ curl: CurlLibrary, headers: CurlLibrary.SList?, errorBuffer: UnsafeMutablePointer<CChar>,
        context: UnsafeMutableRawPointer, body: UnsafeRawPointer?, bodyCount: Int
    ) -> (option: CURLoption, result: CURLcode)? {
        var failed: (option: CURLoption, result: CURLcode)?
        func set(_ option: CURLoption, _ result: CURLcode) {
            if result != CURLE_OK, failed == nil { failed = (option, result) }
        }
        let timeoutMs = Int((timeout * 1000).rounded(.up))
        set(CURLOPT_URL, curl.setopt(easy, CURLOPT_URL, string: request.url))
        // A proxy from the environment (http_proxy, HTTPS_PROXY, ALL_PROXY) is never used for a loopback host:
        // the bearer token would travel in cleartext to whatever proxy is set. "Setting the proxy string to ""
        // (an empty string) explicitly disables the use of a proxy, even if there is an environment variable set
        // for it" (CURLOPT_PROXY). https to other hosts keeps the environment's proxy (CONNECT), which corporate
        // networks need.
        if loopback {
            set(CURLOPT_PROXY, curl.setopt(easy, CURLOPT_PROXY, string: ""))
        }
        // A private CA, from the bytes read and checked once (FileTrust.trustDeciding), never the path opened
        // again: "Pass a pointer to a curl_blob structure, which contains information (pointer and size) about
        // a memory block with binary data of PEM encoded content holding one or more certificates to verify the
        // HTTPS server with" (CURLOPT_CAINFO_BLOB, 7.77.0; CURL_BLOB_COPY: libcurl keeps its own copy). The
        // compiled-in CAINFO and CAPATH are cleared, so the bundle replaces the system store instead of adding to
        // it. Peer and host verification (CURLOPT_SSL_VERIFYPEER, CURLOPT_SSL_VERIFYHOST) stay on, always.
        if let bundle = caBundleBytes {
            set(CURLOPT_CAINFO, curl.setopt(easy, CURLOPT_CAINFO, pointer: nil))
            set(CURLOPT_CAPATH, curl.setopt(easy, CURLOPT_CAPATH, pointer: nil))
            let code = bundle.withUnsafeBytes { bytes in
                var blob = curl_blob(
                    data: UnsafeMutableRawPointer(mutating: bytes.baseAddress), len: bytes.count, flags: UInt32(CURL_BLOB_COPY))
                return withUnsafePointer(to: &blob) { curl.setopt(easy, CURLOPT_CAINFO_BLOB, pointer: UnsafeRawPointer($0)) }
            }
            set(CURLOPT_CAINFO_BLOB, code)
        }
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
        set(CURLOPT_HTTPHEADER, curl.setopt(easy, CURLOPT_HTTPHEADER, pointer: headers))
        set(CURLOPT_WRITEFUNCTION, curl.setopt(easy, CURLOPT_WRITEFUNCTION, callback: curlWriteBody))
        set(CURLOPT_WRITEDATA, curl.setopt(easy, CURLOPT_WRITEDATA, pointer: context))
        set(CURLOPT_HEADERFUNCTION, curl.setopt(easy, CURLOPT_HEADERFUNCTION, callback: curlWriteHeader))
        set(CURLOPT_HEADERDATA, curl.setopt(easy, CURLOPT_HEADERDATA, pointer: context))
        if cancel != nil {
            set(CURLOPT_XFERINFOFUNCTION, curl.setopt(easy, CURLOPT_XFERINFOFUNCTION, progress: curlProgress))
            set(CURLOPT_XFERINFODATA, curl.setopt(easy, CURLOPT_XFERINFODATA, pointer: context))
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
        if let body {
            // POSTFIELDS is not copied: the bytes stay alive until curl_easy_perform returns.
            set(CURLOPT_POSTFIELDSIZE_LARGE, curl.setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(bodyCount)))
            set(CURLOPT_POSTFIELDS, curl.setopt(easy, CURLOPT_POSTFIELDS, pointer: body))
        }
        return failed
    }

    /// The transport error for a failed transfer. Messages name the host, never the query or headers.
    private func failure(_ code: CURLcode, state: TransferState, reason: String, curl: CurlLibrary) -> StarlineError {
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
            return StarlineError(
                .timeout, "request to \(host) timed out after \(Self.format(timeout)) s", retryable: true,
                details: .object(details))
        case CURLE_ABORTED_BY_CALLBACK where state.cancel?.isCancelled == true:
            return StarlineError.requestCancelled(request.url)
        case CURLE_WRITE_ERROR where state.tooLarge:
            return StarlineError(.data, "the answer from \(host) is larger than \(maxResponseBytes) bytes", details: .object(details))
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return StarlineError(
                .usage, "cannot request '\(bare.isEmpty ? "(invalid URL)" : bare)': \(strerror)", details: .object(details))
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return tlsFailure(code, host: host, reason: why.isEmpty ? strerror : why, details: details)
        default:
            return StarlineError(.network, "request to \(host) failed: \(strerror)", retryable: true, details: .object(details))
        }
    }

    /// `TLS_ERROR`: the server's certificate did not verify with the trusted CAs, or the CA bundle did not load.
    /// Not retryable (another attempt meets the same certificate); the message says how to trust a private CA.
    private func tlsFailure(_ code: CURLcode, host: String, reason: String, details: [(String, JSON)]) -> StarlineError {
        var details = details
        let trusted: String
        if let bundle = trust.caBundle, let source = trust.source {
            details += [("caBundle", .string(bundle)), ("caBundleSource", .string(source.rawValue))]
            trusted = "the CA bundle \(bundle) (from \(source.rawValue))"
        } else {
            trusted = "the system's CA store"
        }
        if code == CURLE_SSL_CACERT_BADFILE {
            return StarlineError(
                .tls, "cannot load \(trusted): \(reason); a CA bundle is a file of PEM certificates", details: .object(details))
        }
        return StarlineError(
            .tls, "the certificate of \(host) could not be verified with \(trusted): \(reason); \(TLSTrust.privateCAHint)",
            details: .object(details))
    }

    /// Whole seconds without a fraction ("1", not "1.0").
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
