import CCurl
import Dispatch
import StarlineCore
import StarlineLoader

/// libcurl, loaded with dlopen on the first request.
///
/// Linking libcurl costs about 9 ms of dynamic loading (OpenSSL, nghttp2, GSSAPI, LDAP, …) at every
/// start of every tool, and `sl-login status` must start in 10 ms without touching the network. So
/// CCurl only supplies the header's types and constants, and the functions are looked up here.
/// `curl_easy_setopt` and `curl_easy_getinfo` are variadic: they are called through the typed C
/// wrappers in `shim.h`, which make a proper variadic call.
package struct CurlLibrary: @unchecked Sendable {
    // @unchecked: immutable C function pointers, safe to share between threads.
    typealias Easy = UnsafeMutableRawPointer  // CURL * (`typedef void CURL`)
    typealias SList = UnsafeMutablePointer<curl_slist>

    // Typed by curl.h itself (CCurl's shim.h: `typedef __typeof__(&curl_…) starline_curl_…_f`).
    let easyInit: starline_curl_easy_init_f
    let easyCleanup: starline_curl_easy_cleanup_f
    let easyReset: starline_curl_easy_reset_f
    let easyPerform: starline_curl_easy_perform_f
    let easyStrerror: starline_curl_easy_strerror_f
    let slistAppend: starline_curl_slist_append_f
    let slistFreeAll: starline_curl_slist_free_all_f
    let versionFunction: starline_curl_version_f
    /// `curl_easy_setopt` / `curl_easy_getinfo`, only ever called through the shim's variadic wrappers.
    let setoptFunction: UnsafeMutableRawPointer
    let getinfoFunction: UnsafeMutableRawPointer

    /// The library, or why it could not be loaded. Loaded and `curl_global_init`ed once per process:
    /// Swift globals are initialised lazily and thread-safely (swift_once), which also satisfies
    /// "call curl_global_init once, before any other thread uses libcurl".
    package static let shared: Result<CurlLibrary, StarlineError> = load()

    /// Starts loading libcurl on a background thread when a request is about to follow local work — a
    /// restore reads and unseals the stored session first — so the ~6–9 ms of loading overlap that work
    /// instead of following it. The first real use waits for the load (`loaded`). `curl_global_init` then
    /// runs while other threads work; libcurl documents that as safe from 7.84 (CURL_VERSION_THREADSAFE;
    /// Debian 12 ships 7.88), and a Swift async program has other threads running in any case. A run that
    /// needs no request after all ends without waiting for it (async tools end with `_exit`: `exit` would
    /// wait for the dynamic loader's lock).
    static func preload() {
        // Once per process: a restore asks at the start and again when it verifies; one thread loads.
        guard
            preloadState.withLock({ state in
                guard state == .notAsked else { return false }
                state = .loading
                return true
            })
        else { return }
        // dlopen holds the dynamic loader's locks for the whole load, and what an async tool does early takes
        // them once each: the Swift concurrency runtime looks up its executor hook (`dispatch_async_swift_job`)
        // with dlsym at its first enqueue; dispatch_main ends the main thread with pthread_exit, which loads
        // glibc's unwinder, and then starts a thread for the main queue — and creating a thread waits for the
        // loader's TLS lock. Any of them during the load made the store's reading and unsealing (main actor)
        // follow the load instead of overlapping it (strace: the main thread, then the main queue's new
        // thread, in a futex until the dlopen ended). So the lookup, the unwinder and a thread that the
        // main queue's root queue can wake instead of creating one (a serial queue's default target) first.
        Task.detached {}
        DispatchQueue(label: "starline.preload").async {}
        starline_load_unwinder()
        let started = WorkerThreads.detach {
            _ = CurlLibrary.shared
            preloadState.withLockNotifying { $0 = .done }
        }
        // No thread (EAGAIN): the first request loads libcurl itself, as without a preload.
        if !started { preloadState.withLockNotifying { $0 = .done } }
    }

    /// The library, after the preload (if one runs) is done. A request waits here on a condition variable,
    /// not in `shared`'s one-time initialisation: swift_once waits on a priority-inheriting futex, which the
    /// kernel spins on while the owner runs — a whole core spent spinning against the load (perf: 5 % of a
    /// restore's samples in rt_mutex_slowlock_block) on a two-core machine that needs it for the load.
    static var loaded: Result<CurlLibrary, StarlineError> {
        _ = preloadState.await { $0 == .loading ? nil : () }
        return shared
    }

    fileprivate enum PreloadState { case notAsked, loading, done }

    static func load() -> Result<CurlLibrary, StarlineError> {
        // The soname of Debian's libcurl4 (OpenSSL flavour); the unversioned name exists only with the -dev package.
        let loaded = SharedLibrary.load(
            ["libcurl.so.4", "libcurl.so"], .init("libcurl", package: "libcurl4", remedy: "libcurl 7.32 or newer is needed")
        ) {
            library in
            (
                CurlLibrary(
                    easyInit: library.function("curl_easy_init"),
                    easyCleanup: library.function("curl_easy_cleanup"),
                    easyReset: library.function("curl_easy_reset"),
                    easyPerform: library.function("curl_easy_perform"),
                    easyStrerror: library.function("curl_easy_strerror"),
                    slistAppend: library.function("curl_slist_append"),
                    slistFreeAll: library.function("curl_slist_free_all"),
                    versionFunction: library.function("curl_version"),
                    setoptFunction: library.address("curl_easy_setopt"),
                    getinfoFunction: library.address("curl_easy_getinfo")),
                globalInit: library.function("curl_global_init") as starline_curl_global_init_f
            )
        }
        let curl: CurlLibrary
        let globalInit: starline_curl_global_init_f
        switch loaded {
        case .success(let bound): (curl, globalInit) = bound
        case .failure(let error): return .failure(error)
        }
        let status = globalInit(starline_curl_global_default)
        guard status == CURLE_OK else {
            return .failure(StarlineError(.internalError, "cannot initialise libcurl: \(curl.describe(status))"))
        }
        return .success(curl)
    }

    // MARK: Typed calls

    func setopt(_ easy: Easy, _ option: CURLoption, _ value: Int) -> CURLcode {
        starline_curl_setopt_long(setoptFunction, easy, option, value)
    }

    func setopt(_ easy: Easy, _ option: CURLoption, pointer value: UnsafeRawPointer?) -> CURLcode {
        starline_curl_setopt_ptr(setoptFunction, easy, option, value)
    }

    /// A string option; libcurl copies `char *` options (except POSTFIELDS) before returning.
    func setopt(_ easy: Easy, _ option: CURLoption, string value: String) -> CURLcode {
        value.withCString { starline_curl_setopt_ptr(setoptFunction, easy, option, $0) }
    }

    func setopt(_ easy: Easy, _ option: CURLoption, offset value: Int64) -> CURLcode {
        starline_curl_setopt_off(setoptFunction, easy, option, curl_off_t(value))
    }

    func setopt(_ easy: Easy, _ option: CURLoption, callback: starline_curl_data_callback) -> CURLcode {
        starline_curl_setopt_data_callback(setoptFunction, easy, option, callback)
    }

    func setopt(_ easy: Easy, _ option: CURLoption, progress: starline_curl_xferinfo_callback) -> CURLcode {
        starline_curl_setopt_xferinfo_callback(setoptFunction, easy, option, progress)
    }

    func getinfo(_ easy: Easy, _ info: CURLINFO) -> Int? {
        var value = 0
        return starline_curl_getinfo_long(getinfoFunction, easy, info, &value) == CURLE_OK ? value : nil
    }

    func describe(_ code: CURLcode) -> String {
        easyStrerror(code).map { String(cString: $0) } ?? "libcurl error \(code.rawValue)"
    }

    var version: String { versionFunction().map { String(cString: $0) } ?? "libcurl" }
}

/// Whether `preload` started the load and whether it is done (`loaded` waits for it).
private let preloadState = Locked(CurlLibrary.PreloadState.notAsked)
