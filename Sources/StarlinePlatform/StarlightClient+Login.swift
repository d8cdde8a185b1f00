#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineCrypto
import StarlineHTTP

extension StarlightClient {
    /// How `login(_:)` signs in.
    public enum LoginMethod {
        /// An existing access token, verified with /api/me before it is stored.
        case token(String)
        /// RFC 8628 device authorization; `present` shows the user code (and its QR) to the person.
        case device(present: (DeviceAuthorization) -> Void)
        /// Browser + loopback redirect (RFC 8252) on an already bound listener; `open` launches the browser.
        case loopback(LoopbackListener, open: (String) -> Void)
    }

    // MARK: Login

    /// A foreground login. While it runs, `restoreSession()` answers "no result" (S6); it invalidates
    /// restores already in flight; `cancelLogin()` makes a late success unpublished (S9).
    /// `pendingTTL` is clamped to 1 s … `PendingLogin.maxTTL` (a day).
    public func login(_ method: LoginMethod, pendingTTL: Int64 = 600) async throws -> PlatformSession {
        loginInProgressBegin()
        defer { loginInProgressEnd() }
        let pendingTTL = PendingLogin.clampedTTL(pendingTTL)
        switch method {
        case .token(let token):
            let generation = try beginPersistentLogin(
                PendingLogin(
                    mode: .token, state: "", verifier: "", redirectURI: "", deviceCode: nil,
                    createdAt: clock.now(), expiresAt: clock.now() + pendingTTL))
            let me: Me
            do { me = try await platform.me(token: token) } catch {
                abandonPendingLogin(generation)
                throw Self.starline(error)
            }
            // Both times are RFC 3339 instants (years 0001–9999): the difference cannot overflow.
            let grant = TokenGrant(
                accessToken: token, sessionId: me.sessionId, expiresIn: me.expiresAt - clock.now(), user: me.user, roles: me.roles)
            return try await finishLogin(grant, generation: generation, revokeOnFailure: false)
        case .device(let present):
            let authorization = try await platform.deviceAuthorization()
            let generation = try beginPersistentLogin(
                PendingLogin(
                    mode: .device, state: "", verifier: "", redirectURI: authorization.verificationURI,
                    deviceCode: authorization.deviceCode, createdAt: clock.now(),
                    expiresAt: ReplyLimits.instant(
                        clock.now(),
                        plus: min(authorization.expiresIn, ReplyLimits.maxDeviceCodeLifetime))))
            present(authorization)
            // PlatformAPI clamped both (ReplyLimits); clamped again here for an authorization made by other code.
            var interval = min(max(0, authorization.interval), ReplyLimits.pollInterval.upperBound)
            let deadline = ReplyLimits.instant(clock.now(), plus: authorization.expiresIn)
            while true {
                try await Task.sleep(nanoseconds: UInt64(interval) * 1_000_000_000)
                try checkNotCancelled(generation)
                let poll: DevicePoll
                do { poll = try await platform.pollDevice(deviceCode: authorization.deviceCode) } catch {
                    abandonPendingLogin(generation)
                    throw Self.starline(error)
                }
                switch poll {
                case .pending: break
                case .slowDown: interval = ReplyLimits.slowedDown(interval)  // RFC 8628 §3.5, at most 300 s
                case .granted(let grant): return try await finishLogin(grant, generation: generation, revokeOnFailure: true)
                }
                if clock.now() > deadline {
                    abandonPendingLogin(generation)
                    throw StarlineError(.noResult, "the device code expired before the sign-in was approved")
                }
            }
        case .loopback(let listener, let open):
            let (verifier, challenge) = PKCE.make()
            let state = Base64.encodeURL(Sodium.randomBytes(16))
            let generation = try beginPersistentLogin(
                PendingLogin(
                    mode: .loopback, state: state, verifier: verifier, redirectURI: listener.redirectURI,
                    deviceCode: nil, createdAt: clock.now(), expiresAt: clock.now() + pendingTTL))
            let url = platform.authorizeURL(redirectURI: listener.redirectURI, state: state, codeChallenge: challenge)
            open(url)
            let callback: Callback
            do { callback = try await listener.waitForCallback(state: state, within: pendingTTL) } catch {
                abandonPendingLogin(generation)
                throw Self.starline(error)
            }
            do {
                return try await exchange(
                    callback, expectedState: state, verifier: verifier, redirectURI: listener.redirectURI, generation: generation)
            } catch {
                // Nobody else can finish a loopback login (its listener ends with this process): do not leave
                // it pending, or every sl-restore would answer NO_RESULT until it expired.
                abandonPendingLogin(generation)
                throw error
            }
        }
    }

    /// Two-step login, step 1: a pending transaction other processes can complete or cancel.
    public func startLogin(ttl: Int64 = 600) throws -> (url: String, pending: PendingLogin) {
        let ttl = PendingLogin.clampedTTL(ttl)
        let (verifier, challenge) = PKCE.make()
        let state = Base64.encodeURL(Sodium.randomBytes(16))
        let redirect = "starline-\(configuration.appId)://auth/callback"
        let pending = PendingLogin(
            mode: .paste, state: state, verifier: verifier, redirectURI: redirect, deviceCode: nil,
            createdAt: clock.now(), expiresAt: clock.now() + ttl)
        _ = try beginPersistentLogin(pending)
        return (platform.authorizeURL(redirectURI: redirect, state: state, codeChallenge: challenge), pending)
    }

    /// Two-step login, step 2 (possibly in another process, after a restart).
    public func completeLogin(_ callback: Callback) async throws -> PlatformSession {
        guard let store else { throw StarlineError(.usage, "two-step login needs the persistent store (unset STARLINE_TOKEN)") }
        let (pending, generation): (PendingLogin?, Int64) = try store.withState { state in (try state.pendingLogin(), state.generation) }
        guard let pending, pending.mode.takesCallback else {
            throw StarlineError(.noResult, "no login is pending (it completed, was cancelled or expired); start one with sl-login start")
        }
        loginInProgressBegin()
        defer { loginInProgressEnd() }
        return try await exchange(
            callback, expectedState: pending.state, verifier: pending.verifier, redirectURI: pending.redirectURI, generation: generation)
    }

    private func exchange(_ callback: Callback, expectedState: String, verifier: String, redirectURI: String, generation: Int64)
        async throws -> PlatformSession
    {
        guard let state = callback.state, Sodium.constantTimeEquals(Array(state.utf8), Array(expectedState.utf8)) else {
            throw StarlineError(.stateMismatch, "the callback's state does not match the pending login; it was not used")
        }
        if let error = callback.error {
            abandonPendingLogin(generation)
            throw StarlineError(
                .noResult, error == "access_denied" ? "the sign-in was denied" : "the sign-in failed: \(error)",
                details: .object([("error", .string(error))]))
        }
        guard let code = callback.code, !code.isEmpty else { throw StarlineError(.usage, "the callback carries no code") }
        let grant: TokenGrant
        do {
            grant = try await platform.exchangeCode(code: code, redirectURI: redirectURI, verifier: verifier, deviceName: LoginDevice.name)
        } catch {
            let failure = Self.starline(error)
            // invalid_grant: the code is spent or expired, so this pending login can never complete. (After a
            // network failure it is kept: `complete` may be retried while the code is still unused.)
            if failure.code == .invalidGrant { abandonPendingLogin(generation) }
            throw failure
        }
        return try await finishLogin(grant, generation: generation, revokeOnFailure: true)
    }

    // MARK: Login bookkeeping

    private func loginInProgressBegin() {
        loginInProgress = true
        identityChanges += 1
        inFlightRestore = nil  // S6: a new login invalidates restore results already in flight
    }

    private func loginInProgressEnd() {
        loginInProgress = false
        pendingLoginOnInterrupt = nil
    }

    /// Persists the pending login and bumps the generation, so restores in other processes answer
    /// "no result" and restores already in flight are superseded (S6).
    func beginPersistentLogin(_ pending: PendingLogin) throws -> Int64 {
        guard let store else { return 0 }
        let generation = try store.withState { state in
            try state.savePendingLogin(pending)
            return try state.bumpGeneration()
        }
        // A foreground login dies with this process: Ctrl-C must not leave it pending (every sl-restore would
        // answer NO_RESULT until it expired). A two-step `start` is meant to outlive it, and is not a foreground login.
        if loginInProgress {
            pendingLoginOnInterrupt = Interrupts.onInterrupt { Self.abandonPendingLogin(store, generation) }
        }
        return generation
    }

    private func abandonPendingLogin(_ generation: Int64) {
        if let store { Self.abandonPendingLogin(store, generation) }
    }

    /// Clears the pending login unless another login or a cancel came since (compare by generation).
    /// Safe on any thread: one transaction under the store's lock.
    nonisolated static func abandonPendingLogin(_ store: SessionStore, _ generation: Int64) {
        _ = try? store.withState { state in
            if state.generation == generation {
                try state.clearPendingLogin()
                try state.bumpGeneration()
            }
        }
    }

    private func checkNotCancelled(_ generation: Int64) throws {
        guard let store else { return }
        let current = try store.withState { $0.generation }
        if current != generation { throw StarlineError(.noResult, "the login was cancelled") }
    }

    /// Stores and publishes a new session, unless the login was cancelled or superseded meanwhile (S9).
    /// A failed store write revokes the new server session best-effort and reports STORAGE_ERROR (S17).
    private func finishLogin(_ grant: TokenGrant, generation: Int64, revokeOnFailure: Bool) async throws -> PlatformSession {
        // PlatformAPI clamped the lifetime (ReplyLimits); `instant` keeps any other grant inside what the store holds.
        let new = PlatformSession(
            accessToken: grant.accessToken, sessionId: grant.sessionId, user: grant.user, roles: grant.roles,
            expiresAt: ReplyLimits.instant(clock.now(), plus: min(grant.expiresIn, ReplyLimits.maxTokenLifetime)),
            verifiedAt: clock.now())
        let identityChangesBefore = identityChanges
        var replacedSession = false
        if let store {
            do {
                try store.withState { state in
                    guard state.generation == generation else {
                        throw StarlineError(.noResult, "the login was cancelled or superseded; its late result was not used")
                    }
                    // The session this login replaces is revoked like a logged-out one: queued in the same
                    // transaction (so no crash can forget it), then tried below within the best-effort budget.
                    // A damaged row cannot be revoked, and must not stop the new login.
                    if let old = try? state.candidate(), old.sessionId != new.sessionId {
                        try state.addPendingRevocation(sessionId: old.sessionId, accessToken: old.accessToken)
                        replacedSession = true
                    }
                    try state.saveCandidate(new.candidate(createdAt: clock.now()))
                    try state.clearPendingLogin()
                    try state.clearRevocationMarker()
                    try state.bumpGeneration()
                }
            } catch {
                let failure = Self.starline(error)
                if revokeOnFailure { try? await platform.revoke(token: grant.accessToken) }
                if failure.exitStatus == .storage {
                    _ = reportStorageError(failure)
                    abandonPendingLogin(generation)
                }
                throw failure
            }
        }
        guard identityChanges == identityChangesBefore else {
            throw StarlineError(.noResult, "the identity changed while the login finished; its result was not published")
        }
        publish(new)
        if replacedSession { await retryPendingRevocations() }
        // A change of custodian leaves the old keyring item unused; a failure to delete it is kept as an
        // orphan (sl-login status shows it, sl-login clear retries) and does not undo the login.
        if let failure = store?.releaseUnusedKeyringItems() { onError?(failure) }
        return new
    }

    // MARK: Cancel (S9)

    /// Invalidates a pending login (here and in other processes); an established session is kept.
    @discardableResult
    public func cancelLogin() throws -> Bool {
        identityChanges += 1
        loginInProgress = false
        guard let store else { return false }
        return try store.withState { state in
            // A corrupt pending login (an impossible expiry) is what cancel is told to remove: no need to read it.
            let had: Bool
            do { had = try state.pendingLogin() != nil } catch let error as StarlineError where error.code == .corruptFile { had = true }
            try state.clearPendingLogin()
            try state.bumpGeneration()
            return had
        }
    }
}

/// The device name sent with a token exchange (shown in the account's device sessions).
enum LoginDevice {
    static var name: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "sl-login on linux" }
        // Up to the NUL, which POSIX does not promise when the name was truncated.
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return "sl-login on \(host)"
    }
}
