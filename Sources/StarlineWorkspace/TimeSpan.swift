import StarlineCore

/// A span of time as the user writes it: calendar days (`d`, `w`: DST-aware, they keep the local
/// wall-clock time) plus exact seconds (`h`, `m`, `s`).
public struct TimeSpan: Equatable, Sendable {
    public var days: Int
    public var seconds: Int64

    public init(days: Int = 0, seconds: Int64 = 0) {
        self.days = days
        self.seconds = seconds
    }

    /// `DurationText`'s syntax (`1d`, `+2w`, `36h`, `90m`, `45s`, sums such as `1d12h`, bare seconds), its
    /// days kept as calendar days. Nil when malformed or empty.
    public init?(parsing text: String) {
        guard let parts = DurationText.parts(text) else { return nil }
        self.init(parts)
    }

    /// Parsed parts; a part saturated by a huge value leads out of range in `added`, never to a trap.
    public init(_ parts: DurationText.Parts) {
        self.init(days: Int(parts.days), seconds: parts.seconds)
    }

    /// The span of a date offset (`+3d` after its sign): the same syntax, with a unit required.
    static func parseUnits(_ text: Substring) -> TimeSpan? {
        guard text.first != "+" else { return nil }
        return DurationText.parts(text, unitRequired: true).map(TimeSpan.init)
    }

    /// More calendar days than years 0001–9999 hold: such a span leads out of range from any instant.
    static let maxDays = 3_660_000

    /// `t` moved forward (or back, `sign` -1) by this duration; nil when the result is outside years
    /// 0001–9999 (`Timestamp.supportedRange`): never a wrapped or trapping date.
    public func added(to t: Timestamp, sign: Int = 1) -> Timestamp? {
        guard abs(days) <= TimeSpan.maxDays, seconds.magnitude <= 400_000_000_000 else { return nil }
        var result = days == 0 ? t : LocalCalendar.addDays(t, days * sign)
        guard result.isSupported else { return nil }
        let (moved, overflow) = result.seconds.addingReportingOverflow(seconds * Int64(sign))
        guard !overflow, let checked = Timestamp(checkedSeconds: moved) else { return nil }
        result = checked
        return result
    }
}
