import StarlineCore

/// The rules every route of the HTTP contract shares (docs/openapi.yaml), for the platform's session client, the
/// bulk runs and the chat client alike: one mapping of error answers to `StarlineError`s, path segments, and the
/// details errors carry.
public enum PlatformHTTP {
    /// The one mapping from an HTTP error answer to a `StarlineError` (exit statuses follow from the code):
    ///
    /// | answer | code | exit |
    /// |---|---|---|
    /// | 401 `SESSION_REVOKED` / `SESSION_EXPIRED` | same | 4 |
    /// | 401 `INVALID_TOKEN` (or any other 401 of the API) | `INVALID_TOKEN` | 4 |
    /// | 403 `ACCOUNT_RESTRICTED` / `APP_UNAVAILABLE` | same | 4 |
    /// | other 403 | `FORBIDDEN`, `details.serverCode` | 5 |
    /// | 404 | `NOT_FOUND` | 6 |
    /// | 429 | `RATE_LIMITED`, retryable, `details.retryAfter` | 7 |
    /// | 5xx | `SERVER_ERROR`, retryable | 7 |
    /// | 409 / 410 | `CONFLICT` | 12 |
    /// | 400 / 413 / other 4xx | `REQUEST_REJECTED` | 2 |
    /// | OAuth `invalid_grant` | `INVALID_GRANT` | 9 |
    /// | OAuth `invalid_client` | `INVALID_CLIENT` | 2 |
    /// | OAuth `access_denied` / `expired_token` / `authorization_pending` / `slow_down` | `NO_RESULT` | 9 |
    /// | OAuth `invalid_request` / `unsupported_grant_type` / other | `REQUEST_REJECTED` | 2 |
    /// | anything else (1xx, 3xx: redirects are not followed) | `SERVER_ERROR`, not retryable | 7 |
    ///
    /// Details: `status`, `route` (when given), `serverCode` (the server's code, when any).
    /// `now`: Unix seconds (the caller's clock), against which a `Retry-After` date is read.
    public static func error(status: Int, body: [UInt8], headers: [String: String], route: String? = nil, now: Int64) -> StarlineError {
        let json = try? JSON.parse(body)
        // API errors: {"error":{"code","message"}}; OAuth errors: {"error":"invalid_grant","error_description"}.
        let apiCode = json?["error"]?["code"]?.stringValue
        let oauthCode = json?["error"]?.stringValue
        let serverCode = apiCode ?? oauthCode
        let serverMessage = (json?["error"]?["message"]?.stringValue ?? json?["error_description"]?.stringValue).map(clean)
        let on = route.map { " on \($0)" } ?? ""
        var details: [(String, JSON)] = [("status", .int(status))]
        if let route { details.append(("route", .string(route))) }
        if let serverCode { details.append(("serverCode", .string(clean(serverCode)))) }
        func make(_ code: ErrorCode, _ message: String, retryable: Bool = false) -> StarlineError {
            StarlineError(code, message, retryable: retryable, details: .object(details))
        }
        /// "summary: the server's message" (or the summary alone).
        func explained(_ summary: String) -> String {
            guard let serverMessage, !serverMessage.isEmpty else { return summary }
            return summary + ": " + serverMessage
        }

        if let oauthCode {
            switch oauthCode {
            case "invalid_grant": return make(.invalidGrant, explained("the sign-in was not accepted (invalid grant)"))
            case "invalid_client": return make(.invalidClient, explained("the server does not accept this app ID (invalid client)"))
            case "access_denied": return make(.noResult, "the sign-in was denied")
            case "expired_token": return make(.noResult, "the device code expired")
            case "authorization_pending": return make(.noResult, "the sign-in has not been approved yet")
            case "slow_down": return make(.noResult, "the sign-in is being polled too fast")
            default: break
            }
        }
        switch status {
        case 401:
            switch apiCode {
            case "SESSION_REVOKED": return make(.sessionRevoked, "the session was revoked; sign in again")
            case "SESSION_EXPIRED": return make(.sessionExpired, "the session expired; sign in again")
            default: return make(.invalidToken, "the server does not know this session (invalid token); sign in again")
            }
        case 403:
            switch apiCode {
            case "ACCOUNT_RESTRICTED": return make(.accountRestricted, "the account is restricted")
            case "APP_UNAVAILABLE": return make(.appUnavailable, "the app is unavailable")
            default: return make(.forbidden, explained("the server refused the request\(on)"))
            }
        case 404:
            return make(.notFound, explained("not found\(on)"))
        case 429:
            // Whole seconds as the server gave them (saturated, never converted from a Double that could trap).
            let wait = headers["retry-after"].flatMap { RetryPolicy.retryAfterSeconds($0, now: now) }
            if let wait { details.append(("retryAfter", .int(wait))) }
            return make(
                .rateLimited, "the server is rate limiting requests" + (wait.map { "; retry after \($0) s" } ?? ""),
                retryable: true)
        case 409, 410:
            return make(
                .conflict, explained("the server rejected the request\(on) (HTTP \(status)\(serverCode.map { " \(clean($0))" } ?? ""))"))
        case 400...499:
            return make(
                .requestRejected,
                explained("the server rejected the request\(on) (HTTP \(status)\(serverCode.map { " \(clean($0))" } ?? ""))"))
        case 500...599:
            return make(.server, explained("server error (HTTP \(status))\(on)"), retryable: true)
        case 300...399:
            return make(.server, "unexpected redirect (HTTP \(status))\(on); redirects are not followed: check the API base URL")
        default:
            return make(.server, "unexpected HTTP status \(status)\(on)")
        }
    }

    /// A server-supplied string made safe for one line of output: control characters dropped, at most 300 characters.
    static func clean(_ text: String) -> String {
        var out = String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
        if out.count > 300 { out = String(out.prefix(300)) + "…" }
        return out
    }

    /// One path segment, percent-encoded; "." and ".." are encoded too so they cannot climb the path.
    package static func segment(_ value: String) -> String {
        value == "." || value == ".." ? String(repeating: "%2E", count: value.count) : PercentEncoding.encode(value)
    }

    /// `details` with `members` added where it has no such key (a non-object becomes `{"value": …}`).
    package static func adding(_ members: [(String, JSON)], to details: JSON?) -> JSON {
        var result = details ?? .object([])
        if case .object = result {} else { result = .object([("value", result)]) }
        for (key, value) in members where result[key] == nil { result.set(key, value) }
        return result
    }
}
