/// The one error type of the suite. `code` is a stable string that scripts may match on;
/// the exit status follows from the code, in `ErrorCode.exitStatus`, and nowhere else.
///
/// Messages never carry secrets (tokens, codes, passphrases).
public struct StarlineError: Error, CustomStringConvertible, Sendable {
    public var code: ErrorCode
    public var message: String
    public var retryable: Bool
    public var details: JSON?

    public init(_ code: ErrorCode, _ message: String, retryable: Bool = false, details: JSON? = nil) {
        self.code = code
        self.message = message
        self.retryable = retryable
        self.details = details
    }

    public var exitStatus: ExitStatus { code.exitStatus }
    public var description: String { "\(code.rawValue): \(message)" }

    /// `{"error":{"code":…,"message":…,"retryable":…,"details":…}}` — the first line of stderr.
    public var json: JSON {
        var body: [(String, JSON)] = [
            ("code", .string(code.rawValue)),
            ("message", .string(message)),
            ("retryable", .bool(retryable)),
        ]
        if let details { body.append(("details", details)) }
        return .object([("error", .object(body))])
    }
}

/// Stable error codes. New codes are added here with their exit status.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public static let internalError: ErrorCode = "INTERNAL"
    public static let usage: ErrorCode = "USAGE"
    public static let invalidURL: ErrorCode = "INVALID_URL"
    public static let config: ErrorCode = "CONFIG_ERROR"
    public static let notLoggedIn: ErrorCode = "NOT_LOGGED_IN"
    public static let sessionRevoked: ErrorCode = "SESSION_REVOKED"
    public static let sessionExpired: ErrorCode = "SESSION_EXPIRED"
    public static let accountRestricted: ErrorCode = "ACCOUNT_RESTRICTED"
    public static let appUnavailable: ErrorCode = "APP_UNAVAILABLE"
    public static let forbidden: ErrorCode = "FORBIDDEN"
    public static let notFound: ErrorCode = "NOT_FOUND"
    public static let network: ErrorCode = "NETWORK_ERROR"
    public static let timeout: ErrorCode = "TIMEOUT"
    public static let server: ErrorCode = "SERVER_ERROR"
    public static let rateLimited: ErrorCode = "RATE_LIMITED"
    public static let partial: ErrorCode = "PARTIAL_FAILURE"
    public static let noResult: ErrorCode = "NO_RESULT"
    public static let storage: ErrorCode = "STORAGE_ERROR"
    public static let insecurePermissions: ErrorCode = "INSECURE_PERMISSIONS"
    public static let sessionChanged: ErrorCode = "SESSION_CHANGED"
    public static let data: ErrorCode = "DATA_ERROR"
    public static let noSymbol: ErrorCode = "NO_SYMBOL"
    public static let unreadableImage: ErrorCode = "UNREADABLE_IMAGE"
    public static let capacityExceeded: ErrorCode = "CAPACITY_EXCEEDED"
    public static let unexpectedKind: ErrorCode = "UNEXPECTED_KIND"
    public static let verificationFailed: ErrorCode = "VERIFICATION_FAILED"
    public static let authenticationFailed: ErrorCode = "AUTHENTICATION_FAILED"
    public static let locked: ErrorCode = "LOCKED"
    public static let wrongPassphrase: ErrorCode = "WRONG_PASSPHRASE"
    public static let invalidFriendLink: ErrorCode = "INVALID_FRIEND_LINK"
    public static let interrupted: ErrorCode = "INTERRUPTED"
    /// 401 INVALID_TOKEN: the server does not know the token, so the session is gone.
    public static let invalidToken: ErrorCode = "INVALID_TOKEN"
    /// The server rejected the request as malformed (HTTP 400, 413, other 4xx).
    public static let requestRejected: ErrorCode = "REQUEST_REJECTED"
    /// The request conflicts with the server's state (HTTP 409, 410).
    public static let conflict: ErrorCode = "CONFLICT"
    /// OAuth `invalid_grant`: the code or device code was not accepted; the login produced no session.
    public static let invalidGrant: ErrorCode = "INVALID_GRANT"
    /// A login callback whose `state` is not the pending login's (a stale, foreign or forged callback): it is
    /// not used, and the pending login stays as it was.
    public static let stateMismatch: ErrorCode = "STATE_MISMATCH"
    /// OAuth `invalid_client`: the server does not accept the app ID.
    public static let invalidClient: ErrorCode = "INVALID_CLIENT"

    /// An id prefix that matches several records (details list the candidates).
    public static let ambiguousID: ErrorCode = "AMBIGUOUS_ID"
    /// A data file that does not parse or has the wrong shape; it is left untouched.
    public static let corruptFile: ErrorCode = "CORRUPT_FILE"
    /// A data file written by a newer version: readable, but never rewritten by this one.
    public static let unsupportedVersion: ErrorCode = "UNSUPPORTED_VERSION"
    /// A `check` command that found problems (they are listed on stdout).
    public static let checkFailed: ErrorCode = "CHECK_FAILED"

    public var exitStatus: ExitStatus {
        switch self {
        case .usage, .invalidURL, .config, .invalidFriendLink, .requestRejected, .invalidClient, .ambiguousID: .usage
        case .notLoggedIn: .notLoggedIn
        case .sessionRevoked, .sessionExpired, .invalidToken, .accountRestricted, .appUnavailable: .sessionEnded
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .network, .timeout, .server, .rateLimited: .transient
        case .partial: .partial
        case .noResult, .invalidGrant: .noResult
        case .storage, .insecurePermissions: .storage
        case .sessionChanged: .sessionChanged
        case .data, .noSymbol, .unreadableImage, .capacityExceeded, .unexpectedKind,
             .verificationFailed, .authenticationFailed, .conflict, .corruptFile, .unsupportedVersion, .checkFailed,
             .stateMismatch: .data
        case .locked, .wrongPassphrase: .locked
        case .interrupted: .interrupted
        default: .internalError
        }
    }
}
