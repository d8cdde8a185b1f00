import StarlineCore

/// What a server says of its rate limit on an answer, so that a bulk run paces itself at the ceiling instead of
/// learning it from 429s (S16): the IETF fields (`RateLimit-Policy: 150;w=1`, `RateLimit-Remaining`,
/// `RateLimit-Reset` in seconds) and the `X-RateLimit-Remaining`/`-Reset` many APIs send (GitHub's reset is a
/// Unix time). A bare `RateLimit-Limit` names no window, so it cannot pace a run and is not read. Values that
/// do not parse are ignored, never trusted.
public struct RateLimitHint: Sendable, Equatable {
    /// Requests allowed per `window` seconds, when the server names its window (`RateLimit-Policy`).
    public var limit: Int?
    public var window: Double?
    /// Requests left in the current window, and seconds until it ends.
    public var remaining: Int?
    public var reset: Double?

    /// The hint of `reply`, nil when it carries none. `now` (Unix seconds) turns a reset given as a time into seconds.
    public static func parse(_ reply: HTTPReply, now: Int64) -> RateLimitHint? {
        var hint = RateLimitHint()
        if let policy = reply.header("RateLimit-Policy") {
            // `150;w=1`, or the later draft's `"default";q=150;w=1`: the first policy only.
            let first = policy.split(separator: ",").first.map(String.init) ?? policy
            var parts = first.split(separator: ";").map { String($0).trimmingWhitespace() }
            if let quota = parts.first.flatMap({ Int($0) }) {
                hint.limit = quota
                parts.removeFirst()
            }
            for part in parts {
                let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else { continue }
                if pair[0] == "q", let quota = Int(pair[1]) { hint.limit = quota }
                if pair[0] == "w", let window = Double(pair[1]), window.isFinite, window > 0 { hint.window = window }
            }
            if hint.window == nil || (hint.limit ?? 0) <= 0 {
                hint.limit = nil
                hint.window = nil
            }
        }
        if let remaining = (reply.header("RateLimit-Remaining") ?? reply.header("X-RateLimit-Remaining")).flatMap({
            Int($0.trimmingWhitespace())
        }),
            remaining >= 0
        {
            hint.remaining = remaining
        }
        if let reset = (reply.header("RateLimit-Reset") ?? reply.header("X-RateLimit-Reset")).flatMap({ Double($0.trimmingWhitespace()) }),
            reset.isFinite, reset >= 0
        {
            // More than a year of seconds is a Unix time (GitHub's X-RateLimit-Reset).
            hint.reset = reset > 31_536_000 ? max(0, reset - Double(now)) : reset
        }
        return hint == RateLimitHint() ? nil : hint
    }

    /// Seconds between requests that keep a run under the policy with 5 % to spare; nil without a policy.
    public var spacing: Double? {
        guard let limit, let window else { return nil }
        return window / (Double(limit) * 0.95)
    }
}
