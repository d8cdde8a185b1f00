/// The exit-status table shared by every Starline tool (README, Exit codes).
///
/// This is the only place where a failure becomes a process exit code.
public enum ExitStatus: Int32, CaseIterable, Sendable {
    case ok = 0
    case internalError = 1
    case usage = 2
    case notLoggedIn = 3
    case sessionEnded = 4
    case forbidden = 5
    case notFound = 6
    case transient = 7
    case partial = 8
    case noResult = 9
    case storage = 10
    case sessionChanged = 11
    case data = 12
    case locked = 13
    /// The session is valid but ends within `--warn-within` (sl-restore, sl-login status): renew it before it does.
    case expiresSoon = 14
    case interrupted = 130
    /// 128 + SIGPIPE: standard output was closed by its reader; the tool ended quietly, as the signal ends
    /// any Unix tool (no error text).
    case brokenPipe = 141

    /// The name used in man pages and documentation.
    public var name: String {
        switch self {
        case .ok: "OK"
        case .internalError: "INTERNAL"
        case .usage: "USAGE"
        case .notLoggedIn: "NOT_LOGGED_IN"
        case .sessionEnded: "SESSION_ENDED"
        case .forbidden: "FORBIDDEN"
        case .notFound: "NOT_FOUND"
        case .transient: "TRANSIENT"
        case .partial: "PARTIAL"
        case .noResult: "NO_RESULT"
        case .storage: "STORAGE"
        case .sessionChanged: "SESSION_CHANGED"
        case .data: "DATA"
        case .locked: "LOCKED"
        case .expiresSoon: "EXPIRES_SOON"
        case .interrupted: "INTERRUPTED"
        case .brokenPipe: "BROKEN_PIPE"
        }
    }

    public var meaning: String {
        switch self {
        case .ok: "success, including idempotent no-ops (already revoked, already logged out)"
        case .internalError: "unexpected failure (a bug)"
        case .usage: "bad flags, arguments or configuration (including a rejected URL override)"
        case .notLoggedIn: "no session and no candidate"
        case .sessionEnded:
            """
            the server ended the session (401 revoked/expired, 403 ACCOUNT_RESTRICTED/APP_UNAVAILABLE); local identity \
            cleared
            """
        case .forbidden: "the server refused this action (403 other than the two above); identity kept"
        case .notFound: "the named object does not exist"
        case .transient:
            """
            network failure, timeout, 5xx or 429 after retries, or a server certificate that does not verify (TLS_ERROR, \
            not retried); local state kept
            """
        case .partial: "a bulk run where some items failed (per-item results say which)"
        case .noResult: "nothing published: login in progress, cancelled, denied or expired; restore superseded"
        case .storage: "local storage read/write/delete failed (STORAGE_ERROR)"
        case .sessionChanged: "the account changed while the request was in flight; result discarded"
        case .data: "malformed input or file, no QR symbol found, authentication of stored data failed"
        case .locked: "vault locked or wrong passphrase"
        case .expiresSoon: "the session is valid but ends within --warn-within (sl-restore, sl-login status): sign in again before it does"
        case .interrupted:
            """
            interrupted by SIGINT (Ctrl-C); SIGHUP and SIGTERM end a tool the same way with 129 and 143 (clean-up done, \
            temporary files removed)
            """
        case .brokenPipe: "standard output was closed by its reader (| head); ended quietly, as by SIGPIPE"
        }
    }
}
