import StarlineCore

/// The easy handles of one `HTTPTransport`, kept so connections are reused across requests: given the same
/// handle, "libcurl will then attempt to re-use the same connection for the following transfers"
/// (curl_easy_perform(3)), and curl_easy_reset "does not change … live connections".
///
/// A handle is taken out for a whole transfer and put back afterwards, because "you must never call this
/// function simultaneously from two places using the same handle". At most `capacity` handles exist (and so
/// connections); a transfer that finds none idle waits for one to come back.
final class CurlHandlePool: Sendable {
    // @unchecked: easy handles are raw pointers; each is used by one thread at a time — taken out of `idle`
    // under the lock, used by the transfer that took it, put back under the lock.
    private struct State: @unchecked Sendable {
        /// Most recently used last: `popLast` takes the handle whose connection is the likeliest to be alive.
        var idle: [CurlLibrary.Easy] = []
        var created = 0
        /// `CURLINFO_NUM_CONNECTS` summed over every transfer.
        var connections = 0
    }

    private let state = Locked(State())
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    deinit {
        // Every transfer holds a strong reference to its transport (and so to this pool): no handle is in use here.
        let idle = state.withLock { $0.idle }
        if !idle.isEmpty, case .success(let curl) = CurlLibrary.shared {
            for easy in idle { curl.easyCleanup(easy) }
        }
    }

    /// An idle handle, a new one while fewer than `capacity` exist, or — when neither — the next one released.
    func acquire(_ curl: CurlLibrary) throws -> CurlLibrary.Easy {
        enum Grant { case idle(CurlLibrary.Easy), create }
        let capacity = self.capacity
        // No deadline: `await` returns only once the body gives a value.
        let grant = state.await { state -> Grant? in
            if let easy = state.idle.popLast() { return .idle(easy) }
            guard state.created < capacity else { return nil }
            state.created += 1
            return .create
        }!
        switch grant {
        case .idle(let easy):
            return easy
        case .create:
            // Outside the lock: curl_easy_init allocates and may take a while the first time.
            guard let easy = curl.easyInit() else {
                state.withLockNotifying { $0.created -= 1 }  // a waiter may create one instead
                throw StarlineError(.internalError, "cannot create a libcurl handle")
            }
            return easy
        }
    }

    /// Clears the handle's options (pointers into the finished request) but keeps its live
    /// connections, then makes it available again.
    func release(_ easy: CurlLibrary.Easy, _ curl: CurlLibrary) {
        curl.easyReset(easy)
        state.withLockNotifying { $0.idle.append(easy) }
    }

    func count(connections: Int) { state.withLock { $0.connections += connections } }
    var connections: Int { state.withLock { $0.connections } }
}
