#if canImport(Glibc)
import Glibc
#endif

/// A point in time: whole seconds since the Unix epoch, UTC. The workbench never needs finer
/// resolution, and whole seconds make the filter boundaries exact.
///
/// Dates are done with libc (`timegm`, `gmtime_r`, `localtime_r`, `mktime`; `TZ` is honoured through
/// `tzset`) so the tool links no Foundation: start-up time is part of the product.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var seconds: Int64

    public init(seconds: Int64) { self.seconds = seconds }

    /// The instants that have an RFC 3339 form: 0001-01-01T00:00:00Z through 9999-12-31T23:59:59Z (four-digit
    /// years, RFC 3339 section 5.6). Anything outside would be printed wrapped (year 10240 as 0240), so every
    /// date that comes from outside — an argument, an imported file — is checked against this range.
    public static let supportedRange: ClosedRange<Int64> = -62_135_596_800...253_402_300_799

    /// Nil when `seconds` is outside `supportedRange`.
    public init?(checkedSeconds seconds: Int64) {
        guard Timestamp.supportedRange.contains(seconds) else { return nil }
        self.seconds = seconds
    }

    public var isSupported: Bool { Timestamp.supportedRange.contains(seconds) }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.seconds < b.seconds }

    public static func + (t: Timestamp, s: Int64) -> Timestamp { Timestamp(seconds: t.seconds + s) }
    public static func - (t: Timestamp, s: Int64) -> Timestamp { Timestamp(seconds: t.seconds - s) }

    /// The real clock.
    public static func now() -> Timestamp { Timestamp(seconds: Int64(time(nil))) }

    /// Milliseconds since the Unix epoch (durations in logs, long-poll deadlines).
    public static func nowMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    public var description: String { rfc3339 }

    // MARK: RFC 3339

    /// `2026-11-30T08:00:00Z`: the one output form of every time (README, Conventions).
    /// A time outside `supportedRange` prints as the nearest one inside it (0001-01-01T00:00:00Z or
    /// 9999-12-31T23:59:59Z), never wrapped and never a trap.
    public var rfc3339: String {
        let parts = utcParts
        var out = [UInt8]()
        out.reserveCapacity(20)
        Timestamp.appendDigits(&out, Int(parts.tm_year) + 1900, 4)
        out.append(UInt8(ascii: "-"))
        Timestamp.appendDigits(&out, Int(parts.tm_mon) + 1, 2)
        out.append(UInt8(ascii: "-"))
        Timestamp.appendDigits(&out, Int(parts.tm_mday), 2)
        out.append(UInt8(ascii: "T"))
        Timestamp.appendDigits(&out, Int(parts.tm_hour), 2)
        out.append(UInt8(ascii: ":"))
        Timestamp.appendDigits(&out, Int(parts.tm_min), 2)
        out.append(UInt8(ascii: ":"))
        Timestamp.appendDigits(&out, Int(parts.tm_sec), 2)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Taskwarrior's date form, `20261130T080000Z` (UTC).
    public var taskwarrior: String {
        let parts = utcParts
        var out = [UInt8]()
        Timestamp.appendDigits(&out, Int(parts.tm_year) + 1900, 4)
        Timestamp.appendDigits(&out, Int(parts.tm_mon) + 1, 2)
        Timestamp.appendDigits(&out, Int(parts.tm_mday), 2)
        out.append(UInt8(ascii: "T"))
        Timestamp.appendDigits(&out, Int(parts.tm_hour), 2)
        Timestamp.appendDigits(&out, Int(parts.tm_min), 2)
        Timestamp.appendDigits(&out, Int(parts.tm_sec), 2)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The UTC calendar fields, of `seconds` clamped to `supportedRange`: outside it a year has more than four
    /// digits or a sign (or `gmtime_r` fails), which the fixed-width forms cannot print — a time from a damaged
    /// record or a hand-made file reads, so it must print too (found by fuzz-vault).
    private var utcParts: tm {
        var t = time_t(min(max(seconds, Timestamp.supportedRange.lowerBound), Timestamp.supportedRange.upperBound))
        var parts = tm()
        gmtime_r(&t, &parts)
        return parts
    }

    private static func appendDigits(_ out: inout [UInt8], _ value: Int, _ width: Int) {
        var digits = [UInt8](repeating: UInt8(ascii: "0"), count: width)
        var v = value
        var i = width - 1
        while i >= 0 {
            digits[i] = UInt8(ascii: "0") + UInt8(v % 10)
            v /= 10
            i -= 1
        }
        out.append(contentsOf: digits)
    }

    /// Parses an RFC 3339 date-time: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`; `t`, `z` and a space
    /// for `T` are accepted (RFC 3339 section 5.6 note). Fractions are truncated to whole seconds.
    /// Nil for anything else, including out-of-range fields.
    public init?(rfc3339 text: String) {
        var copy = text
        guard let value = copy.withUTF8({ Timestamp.parseRFC3339($0) }) else { return nil }
        self.init(seconds: value)
    }

    /// The fast path of `init?(rfc3339:)`, over bytes (used for every `due` of a listing).
    public static func parseRFC3339(_ b: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard b.count >= 20 else { return nil }
        @inline(__always) func digits(_ at: Int, _ n: Int) -> Int? {
            var v = 0
            for i in at..<(at + n) {
                let c = b[i]
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            return v
        }
        guard let year = digits(0, 4), b[4] == UInt8(ascii: "-"), let month = digits(5, 2), b[7] == UInt8(ascii: "-"),
            let day = digits(8, 2)
        else { return nil }
        let sep = b[10]
        guard sep == UInt8(ascii: "T") || sep == UInt8(ascii: "t") || sep == UInt8(ascii: " ") else { return nil }
        guard let hour = digits(11, 2), b[13] == UInt8(ascii: ":"), let minute = digits(14, 2), b[16] == UInt8(ascii: ":"),
            let second = digits(17, 2)
        else { return nil }
        var i = 19
        if b[i] == UInt8(ascii: ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil }
        var offset = 0
        switch b[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard i + 6 == b.count, let oh = digits(i + 1, 2), b[i + 3] == UInt8(ascii: ":"), let om = digits(i + 4, 2),
                oh <= 23, om <= 59
            else { return nil }
            offset = (oh * 3600 + om * 60) * (b[i] == UInt8(ascii: "-") ? -1 : 1)
            i += 6
        default:
            return nil
        }
        guard i == b.count else { return nil }
        guard let days = Timestamp.daysFromCivil(year: year, month: month, day: day),
            hour <= 23, minute <= 59, second <= 60
        else { return nil }
        // A leap second (:60) is read as the first second of the next minute. An offset may carry year 0001
        // or 9999 outside the supported range (0001-01-01T00:00:00+01:00): refused, not wrapped.
        let value = Int64(days) * 86400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offset)
        return Timestamp.supportedRange.contains(value) ? value : nil
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date, or nil when the date does not exist
    /// (Howard Hinnant's days_from_civil).
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int? {
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month) else { return nil }
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    public static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Taskwarrior's `20261130T080000Z`, or RFC 3339 (what `task import` also accepts).
    public init?(taskwarrior text: String) {
        let b = Array(text.utf8)
        if b.count == 16, b[8] == UInt8(ascii: "T"), b[15] == UInt8(ascii: "Z") {
            func n(_ r: Range<Int>) -> Int? {
                var v = 0
                for i in r {
                    guard b[i] >= 48, b[i] <= 57 else { return nil }
                    v = v * 10 + Int(b[i] - 48)
                }
                return v
            }
            guard let y = n(0..<4), let mo = n(4..<6), let d = n(6..<8), let h = n(9..<11), let mi = n(11..<13), let s = n(13..<15),
                let days = Timestamp.daysFromCivil(year: y, month: mo, day: d), h <= 23, mi <= 59, s <= 60
            else { return nil }
            self.init(checkedSeconds: Int64(days) * 86400 + Int64(h * 3600 + mi * 60 + s))
            return
        }
        self.init(rfc3339: text)
    }
}

/// The local calendar of the process (`TZ`, else `/etc/localtime`).
public enum LocalCalendar {
    /// Reads `TZ` once per process; libc functions below depend on it.
    public static func configure() { tzset() }

    public struct Fields: Equatable, Sendable {
        public var year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int
        /// 0 = Sunday … 6 = Saturday.
        public var weekday: Int
    }

    public static func fields(_ t: Timestamp) -> Fields {
        var time = time_t(t.seconds)
        var parts = tm()
        localtime_r(&time, &parts)
        return Fields(
            year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday),
            hour: Int(parts.tm_hour), minute: Int(parts.tm_min), second: Int(parts.tm_sec), weekday: Int(parts.tm_wday))
    }

    /// The instant of a local wall-clock time. Out-of-range fields are normalised (day 32 → next month);
    /// a time skipped by a DST change is moved forward by the change, as mktime does.
    public static func instant(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) -> Timestamp {
        var parts = tm()
        // Clamped, not trapping: a field beyond Int32 gives an instant outside `supportedRange`, which callers
        // with untrusted input check.
        parts.tm_year = Int32(clamping: year - 1900)
        parts.tm_mon = Int32(clamping: month - 1)
        parts.tm_mday = Int32(clamping: day)
        parts.tm_hour = Int32(clamping: hour)
        parts.tm_min = Int32(clamping: minute)
        parts.tm_sec = Int32(clamping: second)
        parts.tm_isdst = -1
        return Timestamp(seconds: Int64(mktime(&parts)))
    }

    /// Local midnight at the start of the day of `t`.
    public static func startOfDay(_ t: Timestamp) -> Timestamp {
        let f = fields(t)
        return instant(year: f.year, month: f.month, day: f.day)
    }

    /// `t` moved by `days` calendar days, keeping the local wall-clock time (so `+1d` across a DST
    /// change is 23 or 25 hours).
    public static func addDays(_ t: Timestamp, _ days: Int) -> Timestamp {
        let f = fields(t)
        return instant(year: f.year, month: f.month, day: f.day + days, hour: f.hour, minute: f.minute, second: f.second)
    }
}

extension Timestamp {
    /// RFC 3339 UTC text of Unix seconds (the network tools keep times as plain seconds).
    public static func rfc3339String(_ seconds: Int64) -> String { Timestamp(seconds: seconds).rfc3339 }
}
