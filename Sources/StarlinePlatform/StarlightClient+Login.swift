#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineCrypto

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

    /// A callback of the authorization-code flow: a redirect URL, or the JSON line `sl-qr decode --show-secrets` prints.
    public struct Callback: Sendable {
        public var code: String?
        public var state: String?
        public var error: String?

        public init(code: String?, state: String?, error: String?) {
            self.code = code
            self.state = state
            self.error = error
        }

        public static func parse(_ input: String) throws -> Callback {
            let text = input.split(separator: "\n").first { !$0.allSatisfy { $0 == " " || $0 == "\t" || $0 == "\r" } }.map(String.init) ?? ""
            if text.hasPrefix("{") {
                let record = try JSON.parse(text)
                if record["code"]?.stringValue == "redacted" {
                    throw StarlineError(.usage, "the callback code is redacted: decode the QR code with sl-qr decode --show-secrets")
                }
                if let url = record["text"]?.stringValue, !url.contains("code=redacted") { return try parse(url) }
                guard record["kind"]?.stringValue == "authCallback" else {
                    throw StarlineError(.usage, "the JSON record is not an authCallback (kind \(record["kind"]?.stringValue ?? "missing"))")
                }
                return Callback(code: record["code"]?.stringValue, state: record["state"]?.stringValue, error: record["error"]?.stringValue)
            }
            guard let url = WebURL(text.trimmingWhitespace()), url.hasAuthority else {
                throw StarlineError(.usage, "not a callback URL: expected starline-APPID://auth/callback?code=…&state=… or http://127.0.0.1:PORT/callback?…")
            }
            return Callback(code: url.queryValue("code"), state: url.queryValue("state"), error: url.queryValue("error"))
        }
    }

    // MARK: Login

    /// A foreground login. While it runs, `restoreSession()` answers "no result" (S6); it invalidates
    /// restores already in flight; `cancelLogin()` makes a late success unpublished (S9).
    public func login(_ method: LoginMethod, pendingTTL: Int64 = 600) async throws -> PlatformSession {
        loginInProgressBegin()
        defer { loginInProgressEnd() }
        switch method {
        case .token(let token):
            let generation = try beginPersistentLogin(PendingLogin(mode: "token", state: "", verifier: "", redirectURI: "", deviceCode: nil,
                                                                   createdAt: Timestamp.now().seconds, expiresAt: Timestamp.now().seconds + pendingTTL))
            let me: Me
            do { me = try await platform.me(token: token) } catch {
                abandonPendingLogin(generation)
                throw Self.starline(error)
            }
            let grant = TokenGrant(accessToken: token, sessionId: me.sessionId, expiresIn: me.expiresAt - Timestamp.now().seconds, user: me.user, roles: me.roles)
            return try await finishLogin(grant, generation: generation, revokeOnFailure: false)
        case .device(let present):
            let authorization = try await platform.deviceAuthorization()
            let generation = try beginPersistentLogin(PendingLogin(mode: "device", state: "", verifier: "", redirectURI: authorization.verificationURI,
                                                                   deviceCode: authorization.deviceCode, createdAt: Timestamp.now().seconds,
                                                                   expiresAt: Timestamp.now().seconds + Int64(authorization.expiresIn)))
            present(authorization)
            var interval = max(0, authorization.interval)
            let deadline = Timestamp.now().seconds + Int64(authorization.expiresIn)
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
                case .slowDown: interval += 5  // RFC 8628 §3.5
                case .granted(let grant): return try await finishLogin(grant, generation: generation, revokeOnFailure: true)
                }
                if Timestamp.now().seconds > deadline {
                    abandonPendingLogin(generation)
                    throw StarlineError(.noResult, "the device code expired before the sign-in was approved")
                }
            }
        case .loopback(let listener, let open):
            let (verifier, challenge) = PKCE.make()
            let state = Base64.encodeURL(Sodium.randomBytes(16))
            let generation = try beginPersistentLogin(PendingLogin(mode: "loopback", state: state, verifier: verifier, redirectURI: listener.redirectURI,
                                                                   deviceCode: nil, createdAt: Timestamp.now().seconds, expiresAt: Timestamp.now().seconds + pendingTTL))
            let url = platform.authorizeURL(redirectURI: listener.redirectURI, state: state, codeChallenge: challenge)
            open(url)
            let callback: Callback
            do { callback = try await listener.waitForCallback(state: state, deadline: Timestamp.now().seconds + pendingTTL) } catch {
                abandonPendingLogin(generation)
                throw Self.starline(error)
            }
            do {
                return try await exchange(callback, expectedState: state, verifier: verifier, redirectURI: listener.redirectURI, generation: generation)
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
        let (verifier, challenge) = PKCE.make()
        let state = Base64.encodeURL(Sodium.randomBytes(16))
        let redirect = "starline-\(configuration.appId)://auth/callback"
        let pending = PendingLogin(mode: "paste", state: state, verifier: verifier, redirectURI: redirect, deviceCode: nil,
                                   createdAt: Timestamp.now().seconds, expiresAt: Timestamp.now().seconds + ttl)
        _ = try beginPersistentLogin(pending)
        return (platform.authorizeURL(redirectURI: redirect, state: state, codeChallenge: challenge), pending)
    }

    /// Two-step login, step 2 (possibly in another process, after a restart).
    public func completeLogin(_ callback: Callback) async throws -> PlatformSession {
        guard let store else { throw StarlineError(.usage, "two-step login needs the persistent store (unset STARLINE_TOKEN)") }
        let (pending, generation): (PendingLogin?, Int64) = try store.withState { state in (try state.pendingLogin(), state.generation) }
        guard let pending, pending.mode == "paste" || pending.mode == "loopback" else {
            throw StarlineError(.noResult, "no login is pending (it completed, was cancelled or expired); start one with sl-login start")
        }
        loginInProgressBegin()
        defer { loginInProgressEnd() }
        return try await exchange(callback, expectedState: pending.state, verifier: pending.verifier, redirectURI: pending.redirectURI, generation: generation)
    }

    private func exchange(_ callback: Callback, expectedState: String, verifier: String, redirectURI: String, generation: Int64) async throws -> PlatformSession {
        guard let state = callback.state, Sodium.constantTimeEquals(Array(state.utf8), Array(expectedState.utf8)) else {
            throw StarlineError(.stateMismatch, "the callback's state does not match the pending login; it was not used")
        }
        if let error = callback.error {
            abandonPendingLogin(generation)
            throw StarlineError(.noResult, error == "access_denied" ? "the sign-in was denied" : "the sign-in failed: \(error)",
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
        epoch += 1
        inFlightRestore = nil  // S6: a new login invalidates restore results already in flight
    }

    private func loginInProgressEnd() { loginInProgress = false }

    /// Persists the pending login and bumps the generation, so restores in other processes answer
    /// "no result" and restores already in flight are superseded (S6).
    func beginPersistentLogin(_ pending: PendingLogin) throws -> Int64 {
        guard let store else { return 0 }
        return try store.withState { state in
            try state.savePendingLogin(pending)
            return try state.bumpGeneration()
        }
    }

    private func abandonPendingLogin(_ generation: Int64) {
        _ = try? store?.withState { state in
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
        let new = PlatformSession(accessToken: grant.accessToken, sessionId: grant.sessionId, user: grant.user, roles: grant.roles,
                                  expiresAt: Timestamp.now().seconds + grant.expiresIn, verifiedAt: Timestamp.now().seconds)
        let epochBefore = epoch
        if let store {
            do {
                try store.withState { state in
                    guard state.generation == generation else {
                        throw StarlineError(.noResult, "the login was cancelled or superseded; its late result was not used")
                    }
                    try state.saveCandidate(new.candidate)
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
        guard epoch == epochBefore else {
            throw StarlineError(.noResult, "the identity changed while the login finished; its result was not published")
        }
        publish(new)
        return new
    }

    // MARK: Cancel, logout, clear (S9, S11, S12, S13)

    /// Invalidates a pending login (here and in other processes); an established session is kept.
    @discardableResult
    public func cancelLogin() throws -> Bool {
        epoch += 1
        loginInProgress = false
        guard let store else { return false }
        return try store.withState { state in
            let had = try state.pendingLogin() != nil
            try state.clearPendingLogin()
            try state.bumpGeneration()
            return had
        }
    }

    public struct LogoutResult: Sendable {
        public var hadSession: Bool
        public var revoked: Bool
        public var pendingRevocations: Int
        public var error: StarlineError?
    }

    /// Clears the local session and candidate first, then revokes on the server. A network failure
    /// never restores the old identity; the token is remembered and revoked by a later run (S12).
    public func logout() async -> LogoutResult {
        epoch += 1
        let old = session
        publish(nil)
        guard let store else {
            guard let token = old?.accessToken else { return LogoutResult(hadSession: false, revoked: false, pendingRevocations: 0) }
            do {
                try await platform.revoke(token: token)
                return LogoutResult(hadSession: true, revoked: true, pendingRevocations: 0)
            } catch {
                return LogoutResult(hadSession: true, revoked: false, pendingRevocations: 0,
                                    error: StarlineError(.network, "logged out locally, but the server revocation failed: \(Self.starline(error).message)", retryable: true))
            }
        }
        // 1. Committed on its own: the token to revoke is remembered before anything else can fail (S12), and
        //    the generation bump supersedes restores in flight. Whatever fails here, the delete still runs.
        var candidate: StoredCandidate?
        var readFailure: StarlineError?
        var recordFailure: StarlineError?
        do {
            try store.withState { state in
                do { candidate = try state.candidate() } catch { readFailure = Self.starline(error) }
                try state.clearPendingLogin()
                try state.bumpGeneration()
                if let c = candidate { try state.addPendingRevocation(sessionId: c.sessionId, accessToken: c.accessToken) }
            }
        } catch {
            recordFailure = Self.starline(error)
        }
        // 2. The delete, also of a candidate that could not be read (the row needs no key). When it fails, the
        //    marker — a file beside the db, kept through the rollback — makes later runs refuse it (S13); an
        //    empty marker refuses any candidate, for one whose session id is unknown.
        var deleteFailure: StarlineError?
        var markerWritten = false
        do {
            try store.withState { state in
                do { try state.deleteCandidate() } catch {
                    if candidate != nil || readFailure != nil {
                        do {
                            try state.setRevocationMarker(sessionId: candidate?.sessionId ?? "")
                            markerWritten = true
                        } catch {}
                    }
                    throw error
                }
            }
        } catch {
            deleteFailure = Self.starline(error)
        }
        // onError reports storage write/delete errors (S7); a read error is part of the returned result.
        for failure in [recordFailure, deleteFailure].compactMap({ $0 }) { _ = reportStorageError(failure) }

        // 3. Revoke what this logout and earlier offline logouts could not — and this token directly when
        //    it could not be remembered for a later run.
        var revokedDirectly = false
        if recordFailure != nil, let c = candidate {
            revokedDirectly = (try? await platform.revoke(token: c.accessToken)) != nil
        }
        await retryPendingRevocations()
        let left = pendingRevocationCount()
        let revokedThis = revokedDirectly || candidate.map { c in
            !((try? store.withState { try $0.pendingRevocations() })?.contains { $0.sessionId == c.sessionId } ?? true)
        } ?? false
        let hadSession = candidate != nil || readFailure != nil

        // The first storage failure decides the message, and never reads as a clean logout.
        if let deleteFailure {
            let consequence = markerWritten
                ? "it will not be used again — run sl-login clear to retry"
                : "and no marker could be written, so a later run may still use it — run sl-login clear to retry"
            return LogoutResult(hadSession: hadSession, revoked: revokedThis, pendingRevocations: left,
                                error: StarlineError(.storage, "logged out, but the stored session could not be deleted (\(deleteFailure.message)); \(consequence)"))
        }
        if let readFailure {
            return LogoutResult(hadSession: hadSession, revoked: false, pendingRevocations: left,
                                error: StarlineError(.storage, "the stored session could not be read (\(readFailure.message)); it was deleted here, but its token could not be revoked on the server"))
        }
        if let recordFailure, !revokedThis {
            return LogoutResult(hadSession: hadSession, revoked: false, pendingRevocations: left,
                                error: StarlineError(.storage, "logged out locally, but the server revocation failed and the token could not be remembered for a later run (\(recordFailure.message))"))
        }
        if left > 0 {
            return LogoutResult(hadSession: hadSession, revoked: revokedThis, pendingRevocations: left,
                                error: StarlineError(.network, "logged out locally; the server revocation is pending (\(left) token\(left == 1 ? "" : "s")) and will be retried by the next sl-restore or sl-login run", retryable: true))
        }
        return LogoutResult(hadSession: hadSession, revoked: revokedThis, pendingRevocations: 0)
    }

    /// `switchAccount()`: the same as `logout()`; the host then starts a new `login(_:)` (S11).
    public func switchAccount() async -> LogoutResult { await logout() }

    /// Drops the identity and deletes the candidate, without a server call. Retries an earlier failed delete (S13).
    public func clearSession() throws {
        epoch += 1
        publish(nil)
        guard let store else { return }
        do {
            try store.withState { state in
                let candidate = try? state.candidate()
                do { try state.deleteCandidate() } catch {
                    if let c = candidate { try? state.setRevocationMarker(sessionId: c.sessionId) }
                    throw error
                }
                try state.clearRevocationMarker()
                try state.bumpGeneration()
            }
        } catch {
            // S7: storage write/delete errors go to onError too, besides being thrown.
            let failure = Self.starline(error)
            _ = reportStorageError(failure)
            throw failure
        }
    }

    // MARK: Authenticated requests (S14, S15)

    /// Runs an authenticated request with the current session. The account is captured when the request
    /// starts: a different account by the time it answers is SESSION_CHANGED (S14); a 401 or an ending 403
    /// clears the session only if it is still the one this request used (S15).
    public func authenticated<T: Sendable>(_ operation: @Sendable (String) async throws -> T) async throws -> T {
        let current: PlatformSession
        if let session { current = session } else if let memoryToken {
            current = PlatformSession(accessToken: memoryToken, sessionId: "", user: .null, roles: [], expiresAt: Int64.max, verifiedAt: nil)
        } else if let store, let c = try store.withState({ try $0.usableCandidate() }) {
            current = PlatformSession(c)
        } else {
            throw StarlineError(.notLoggedIn, "not logged in")
        }
        let epochAtStart = epoch
        do {
            let result = try await operation(current.accessToken)
            try checkSameAccount(current, epochAtStart: epochAtStart)
            return result
        } catch let error as StarlineError where error.exitStatus == .sessionEnded {
            try checkSameAccount(current, epochAtStart: epochAtStart)
            onError?(error)
            if let store {
                let outcome = compareAndClear(store, sessionId: current.sessionId, reason: error)
                if let e = outcome.error, e.exitStatus != .sessionEnded { throw e }
            } else if session?.sessionId == current.sessionId {
                publish(nil)
            }
            throw error
        } catch let error as StarlineError {
            try checkSameAccount(current, epochAtStart: epochAtStart)
            onError?(error)
            throw error
        }
    }

    private func checkSameAccount(_ used: PlatformSession, epochAtStart: Int) throws {
        var stillSame = epoch == epochAtStart
        if stillSame, let store {
            stillSame = (try? store.withState { try $0.candidate()?.sessionId }) == used.sessionId
        }
        guard stillSame else {
            throw StarlineError(.sessionChanged, "the account changed while the request was in flight; its result was discarded (a write may still have reached the server)")
        }
    }
}

/// The device name sent with a token exchange (shown in the account's device sessions).
enum LoginDevice {
    static var name: String {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count) == 0 ? String(cString: buffer) : "linux"
        return "sl-login on \(host)"
    }
}

