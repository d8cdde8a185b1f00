import StarlineCore

/// A task's `recur` period, as Taskwarrior writes it (`weekly`, `3d`, `P1M`, …): finishing a recurring task
/// makes its next instance (W1; Taskwarrior users expect `done` on a weekly task to bring next week's).
///
/// Steps are calendar steps in the local time zone, keeping the wall-clock time of the due date: a day is the
/// same time tomorrow across a DST change, a month keeps the day of the month (the 31st becomes the last day
/// of a shorter month), `weekdays` skips Saturday and Sunday. The next due date is the first step after the
/// current one that lies after now: a weekly task finished three weeks late comes back next week, not three
/// times overdue.
package struct Recurrence: Equatable, Sendable {
    package enum Step: Equatable, Sendable { case hours(Int), days(Int), months(Int), weekdays }

    package let step: Step

    /// The named periods Taskwarrior knows.
    static let names: [String: Step] = [
        "hourly": .hours(1), "daily": .days(1), "day": .days(1), "weekdays": .weekdays, "weekly": .days(7), "week": .days(7),
        "sennight": .days(7), "biweekly": .days(14), "fortnight": .days(14), "monthly": .months(1), "month": .months(1),
        "bimonthly": .months(2), "quarterly": .months(3), "quarter": .months(3), "semiannual": .months(6),
        "annual": .months(12), "yearly": .months(12), "year": .months(12), "biannual": .months(24), "biyearly": .months(24)
    ]

    /// A unit after a count: hours, days or months, times a factor (a week is 7 days, a year 12 months).
    enum Unit: Sendable { case hours, days, months }

    /// Units after a count (`3d`, `2wks`, `6mo`): `m` alone is refused, as it could mean minutes or months.
    static let units: [String: (unit: Unit, times: Int)] = [
        "h": (.hours, 1), "hr": (.hours, 1), "hrs": (.hours, 1), "hour": (.hours, 1), "hours": (.hours, 1),
        "d": (.days, 1), "day": (.days, 1), "days": (.days, 1),
        "w": (.days, 7), "wk": (.days, 7), "wks": (.days, 7), "week": (.days, 7), "weeks": (.days, 7),
        "mo": (.months, 1), "mos": (.months, 1), "month": (.months, 1), "months": (.months, 1),
        "q": (.months, 3), "qtr": (.months, 3), "qtrs": (.months, 3), "quarter": (.months, 3), "quarters": (.months, 3),
        "y": (.months, 12), "yr": (.months, 12), "yrs": (.months, 12), "year": (.months, 12), "years": (.months, 12)
    ]
    /// ISO 8601: `PnD`, `PnW`, `PnM`, `PnY`; `PTnH`.
    static let isoUnits: [String: (unit: Unit, times: Int)] = ["d": (.days, 1), "w": (.days, 7), "m": (.months, 1), "y": (.months, 12)]

    /// The largest count accepted (`1000d`): a period, not a way to reach past year 9999.
    static let maxCount = 1000

    package init(step: Step) { self.step = step }

    /// Nil when `text` is no period: a name, a count (1–1000) and a unit, or ISO 8601's `PnD`, `PnW`, `PnM`,
    /// `PnY`, `PTnH`.
    package init?(parsing text: String) {
        let t = text.trimmingSpaces.lowercased()
        if let named = Recurrence.names[t] {
            step = named
            return
        }
        var rest = Substring(t)
        var iso = false
        if rest.hasPrefix("pt") {
            iso = true
            rest = rest.dropFirst(2)
        } else if rest.hasPrefix("p") {
            iso = true
            rest = rest.dropFirst()
        }
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count <= 4, let count = Int(digits), (1...Recurrence.maxCount).contains(count) else { return nil }
        let unitText = String(rest.dropFirst(digits.count))
        let found: (unit: Unit, times: Int)? =
            if t.hasPrefix("pt") { unitText == "h" ? (.hours, 1) : nil } else if iso { Recurrence.isoUnits[unitText] } else {
                Recurrence.units[unitText]
            }
        guard let found else { return nil }
        switch found.unit {
        case .hours: step = .hours(count * found.times)
        case .days: step = .days(count * found.times)
        case .months: step = .months(count * found.times)
        }
    }

    /// The first due date after `due` that lies after `now` (at least one step on); nil past year 9999.
    package func nextDue(after due: Timestamp, now: Timestamp) -> Timestamp? {
        // Jump close to now first (a task years overdue is not walked step by step), then step.
        var k = 1
        let behind = now.seconds - due.seconds
        switch step {
        case .hours(let n): k = max(1, Int(behind / Int64(3600 * n)))
        case .days(let n): k = max(1, Int(behind / Int64(86_400 * n)) - 1)
        case .months(let n):
            let a = LocalCalendar.fields(due), b = LocalCalendar.fields(now)
            k = max(1, ((b.year - a.year) * 12 + (b.month - a.month)) / n - 1)
        case .weekdays: k = max(1, Int(behind / (7 * 86_400)) * 5 - 5)
        }
        var candidate = moved(due, by: k)
        // Each further step is one period; a handful at most after the jump (a bound, not a loop to the end).
        for _ in 0..<64 {
            guard let c = candidate, c.isSupported else { return nil }
            if c > now { return c }
            k += 1
            candidate = moved(due, by: k)
        }
        return nil
    }

    /// `due` moved by `k` steps.
    func moved(_ due: Timestamp, by k: Int) -> Timestamp? {
        let f = LocalCalendar.fields(due)
        switch step {
        case .hours(let n):
            let (s, overflow) = due.seconds.addingReportingOverflow(Int64(k) * Int64(n) * 3600)
            return overflow ? nil : Timestamp(checkedSeconds: s)
        case .days(let n):
            guard k <= 4_000_000 / n else { return nil }
            return LocalCalendar.instant(year: f.year, month: f.month, day: f.day + k * n, hour: f.hour, minute: f.minute, second: f.second)
        case .months(let n):
            guard k <= 200_000 / n else { return nil }
            let index = f.year * 12 + (f.month - 1) + k * n
            let year = index / 12, month = index % 12 + 1
            var day = f.day
            while day > 28, Timestamp.daysFromCivil(year: year, month: month, day: day) == nil { day -= 1 }
            return LocalCalendar.instant(year: year, month: month, day: day, hour: f.hour, minute: f.minute, second: f.second)
        case .weekdays:
            // k weekdays on: whole weeks first (five weekdays each), then day by day over the weekend.
            guard k <= 2_000_000 else { return nil }
            var date = LocalCalendar.instant(
                year: f.year, month: f.month, day: f.day + (k / 5) * 7, hour: f.hour, minute: f.minute, second: f.second)
            var left = k % 5
            while left > 0 {
                date = LocalCalendar.addDays(date, 1)
                let weekday = LocalCalendar.fields(date).weekday
                if weekday != 0 && weekday != 6 { left -= 1 }
            }
            // A task due on a weekend comes back on a weekday.
            while [0, 6].contains(LocalCalendar.fields(date).weekday) { date = LocalCalendar.addDays(date, 1) }
            return date
        }
    }
}
