/// A time as a person reads it in a table: how far from now, in the largest unit that fits ("in 2d",
/// "3h ago", "now"), as Taskwarrior's and kubectl's tables show dates. JSON, CSV and TSV keep RFC 3339.
public enum RelativeTime {
    /// `time` relative to `now`: under a minute "now"; then minutes, hours, days (under two weeks), weeks
    /// (under two months), months (30 days, under two years) and years, rounded down.
    public static func text(_ time: Timestamp, now: Timestamp) -> String {
        let (delta, overflow) = time.seconds.subtractingReportingOverflow(now.seconds)
        guard !overflow else { return time.rfc3339 }
        let span = delta.magnitude
        guard span >= 60 else { return "now" }
        let amount: String
        switch span {
        case ..<3_600: amount = "\(span / 60)m"
        case ..<86_400: amount = "\(span / 3_600)h"
        case ..<(14 * 86_400): amount = "\(span / 86_400)d"
        case ..<(60 * 86_400): amount = "\(span / (7 * 86_400))w"
        case ..<(730 * 86_400): amount = "\(span / (30 * 86_400))mo"
        default: amount = "\(span / (365 * 86_400))y"
        }
        return delta > 0 ? "in " + amount : amount + " ago"
    }

    /// Whether a column holds times a table shows relative: `due`, and every `…At` (createdAt, lastSeenAt).
    static func isTimeColumn(_ path: String) -> Bool {
        let name = TableLayout.fieldName(path)
        return name == "due" || (name.count > 2 && name.hasSuffix("At"))
    }
}
