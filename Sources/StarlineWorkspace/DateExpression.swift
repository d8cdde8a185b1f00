import StarlineCore

/// A date as a user types it (`--due`, `--now`, `--due-before`, `--since`, …), parsed without a clock:
/// the syntax is checked where the arguments are read, and the instant is resolved later against the
/// clock that `--now` may fix, in the local zone (`TZ`).
package struct DateExpression: Equatable, Sendable {
    enum Day: Equatable, Sendable {
        case relative(Int)
        /// 0 = Sunday … 6 = Saturday: the next such day after today.
        case weekday(Int)
        case date(year: Int, month: Int, day: Int)
    }

    enum Form: Equatable, Sendable {
        case now
        case offset(TimeSpan, sign: Int)
        /// An RFC 3339 date-time with a zone: the same instant whatever the clock.
        case instant(Timestamp)
        /// A day with a wall-clock time, local unless `zoneOffset` (seconds east of UTC) is given.
        case day(Day, hour: Int, minute: Int, second: Int, zoneOffset: Int?)
        /// `due+2d`, `due-1w`: the task's own due date moved (only `edit --due` has one to move).
        case fromDue(TimeSpan, sign: Int)
    }

    /// `due±SPAN`'s span and sign; nil for every other form.
    package var dueShift: (span: TimeSpan, sign: Int)? {
        if case .fromDue(let span, let sign) = form { return (span, sign) }
        return nil
    }

    let form: Form

    static let weekdays: [(names: [String], index: Int)] = [
        (["sunday", "sun"], 0), (["monday", "mon"], 1), (["tuesday", "tue", "tues"], 2),
        (["wednesday", "wed"], 3), (["thursday", "thu", "thur", "thurs"], 4), (["friday", "fri"], 5),
        (["saturday", "sat"], 6)
    ]

    /// Nil when `input` is none of `DateInput.forms`.
    package init?(parsing input: String) {
        let text = input.trimmingSpaces.lowercased()
        guard !text.isEmpty else { return nil }
        if text == "now" {
            form = .now
            return
        }
        if text.hasPrefix("+") || text.hasPrefix("-") {
            guard let d = TimeSpan.parseUnits(text.dropFirst()) else { return nil }
            form = .offset(d, sign: text.hasPrefix("-") ? -1 : 1)
            return
        }
        // Taskwarrior's `now+2d` (the same as +2d) and `due+2d` (from the task's due date).
        for (base, isDue) in [("now", false), ("due", true)] where text.hasPrefix(base + "+") || text.hasPrefix(base + "-") {
            let rest = text.dropFirst(base.count)
            guard let d = TimeSpan.parseUnits(rest.dropFirst()) else { return nil }
            let sign = rest.hasPrefix("-") ? -1 : 1
            form = isDue ? .fromDue(d, sign: sign) : .offset(d, sign: sign)
            return
        }
        // A full RFC 3339 date-time with a zone.
        if let t = Timestamp(rfc3339: text.uppercased()) {
            form = .instant(t)
            return
        }

        // "<day>[( |T)HH:MM[:SS]]"
        var dayPart = Substring(text)
        var timePart: Substring? = nil
        if let space = text.firstIndex(of: " ") {
            dayPart = text[..<space]
            timePart = text[text.index(after: space)...].drop { $0 == " " }
        } else if text.count > 10, let tIndex = text.firstIndex(of: "t"), text.distance(from: text.startIndex, to: tIndex) == 10 {
            dayPart = text[..<tIndex]
            timePart = text[text.index(after: tIndex)...]
        }
        var clock = (hour: 0, minute: 0, second: 0, offset: nil as Int?)
        if let timePart {
            guard let parsed = DateExpression.parseTime(timePart) else { return nil }
            clock = parsed
        }
        let day: Day
        switch dayPart {
        case "today": day = .relative(0)
        case "tomorrow": day = .relative(1)
        case "yesterday": day = .relative(-1)
        default:
            if let weekday = DateExpression.weekdays.first(where: { $0.names.contains(String(dayPart)) }) {
                day = .weekday(weekday.index)
            } else if let iso = DateExpression.parseISODate(dayPart) {
                day = .date(year: iso.year, month: iso.month, day: iso.day)
            } else {
                return nil
            }
        }
        form = .day(day, hour: clock.hour, minute: clock.minute, second: clock.second, zoneOffset: clock.offset)
    }

    /// The instant this expression names when the time is `now`. Date-only forms mean local midnight at the
    /// start of that day.
    package func resolve(now: Timestamp) -> Timestamp? {
        guard let t = unchecked(now: now), t.isSupported else { return nil }
        return t
    }

    func unchecked(now: Timestamp) -> Timestamp? {
        switch form {
        case .now: return now
        case .offset(let span, let sign): return span.added(to: now, sign: sign)
        case .instant(let t): return t
        case .fromDue: return nil
        case .day(let day, let hour, let minute, let second, let zoneOffset):
            let today = LocalCalendar.fields(now)
            var date: (year: Int, month: Int, day: Int)
            switch day {
            case .relative(let n): date = (today.year, today.month, today.day + n)
            case .weekday(let index):
                var ahead = (index - today.weekday + 7) % 7
                if ahead == 0 { ahead = 7 }
                date = (today.year, today.month, today.day + ahead)
            case .date(let y, let m, let d): date = (y, m, d)
            }
            func local() -> Timestamp {
                LocalCalendar.instant(year: date.year, month: date.month, day: date.day, hour: hour, minute: minute, second: second)
            }
            guard let zoneOffset else { return local() }
            // An explicit zone: the wall-clock fields are in that zone, not the local one. Relative words may
            // overflow the month (day 32); the local calendar normalises the date first.
            var days = Timestamp.daysFromCivil(year: date.year, month: date.month, day: date.day)
            if days == nil {
                let f = LocalCalendar.fields(LocalCalendar.instant(year: date.year, month: date.month, day: date.day, hour: 12))
                days = Timestamp.daysFromCivil(year: f.year, month: f.month, day: f.day)
            }
            guard let days else { return local() }  // unreachable: a normalised date exists
            return Timestamp(seconds: Int64(days) * 86400 + Int64(hour * 3600 + minute * 60 + second - zoneOffset))
        }
    }

    /// `YYYY-MM-DD` of an existing date.
    static func parseISODate(_ s: Substring) -> (year: Int, month: Int, day: Int)? {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
            Timestamp.daysFromCivil(year: y, month: m, day: d) != nil
        else { return nil }
        return (y, m, d)
    }

    /// `HH:MM[:SS[.frac]][Z|±HH:MM]`.
    static func parseTime(_ s: Substring) -> (hour: Int, minute: Int, second: Int, offset: Int?)? {
        var body = s
        var offset: Int? = nil
        if body.hasSuffix("z") {
            offset = 0
            body = body.dropLast()
        } else if let sign = body.lastIndex(where: { $0 == "+" || $0 == "-" }) {
            let zone = body[body.index(after: sign)...].split(separator: ":", omittingEmptySubsequences: false)
            guard zone.count == 2, zone[0].count == 2, zone[1].count == 2, let h = Int(zone[0]), let m = Int(zone[1]),
                h <= 23, m <= 59
            else { return nil }
            offset = (h * 3600 + m * 60) * (body[sign] == "-" ? -1 : 1)
            body = body[..<sign]
        }
        if let dot = body.firstIndex(of: ".") {
            guard body[body.index(after: dot)...].allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            body = body[..<dot]
        }
        let parts = body.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let h = Int(parts[0]), let m = Int(parts[1]), h <= 23, m <= 59
        else { return nil }
        let sec = parts.count == 3 ? Int(parts[2])! : 0
        guard sec <= 59 else { return nil }
        return (h, m, sec, offset)
    }
}

/// Dates as users type them, in one step: parse and resolve against `now`.
public enum DateInput {
    /// What `DateExpression` accepts, for error messages and help.
    public static let forms = """
        now, today, tomorrow, yesterday, a weekday name (the next one after today), +3d, +2w, +36h, -1d (or now+3d), \
        due+2d (edit --due: from the task's due date), an ISO date \
        (2026-12-24) or date-time (2026-12-24T18:00, 2026-12-24T18:00:00+01:00, …Z); a date word or ISO date may be \
        followed by a time (tomorrow 09:00)
        """

    /// Nil when `input` is malformed or names an instant outside years 0001–9999.
    public static func resolve(_ input: String, now: Timestamp) -> Timestamp? {
        DateExpression(parsing: input)?.resolve(now: now)
    }
}

extension String {
    package var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" || f == "\n" || f == "\r" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\n" || l == "\r" { s = s.dropLast() }
        return String(s)
    }
}
