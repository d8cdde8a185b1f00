import StarlineCore

/// `--warn-within DURATION` of `sl-restore` and `sl-login status`: an unattended job sees the end of its
/// session coming. Sessions are not extended by use (no refresh tokens): the one a cron job signed in with ends
/// on a fixed day, and the check that mails only once it has ended mails too late. With `--warn-within 3d` the
/// check exits 14 (EXPIRES_SOON) while the session is still valid, for 3 days before it ends, so cron can mail
/// in time; the record on stdout is the usual one (`expiresAt` in its session).
public enum ExpiryWarning {
    public static let option = Option<Duration>.duration(
        "warn-within",
        help: """
            Exit 14 (EXPIRES_SOON) while the session is valid but ends within this long (0: never): cron mails before it \
            ends.
            """,
        default: 0, range: 0...(365 * 86_400))

    /// SESSION_EXPIRES_SOON (exit 14) when a session ending at `expiresAt` (Unix seconds) ends within `within`
    /// seconds of `now`; nil when it does not, or `within` is 0.
    public static func check(expiresAt: Int64, now: Int64, within: Int64) -> StarlineError? {
        guard within > 0 else { return nil }
        let (left, overflow) = expiresAt.subtractingReportingOverflow(now)
        guard !overflow, left <= within else { return nil }
        return StarlineError(
            .sessionExpiresSoon,
            "the session ends at \(Timestamp.rfc3339String(expiresAt)), in \(DurationText.approximate(max(0, left))) (within --warn-within \(DurationText.format(within))): sign in again before then (sl-login; for an unattended job, a new token)",
            details: .object([
                ("expiresAt", .string(Timestamp.rfc3339String(expiresAt))), ("expiresInSeconds", .int(max(0, left))),
                ("warnWithinSeconds", .int(within))
            ]))
    }
}
