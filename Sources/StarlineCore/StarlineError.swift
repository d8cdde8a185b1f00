/// The one error type of the suite. `code` is a stable string that scripts may match on;
/// the exit status is declared beside each code (`ErrorCode`), and nowhere else.
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
            ("retryable", .bool(retryable))
        ]
        if let details { body.append(("details", details)) }
        return .object([("error", .object(body))])
    }
}

/// Stable error codes, each declared with its exit status: a new code cannot fall through to exit 1
/// unnoticed, because there is no code without one. Codes compare by their string.
public struct ErrorCode: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    /// The process exit status of a failure with this code (README, Exit codes).
    public let exitStatus: ExitStatus

    public init(_ rawValue: String, exit exitStatus: ExitStatus) {
        self.rawValue = rawValue
        self.exitStatus = exitStatus
    }

    public static func == (a: ErrorCode, b: ErrorCode) -> Bool { a.rawValue == b.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
    public var description: String { rawValue }

    public static let internalError = ErrorCode("INTERNAL", exit: .internalError)
    public static let usage = ErrorCode("USAGE", exit: .usage)
    public static let invalidURL = ErrorCode("INVALID_URL", exit: .usage)
    public static let config = ErrorCode("CONFIG_ERROR", exit: .usage)
    public static let notLoggedIn = ErrorCode("NOT_LOGGED_IN", exit: .notLoggedIn)
    public static let sessionRevoked = ErrorCode("SESSION_REVOKED", exit: .sessionEnded)
    public static let sessionExpired = ErrorCode("SESSION_EXPIRED", exit: .sessionEnded)
    public static let sessionExpiresSoon = ErrorCode("SESSION_EXPIRES_SOON", exit: .expiresSoon)
    public static let accountRestricted = ErrorCode("ACCOUNT_RESTRICTED", exit: .sessionEnded)
    public static let appUnavailable = ErrorCode("APP_UNAVAILABLE", exit: .sessionEnded)
    public static let forbidden = ErrorCode("FORBIDDEN", exit: .forbidden)
    public static let notFound = ErrorCode("NOT_FOUND", exit: .notFound)
    public static let network = ErrorCode("NETWORK_ERROR", exit: .transient)
    public static let timeout = ErrorCode("TIMEOUT", exit: .transient)
    public static let server = ErrorCode("SERVER_ERROR", exit: .transient)
    public static let rateLimited = ErrorCode("RATE_LIMITED", exit: .transient)
    /// The server's certificate did not verify (unknown issuer, host name mismatch, expired) or the CA bundle
    /// could not be loaded. Exit 7 as other failures to reach the server, but never retried: asking again
    /// cannot help until the trust is fixed (STARLINE_CA_BUNDLE or the profile key caBundle for a private CA).
    public static let tls = ErrorCode("TLS_ERROR", exit: .transient)
    /// A server cannot listen: its address (port) is in use by another process. An environment failure, not a
    /// usage error; retryable once the port is free.
    public static let addressInUse = ErrorCode("ADDRESS_IN_USE", exit: .transient)
    public static let partial = ErrorCode("PARTIAL_FAILURE", exit: .partial)
    public static let noResult = ErrorCode("NO_RESULT", exit: .noResult)
    public static let storage = ErrorCode("STORAGE_ERROR", exit: .storage)
    public static let insecurePermissions = ErrorCode("INSECURE_PERMISSIONS", exit: .storage)
    /// The keyring holding a key is locked (S3, S17): nothing was read, nothing changed, nobody was prompted.
    public static let storageLocked = ErrorCode("STORAGE_LOCKED", exit: .storage)
    /// No Secret Service can be reached (no D-Bus session, no keyring daemon, libsecret not installed).
    public static let keyringUnavailable = ErrorCode("KEYRING_UNAVAILABLE", exit: .storage)
    public static let sessionChanged = ErrorCode("SESSION_CHANGED", exit: .sessionChanged)
    public static let data = ErrorCode("DATA_ERROR", exit: .data)
    public static let noSymbol = ErrorCode("NO_SYMBOL", exit: .data)
    public static let unreadableImage = ErrorCode("UNREADABLE_IMAGE", exit: .data)
    public static let capacityExceeded = ErrorCode("CAPACITY_EXCEEDED", exit: .data)
    public static let unexpectedKind = ErrorCode("UNEXPECTED_KIND", exit: .data)
    public static let verificationFailed = ErrorCode("VERIFICATION_FAILED", exit: .data)
    public static let authenticationFailed = ErrorCode("AUTHENTICATION_FAILED", exit: .data)
    public static let locked = ErrorCode("LOCKED", exit: .locked)
    public static let wrongPassphrase = ErrorCode("WRONG_PASSPHRASE", exit: .locked)
    public static let invalidFriendLink = ErrorCode("INVALID_FRIEND_LINK", exit: .usage)
    /// A friend link of the caller's own: it is for the friend to redeem (a usage mistake, nothing changed).
    public static let ownFriendLink = ErrorCode("OWN_FRIEND_LINK", exit: .usage)
    /// A friend link someone else already redeemed (HTTP 410 LINK_USED): ask the friend for a new one.
    public static let friendLinkUsed = ErrorCode("FRIEND_LINK_USED", exit: .data)
    /// A friend link past its lifetime (HTTP 410 LINK_EXPIRED): ask the friend for a new one.
    public static let friendLinkExpired = ErrorCode("FRIEND_LINK_EXPIRED", exit: .data)
    /// No friend link has this code (HTTP 404): mistyped, or not of this chat service.
    public static let friendLinkNotFound = ErrorCode("FRIEND_LINK_NOT_FOUND", exit: .notFound)
    public static let interrupted = ErrorCode("INTERRUPTED", exit: .interrupted)
    /// Standard output (or another output stream) could not be written: a full disk, `> /dev/full`, EIO.
    public static let writeFailed = ErrorCode("WRITE_FAILED", exit: .storage)
    /// 401 INVALID_TOKEN: the server does not know the token, so the session is gone.
    public static let invalidToken = ErrorCode("INVALID_TOKEN", exit: .sessionEnded)
    /// The server rejected the request as malformed (HTTP 400, 413, other 4xx).
    public static let requestRejected = ErrorCode("REQUEST_REJECTED", exit: .usage)
    /// The request conflicts with the server's state (HTTP 409, 410).
    public static let conflict = ErrorCode("CONFLICT", exit: .data)
    /// OAuth `invalid_grant`: the code or device code was not accepted; the login produced no session.
    public static let invalidGrant = ErrorCode("INVALID_GRANT", exit: .noResult)
    /// A login callback whose `state` is not the pending login's (a stale, foreign or forged callback): it is
    /// not used, and the pending login stays as it was.
    public static let stateMismatch = ErrorCode("STATE_MISMATCH", exit: .data)
    /// OAuth `invalid_client`: the server does not accept the app ID.
    public static let invalidClient = ErrorCode("INVALID_CLIENT", exit: .usage)

    /// An id prefix that matches several records (details list the candidates).
    public static let ambiguousID = ErrorCode("AMBIGUOUS_ID", exit: .usage)
    /// A data file that does not parse or has the wrong shape; it is left untouched.
    public static let corruptFile = ErrorCode("CORRUPT_FILE", exit: .data)
    /// A data file written by a newer version: readable, but never rewritten by this one.
    public static let unsupportedVersion = ErrorCode("UNSUPPORTED_VERSION", exit: .data)
    /// A `check` command that found problems (they are listed on stdout).
    public static let checkFailed = ErrorCode("CHECK_FAILED", exit: .data)

    // MARK: The memory vault (sl-memory, W2)

    /// Vault data that fails its checks: a damaged header (its checksum), a record or attachment that does not
    /// authenticate, is truncated or has the wrong hash, a manifest that does not match the records. Details
    /// name the part (`header`, `manifest`, a `record` id, an `attachment`). Never a wrong passphrase.
    public static let vaultCorrupt = ErrorCode("VAULT_CORRUPT", exit: .data)
    /// The vault's manifest counter is below the one last seen on this machine (the pin), or the vault is not
    /// the one pinned: an older copy was restored. Refused until the rollback is accepted explicitly.
    public static let rollbackDetected = ErrorCode("ROLLBACK_DETECTED", exit: .data)
    /// No vault at the given place (`sl-memory init` makes one).
    public static let vaultNotFound = ErrorCode("VAULT_NOT_FOUND", exit: .notFound)
    /// `init` where a vault already exists: it is never overwritten.
    public static let vaultExists = ErrorCode("VAULT_EXISTS", exit: .usage)
    /// A data key (from the unlock agent) that is not this vault's, for instance after a rekey.
    public static let wrongKey = ErrorCode("WRONG_KEY", exit: .locked)

    // MARK: Chat (sl-chat, W4–W8)

    /// `--client-id KEY` given again with another text or conversation: a key names one message only.
    /// A client id already names another message or moment: a conflict with what is stored (exit 12, as the
    /// server's 409), not a usage mistake — the command line was well formed.
    public static let clientIdConflict = ErrorCode("CLIENT_ID_CONFLICT", exit: .data)
    /// Another process is reading with this named cursor (`tail --cursor NAME`): one consumer at a time, so
    /// no event is delivered twice.
    public static let cursorInUse = ErrorCode("CURSOR_IN_USE", exit: .storage)

    // MARK: Bulk runs (sl-sessions revoke --journal)

    /// Another run holds the journal's lock: one run appends to a journal at a time.
    public static let journalInUse = ErrorCode("JOURNAL_IN_USE", exit: .storage)
    /// `--resume` of a journal whose run header names another API, caller, shard or reason.
    public static let journalMismatch = ErrorCode("JOURNAL_MISMATCH", exit: .usage)
}
