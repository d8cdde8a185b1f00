import StarlineCore
import StarlineHTTP

/// The platform SDK's session engine (seed 000), made to work across processes.
///
/// In one process it behaves as S1–S11 say: an unexpired in-memory session is returned without a
/// network call, concurrent restores share one in-flight restore, every await is followed by a check
/// that nothing newer happened (W8), and callbacks that clear the identity are respected (S8). Across
/// processes — every CLI run is a new instance — the persistent `SessionStore` carries the rest: a
/// generation counter that logins and cancels bump (S6, S9), a pending-login record that makes
/// restores answer "no result", compare-and-clear (S15), pending revocations (S12) and the S13 marker.
@MainActor
public final class StarlightClient {
    public struct Configuration: Sendable {
        public var api: BaseURL
        public var appId: String
        public var timeout: Double
        public init(api: BaseURL, appId: String, timeout: Double = 30) {
            self.api = api
            self.appId = appId
            self.timeout = timeout
        }
    }

    public let configuration: Configuration
    /// nil: a memory-only session (S2); it is not restored after the process exits.
    public let store: SessionStore?
    package let platform: PlatformAPI
    /// The wall clock every time this client stores or compares is read from (a tool's `IOStreams` clock),
    /// and the waits of its retries.
    public let clock: RetryClock

    public private(set) var session: PlatformSession?
    /// Retained by the client (S7). Reports errors of authenticated requests and storage write/delete errors.
    public var onSessionChanged: ((PlatformSession?) -> Void)?
    public var onError: ((StarlineError) -> Void)?

    /// Bumped by every change of identity in this process (login, logout, clear, cancel); checked after
    /// every await and after callbacks so late results never overwrite newer state (S8, W8).
    var identityChanges = 0
    /// STARLINE_TOKEN: the token of the memory-only mode, verified by `restoreSession()` before it is published.
    package var memoryToken: String?
    var loginInProgress = false
    /// While a foreground login is pending: a signal abandons it (Interrupts), as a failure would.
    var pendingLoginOnInterrupt: InterruptRegistration?
    var inFlightRestore: Task<RestoreOutcome, Never>?

    /// `transport`: one HTTP attempt per call (a tool's comes from its factory, `HTTPTransport` with the
    /// configuration's timeout); the retries are PlatformAPI's, waiting on `clock`.
    public init(configuration: Configuration, store: SessionStore?, transport: any HTTPExchange, clock: RetryClock = .system) {
        self.configuration = configuration
        self.store = store
        self.clock = clock
        platform = PlatformAPI(base: configuration.api, appId: configuration.appId, transport: transport, clock: clock)
    }

    /// A memory-only session for an existing token (`STARLINE_TOKEN`): nothing is read from or written to storage.
    public func adoptMemoryToken(_ token: String) {
        memoryToken = token
    }

    // MARK: Publishing

    func publish(_ new: PlatformSession?) {
        session = new
        onSessionChanged?(new)
    }

    /// Reports a storage error through onError; returns false when the callback changed the identity (S8).
    func reportStorageError(_ error: StarlineError) -> Bool {
        let before = identityChanges
        onError?(error)
        return identityChanges == before
    }

    // MARK: Restore (S4, S5, S6)

    /// `restoreSession()`: read the candidate, verify it with `/api/me`, publish only after that.
    /// `maxAge` accepts a session verified that recently without a network call (the in-memory case).
    public func restoreSession(maxAge: Int64 = 0) async -> RestoreOutcome {
        if loginInProgress { return RestoreOutcome(state: .noResult, reason: "loginInProgress") }
        // S5: a session this instance already verified (or logged in) and that has not expired is returned
        // without a network call. (Every CLI run is a new instance: there `maxAge` plays this part, for
        // the stored candidate.)
        if let session, !session.isExpired(at: clock.now()), session.verifiedAt != nil {
            return RestoreOutcome(state: .valid, session: session)
        }
        if let inFlightRestore { return await inFlightRestore.value }  // S5: share the in-flight restore
        let task = Task { await self.performRestore(maxAge: maxAge) }
        inFlightRestore = task
        let outcome = await task.value
        inFlightRestore = nil
        return outcome
    }

    /// Publishes a valid outcome's session, unless a login, cancel or logout (a change of identity) came first.
    private func published(_ outcome: RestoreOutcome, identityChangesAtStart: Int) -> RestoreOutcome {
        if outcome.state == .valid, identityChanges == identityChangesAtStart, let s = outcome.session { publish(s) }
        return outcome
    }

    private func performRestore(maxAge: Int64) async -> RestoreOutcome {
        let identityChangesAtStart = identityChanges
        guard let store else { return await restoreMemorySession() }
        let started = clock.now()
        // Without --max-age a stored session is always verified: load libcurl while the store is read.
        if maxAge == 0 { HTTPTransport.preloadLibrary() }
        // Tokens an earlier offline logout could not revoke, first and best-effort (S12).
        await retryPendingRevocations()
        // 1. The local candidate, unless a login is pending (S6: do not even read the old identity).
        var generation: Int64 = 0
        var candidate: StoredCandidate?
        do {
            let early: RestoreOutcome? = try store.withState { state in
                if let pending = try state.pendingLogin() {
                    return RestoreOutcome(
                        state: .noResult, reason: "loginPending",
                        error: StarlineError(
                            .noResult,
                            "a \(pending.mode.rawValue) login is in progress (started \(Timestamp.rfc3339String(pending.createdAt)), expires \(Timestamp.rfc3339String(pending.expiresAt))); finish it with sl-login complete or sl-login cancel"
                        ))
                }
                generation = state.generation
                if let marked = try state.revocationMarker() {
                    // S13: a clear whose delete failed; the old candidate must never come back.
                    if (try? state.candidate())?.sessionId == marked { try? state.deleteCandidate() }
                    return RestoreOutcome(
                        state: .absent, reason: "clearIncomplete",
                        error: StarlineError(
                            .notLoggedIn,
                            """
                            the last sign-out could not delete the stored session; it is not used. Run sl-login clear to finish the \
                            clean-up
                            """))
                }
                candidate = try state.candidate()
                guard let c = candidate else {
                    return RestoreOutcome(state: .absent, reason: "noCandidate", error: notLoggedIn())
                }
                if c.accessToken.isEmpty || c.sessionId.isEmpty || c.expiresAt <= clock.now() {
                    // Expired or malformed: cleared without a network call (S4 step 1).
                    try state.deleteCandidate()
                    return RestoreOutcome(
                        state: .cleared, reason: c.expiresAt <= clock.now() ? "expired" : "malformed",
                        error: StarlineError(
                            .sessionExpired, "the stored session expired at \(Timestamp.rfc3339String(c.expiresAt)); log in again"))
                }
                if maxAge > 0, let verified = c.verifiedAt, clock.now() - verified <= maxAge {
                    return RestoreOutcome(state: .valid, session: PlatformSession(c))
                }
                return nil
            }
            if let early { return published(early, identityChangesAtStart: identityChangesAtStart) }
        } catch {
            return .storageFailure(Self.starline(error))
        }
        guard let original = candidate else { return RestoreOutcome(state: .absent, reason: "noCandidate") }

        // 2. One verification for all processes restoring at once: whoever holds the verification lock
        // calls /api/me; the others find the candidate verified after they started and use that.
        let verificationLock: FileLock
        let waited: Bool
        do {
            if let free = try store.tryVerificationLock() {
                verificationLock = free
                waited = false
            } else {
                verificationLock = try store.verificationLock()
                waited = true
            }
        } catch {
            return .storageFailure(Self.starline(error))
        }
        defer { verificationLock.unlock() }
        do {
            let shared: RestoreOutcome? = try store.withState { state in
                guard state.generation == generation else {
                    return RestoreOutcome(
                        state: .noResult, reason: "superseded",
                        error: StarlineError(.noResult, "a login or logout happened while restoring"))
                }
                // Only a restore that had to wait shares: the verification it waited for finished after it started.
                if waited, let c = try state.candidate(), c.sessionId == original.sessionId, let verified = c.verifiedAt,
                    verified >= started
                {
                    return RestoreOutcome(state: .valid, session: PlatformSession(c))
                }
                return nil
            }
            if let shared { return published(shared, identityChangesAtStart: identityChangesAtStart) }
        } catch {
            return .storageFailure(Self.starline(error))
        }

        // 3. Verify with the platform.
        let me: Me
        do {
            me = try await platform.me(token: original.accessToken)
        } catch {
            let failure = Self.starline(error)
            if failure.exitStatus == .sessionEnded {
                // S4 step 4 / S15: clear, but only the candidate this request used. When a newer session is
                // stored meanwhile, this restore was superseded: NO_RESULT (exit 9), as the state says.
                var outcome = compareAndClear(store, sessionId: original.sessionId, reason: failure)
                if outcome.state == .noResult, let changed = outcome.error {
                    outcome.error = StarlineError(.noResult, changed.message)
                }
                return outcome
            }
            // Network failure, timeout, 5xx, 429: keep the candidate, never report "logged in" — but say which
            // session was kept (its last verified user and expiry), so a script can tell what it still has.
            return RestoreOutcome(state: .keptUnverified, session: PlatformSession(original), reason: failure.code.rawValue, error: failure)
        }
        // W8: re-check after the await — a login, cancel or logout (here or in another process) wins.
        guard identityChanges == identityChangesAtStart, !loginInProgress else {
            return RestoreOutcome(
                state: .noResult, reason: "superseded", error: StarlineError(.noResult, "a login started while restoring"))
        }
        do {
            // Not durable: losing this update in a power cut only means the next run verifies again.
            let verified: RestoreOutcome = try store.withState(durable: false) { state in
                guard state.generation == generation, let current = try state.candidate(), current.sessionId == original.sessionId else {
                    return RestoreOutcome(
                        state: .noResult, reason: "superseded",
                        error: StarlineError(.noResult, "the stored session changed while restoring"))
                }
                var updated = current
                updated.user = me.user
                updated.roles = me.roles
                updated.expiresAt = me.expiresAt
                updated.verifiedAt = clock.now()
                try state.saveCandidate(updated)
                return RestoreOutcome(state: .valid, session: PlatformSession(updated))
            }
            return published(verified, identityChangesAtStart: identityChangesAtStart)
        } catch {
            // S17: a failed write is never reported as persisted; the verified session is not published.
            let failure = Self.starline(error)
            _ = reportStorageError(failure)
            return .storageFailure(failure)
        }
    }

    /// STARLINE_TOKEN: verify the memory-only token; nothing touches storage.
    private func restoreMemorySession() async -> RestoreOutcome {
        guard let token = session?.accessToken ?? memoryToken else {
            return RestoreOutcome(state: .absent, reason: "noCandidate", error: notLoggedIn())
        }
        let identityChangesAtStart = identityChanges
        do {
            let me = try await platform.me(token: token)
            guard identityChanges == identityChangesAtStart else { return RestoreOutcome(state: .noResult, reason: "superseded") }
            let s = PlatformSession(
                accessToken: token, sessionId: me.sessionId, user: me.user, roles: me.roles, expiresAt: me.expiresAt,
                verifiedAt: clock.now())
            publish(s)
            return RestoreOutcome(state: .valid, session: s)
        } catch {
            let failure = Self.starline(error)
            if failure.exitStatus == .sessionEnded {
                if identityChanges == identityChangesAtStart { publish(nil) }
                return RestoreOutcome(state: .cleared, reason: failure.code.rawValue, error: failure)
            }
            return RestoreOutcome(state: .keptUnverified, reason: failure.code.rawValue, error: failure)
        }
    }

    static func starline(_ error: Error) -> StarlineError {
        (error as? StarlineError) ?? StarlineError(.internalError, "\(error)")
    }
}

extension SessionState {
    /// Bumps the generation, ignoring a failure (the caller is already reporting another outcome).
    func bumpGenerationQuietly() { _ = try? bumpGeneration() }
}
