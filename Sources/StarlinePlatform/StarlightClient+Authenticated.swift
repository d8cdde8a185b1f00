import StarlineCore

extension StarlightClient {
    // MARK: Authenticated requests (S14, S15)

    /// Runs an authenticated request with the current session. The account is captured when the request
    /// starts: a different account by the time it answers is SESSION_CHANGED (S14); a 401 or an ending 403
    /// clears the session only if it is still the one this request used (S15).
    public func authenticated<T: Sendable>(_ operation: @Sendable (String) async throws -> T) async throws -> T {
        try await authenticatedAs { try await operation($0.accessToken) }
    }

    /// `authenticated`, handing the operation the whole session it runs with (its user and roles too), so a
    /// caller that reports them needs no second read of the store.
    func authenticatedAs<T: Sendable>(_ operation: @Sendable (PlatformSession) async throws -> T) async throws -> T {
        let current: PlatformSession
        if let session {
            current = session
        } else if let memoryToken {
            current = PlatformSession(
                accessToken: memoryToken, sessionId: "", user: .null, roles: [], expiresAt: Int64.max, verifiedAt: nil)
        } else if let store, let c = try store.withState({ try $0.usableCandidate() }) {
            current = PlatformSession(c)
        } else {
            throw notLoggedIn()
        }
        let identityChangesAtStart = identityChanges
        do {
            let result = try await operation(current)
            try checkSameAccount(current, identityChangesAtStart: identityChangesAtStart)
            return result
        } catch let error as StarlineError where error.exitStatus == .sessionEnded {
            try checkSameAccount(current, identityChangesAtStart: identityChangesAtStart)
            throw sessionEnded(sessionId: current.sessionId, reason: error)
        } catch let error as StarlineError {
            try checkSameAccount(current, identityChangesAtStart: identityChangesAtStart)
            onError?(error)
            throw error
        }
    }

    /// S15: the session `sessionId` was rejected, so it is cleared — only if it is still the stored one; a
    /// newer session is kept. Returns the error to report.
    func sessionEnded(sessionId: String, reason: StarlineError) -> StarlineError {
        onError?(reason)
        if let store {
            let outcome = compareAndClear(store, sessionId: sessionId, reason: reason)
            if let e = outcome.error, e.exitStatus != .sessionEnded { return e }
        } else if session?.sessionId == sessionId {
            publish(nil)
        }
        return reason
    }

    private func checkSameAccount(_ used: PlatformSession, identityChangesAtStart: Int) throws {
        var stillSame = identityChanges == identityChangesAtStart
        if stillSame, let store {
            stillSame = (try? store.withState { try $0.candidateSessionId() }) == used.sessionId
        }
        guard stillSame else {
            throw StarlineError(
                .sessionChanged,
                """
                the account changed while the request was in flight; its result was discarded (a write may still have reached \
                the server)
                """)
        }
    }
}

extension StarlightClient {
    /// S15: clear the stored session only if it is still the one the failed request used.
    func compareAndClear(_ store: SessionStore, sessionId: String, reason: StarlineError) -> RestoreOutcome {
        do {
            let cleared: Bool = try store.withState { state in
                guard let current = try state.candidate(), current.sessionId == sessionId else { return false }
                do {
                    try state.deleteCandidate()
                } catch {
                    try? state.setRevocationMarker(sessionId: sessionId)
                    throw error
                }
                state.bumpGenerationQuietly()
                return true
            }
            if cleared, session?.sessionId == sessionId || session == nil { publish(nil) }
            if !cleared {
                return RestoreOutcome(
                    state: .noResult, reason: "superseded",
                    error: StarlineError(
                        .sessionChanged, "the session was rejected (\(reason.code.rawValue)) but a newer one is stored now; it was kept"))
            }
            return RestoreOutcome(state: .cleared, reason: reason.code.rawValue, error: reason)
        } catch {
            let failure = Self.starline(error)
            _ = reportStorageError(failure)
            if session?.sessionId == sessionId { publish(nil) }
            return RestoreOutcome(
                state: .cleared, reason: reason.code.rawValue,
                error: StarlineError(
                    .storage,
                    "the session ended (\(reason.code.rawValue)) but the stored copy could not be deleted: \(failure.message); run sl-login clear",
                    details: .object([("serverCode", .string(reason.code.rawValue))])))
        }
    }
}
