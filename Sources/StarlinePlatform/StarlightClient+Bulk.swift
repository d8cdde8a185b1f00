import StarlineCore

extension StarlightClient {
    /// The session a bulk run sends every request with: one login for the whole run (S14: every request of it belongs to that account).
    public struct RunCredentials: Sendable {
        public var token: String
        /// Empty for a STARLINE_TOKEN session.
        public var sessionId: String
        public var user: JSON
        public var roles: [String]

        public init(token: String, sessionId: String, user: JSON, roles: [String]) {
            self.token = token
            self.sessionId = sessionId
            self.user = user
            self.roles = roles
        }
    }

    /// The current session, as `authenticated` would use it; NOT_LOGGED_IN without one.
    public func runCredentials() throws -> RunCredentials {
        if let session {
            return RunCredentials(token: session.accessToken, sessionId: session.sessionId, user: session.user, roles: session.roles)
        }
        if let memoryToken { return RunCredentials(token: memoryToken, sessionId: "", user: .null, roles: []) }
        if let store, let c = try store.withState({ try $0.usableCandidate() }) {
            return RunCredentials(token: c.accessToken, sessionId: c.sessionId, user: c.user, roles: c.roles)
        }
        throw notLoggedIn()
    }

    /// What to run to get a session (the NOT_LOGGED_IN message of every tool, and `sl-login status`'s).
    public nonisolated static let signInHint =
        "run sl-login (sl-login --device over ssh; printf %s \"$TOKEN\" | sl-login --with-token in a script)"

    /// NOT_LOGGED_IN (exit 3) naming where the tool looked — the API, the app id and the service a session is
    /// stored under — and what to run, as `sl-login status` says it: a cron job that finds no session after a
    /// profile or HOME changed says which one it used.
    public nonisolated func notLoggedIn(_ prefix: String = "not logged in") -> StarlineError {
        let api = configuration.api.description
        let service = store?.key.service
        let place = "\(api) (app \(configuration.appId)\(service.map { ", service \($0)" } ?? ""))"
        var details: [(String, JSON)] = [("api", .string(api)), ("appId", .string(configuration.appId))]
        if let service { details.append(("service", .string(service))) }
        details.append(("run", .string("sl-login")))
        return StarlineError(.notLoggedIn, "\(prefix) to \(place): \(Self.signInHint)", details: .object(details))
    }

    /// S14 for work done off the main actor: a check, safe on any thread, that the stored session is still the
    /// one the run started with (another process may log in or out meanwhile). Always true for a memory session.
    public nonisolated func sameAccountCheck(_ credentials: RunCredentials) -> @Sendable () -> Bool {
        guard let store, !credentials.sessionId.isEmpty else { return { true } }
        let sessionId = credentials.sessionId
        return { (try? store.withState { try $0.candidateSessionId() }) == sessionId }
    }

    /// S15 for a bulk run: the run's session was rejected (401, or 403 restricted / app unavailable), so it is
    /// cleared — only if it is still the stored one; a newer session is kept. Returns the error to report.
    public func runSessionEnded(_ credentials: RunCredentials, reason: StarlineError) -> StarlineError {
        sessionEnded(sessionId: credentials.sessionId, reason: reason)
    }
}
