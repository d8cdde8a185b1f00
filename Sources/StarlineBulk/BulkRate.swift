import StarlineCore

/// `--rate`: the most requests a second one process of a bulk run sends (S16). A provider publishes its ceiling
/// as a number per window (Google's Directory API 2,400 a minute, Microsoft Graph 3,000 writes per 150 s) and an
/// admin who splits a run into N shards gives each a share of it, so the value is written as they are:
/// `Q` (a second), `Q/DURATION` (`2400/1m`, `3000/150s`), and either with `/N` for this process's share of N
/// (`150/4`, `3000/150s/4`). A bare second part is a number of shares; a window always has a unit.
public struct BulkRate: Sendable, Equatable, CustomStringConvertible {
    public let requests: Int
    public let windowSeconds: Int64
    public let shares: Int

    public static let maxRequests = 10_000_000
    public static let maxWindowSeconds: Int64 = 86_400
    /// Faster than this, a one-process limit means nothing; slower than one request an hour, it is a mistake.
    public static let maxPerSecond = 100_000.0
    public static let minPerSecond = 1.0 / 3_600

    public var requestsPerSecond: Double { Double(requests) / Double(windowSeconds) / Double(shares) }

    public init(parsing text: String) throws(StarlineError) {
        let parts = text.splitAtScalar("/")
        func invalid(_ why: String) -> StarlineError {
            StarlineError(
                .usage,
                "invalid value '\(text.prefix(40))' for --rate: \(why); expected Q, Q/DURATION, Q/N or Q/DURATION/N (150, 2400/1m, 150/4, 3000/150s/4)",
                details: .object([("option", .string("rate")), ("value", .string(String(text.prefix(40))))]))
        }
        guard (1...3).contains(parts.count), let q = Int(parts[0]), (1...Self.maxRequests).contains(q) else {
            throw invalid("Q must be a number of requests from 1 to \(Self.maxRequests)")
        }
        var window: Int64 = 1
        var shareText: Substring?
        if parts.count >= 2 {
            let second = parts[1]
            if second.unicodeScalars.last.map({ !("0"..."9").contains($0) }) ?? false {
                guard let seconds = DurationText.parts(second, unitRequired: true)?.totalSeconds,
                    (1...Self.maxWindowSeconds).contains(seconds)
                else { throw invalid("the window must be a duration from 1s to 1d, with a unit (1m, 150s)") }
                window = seconds
                shareText = parts.count == 3 ? parts[2] : nil
            } else {
                guard parts.count == 2 else { throw invalid("a window needs a unit (150s, not 150)") }
                shareText = second
            }
        }
        var n = 1
        if let shareText {
            guard let shares = Int(shareText), (1...BulkShard.maxCount).contains(shares) else {
                throw invalid("N must be a number of shards from 1 to \(BulkShard.maxCount)")
            }
            n = shares
        }
        requests = q
        windowSeconds = window
        shares = n
        guard requestsPerSecond <= Self.maxPerSecond else { throw invalid("more than \(Int(Self.maxPerSecond)) requests a second") }
        guard requestsPerSecond >= Self.minPerSecond else { throw invalid("less than one request an hour") }
    }

    public var description: String {
        var text = String(requests)
        if windowSeconds != 1 { text += "/" + DurationText.format(windowSeconds) }
        if shares != 1 { text += "/\(shares)" }
        return text
    }
}
