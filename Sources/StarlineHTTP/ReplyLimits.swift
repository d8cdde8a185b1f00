import StarlineCore

/// What the client makes of the numbers in a server's answers: nothing the server says may trap or overflow the client. A server — or whatever
/// answers in its place — may send any JSON number: 2^63 − 1, −2^63, 1e30. Each one either has a documented,
/// clamped meaning or is DATA_ERROR (exit 12) naming the field; none reaches arithmetic that could trap.
///
/// | field | accepted | beyond |
/// |---|---|---|
/// | token `expires_in` | 1 s … 10 years | longer: 10 years; ≤ 0 or not a number: DATA_ERROR |
/// | device `expires_in` | 1 s … 1 day (`--pending-ttl`'s limit) | longer: 1 day; ≤ 0 or not a number: DATA_ERROR |
/// | device `interval` | 0 … 300 s | longer: 300 s; absent, negative or not a number: 5 s (RFC 8628's default) |
/// | `Retry-After` | 0 … `RetryPolicy.maxRetryAfter` (10 s) | longer: the cap; not digits or a date: own backoff |
public enum ReplyLimits {
    /// A token said to live longer is treated as living this long (sessions are re-verified long before).
    public static let maxTokenLifetime: Int64 = 10 * 365 * 86400
    /// A device code said to live longer expires this soon here: the pending login it creates holds every
    /// `sl-restore` at NO_RESULT while it lasts, so no longer than the longest `--pending-ttl`.
    public static let maxDeviceCodeLifetime: Int64 = 86400
    /// RFC 8628 §3.2 `interval`; 0 is a server's own business (the dev server's tests use it).
    public static let pollInterval: ClosedRange<Int64> = 0...300
    public static let defaultPollInterval: Int64 = 5

    /// `interval` of a device authorization: clamped into `pollInterval`, the default when it is no usable number.
    package static func pollInterval(_ value: JSON?) -> Int64 {
        guard let seconds = value.flatMap(saturatingInteger), seconds >= 0 else { return defaultPollInterval }
        return min(seconds, pollInterval.upperBound)
    }

    /// The slow_down step of RFC 8628 §3.5 (+5 s), within `pollInterval`.
    package static func slowedDown(_ interval: Int64) -> Int64 {
        min(max(interval, 0), pollInterval.upperBound - 5) + 5
    }

    /// An integer JSON number, saturated at the ends of Int64 (a 2^70 or a 1e30 is "very large", not an error);
    /// nil for a fraction, a non-number, NaN.
    static func saturatingInteger(_ value: JSON) -> Int64? {
        if let exact = value.intValue { return exact }
        guard let d = value.doubleValue, !d.isNaN else { return nil }
        // Every Double at or beyond ±2^63 is an integer; one inside the range that `intValue` refused is a fraction.
        if d >= 9.2e18 { return .max }
        if d <= -9.2e18 { return .min }
        return nil
    }

    /// `now + seconds` kept inside the times the store and the output can hold (`Timestamp.supportedRange`).
    package static func instant(_ now: Int64, plus seconds: Int64) -> Int64 {
        let (sum, overflow) = now.addingReportingOverflow(seconds)
        let bounded = overflow ? (seconds < 0 ? Int64.min : Int64.max) : sum
        return min(max(bounded, Timestamp.supportedRange.lowerBound), Timestamp.supportedRange.upperBound)
    }

    /// Nanoseconds of `seconds` for a wait or a deadline, 0 for a negative or non-finite one, at most a day.
    package static func nanoseconds(_ seconds: Double) -> UInt64 {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return UInt64(min(seconds, 86_400) * 1_000_000_000)
    }
}

extension AnswerReader {
    /// A lifetime in whole seconds (`expires_in`): clamped to `max`, DATA_ERROR when missing, not an integer
    /// or not positive.
    package func lifetime(_ key: String, max: Int64) throws -> Int64 {
        guard let value = json[key], let seconds = ReplyLimits.saturatingInteger(value) else {
            throw malformed("'\(prefix)\(key)' is missing or not an integer")
        }
        guard seconds > 0 else { throw malformed("'\(prefix)\(key)' is \(seconds), not a positive number of seconds") }
        return Swift.min(seconds, max)
    }
}
