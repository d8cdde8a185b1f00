/// The one duration syntax of every option that takes a duration (`--timeout`, `--ttl`, `--idle`,
/// `--idle-for`, `--max-age`, `--pending-ttl`, `--due-within`, …), wherever its value comes from (flag,
/// environment, profile — where a JSON number is a number of seconds): a bare number of seconds (`90`), or
/// numbers each with a unit `s`, `m`, `h`, `d`, `w`, summed (`30s`, `5m`, `2h`, `3d`, `1w`, `1d12h`). A `+`
/// may lead and units may be capitals. Declare such an option with `Option<Duration>.duration`; its value
/// name is `DURATION` and its help ends with `helpNote`, so every tool words it the same.
public enum DurationText {
    /// The placeholder of every duration option.
    public static let placeholder = "DURATION"
    /// Appended to the help of every duration option.
    public static let helpNote = "DURATION: seconds, or a number with a unit s, m, h, d or w (90, 30s, 5m, 2h, 3d, 1w, 1d12h)."

    /// A parsed duration: whole days (`d`, `w`) apart from exact seconds (`h`, `m`, `s`, a bare number), as a
    /// calendar adds days in local time (`sl-tasks --due-within`). Each part saturates at `Int64.max`
    /// instead of overflowing, so a huge value is simply out of every range.
    public struct Parts: Equatable, Sendable {
        public var days: Int64
        public var seconds: Int64

        /// Days as 86,400 seconds each, plus the seconds; saturating.
        public var totalSeconds: Int64 {
            let (dayPart, o1) = days.multipliedReportingOverflow(by: 86_400)
            let (sum, o2) = dayPart.addingReportingOverflow(seconds)
            return o1 || o2 ? .max : sum
        }
    }

    /// The parts of `text`; nil when it is not of the syntax. `unitRequired` refuses a bare number (a date
    /// offset such as `+3d`, where `+3` alone would be ambiguous).
    public static func parts(_ text: some StringProtocol, unitRequired: Bool = false) -> Parts? {
        var rest = Substring(text)
        if rest.first == "+" { rest = rest.dropFirst() }
        guard !rest.isEmpty else { return nil }
        var result = Parts(days: 0, seconds: 0)
        var number: Int64? = nil
        for scalar in rest.unicodeScalars {
            if scalar.value >= 48 && scalar.value <= 57 {
                number = saturating((number ?? 0), times: 10, plus: Int64(scalar.value - 48))
                continue
            }
            guard let count = number else { return nil }
            switch scalar {
            case "s", "S": result.seconds = saturating(count, times: 1, plus: result.seconds)
            case "m", "M": result.seconds = saturating(count, times: 60, plus: result.seconds)
            case "h", "H": result.seconds = saturating(count, times: 3_600, plus: result.seconds)
            case "d", "D": result.days = saturating(count, times: 1, plus: result.days)
            case "w", "W": result.days = saturating(count, times: 7, plus: result.days)
            default: return nil
            }
            number = nil
        }
        if let count = number {
            // A bare number is seconds; a number left after units (`1d12`) has no unit and is refused.
            guard !unitRequired, result == Parts(days: 0, seconds: 0) else { return nil }
            result.seconds = count
        }
        return result
    }

    /// `text` as whole seconds within `range`; a malformed or out-of-range value (however large) is a usage
    /// error naming the option, its value and, when known, where the value came from.
    public static func seconds(_ text: String, option: String, range: ClosedRange<Int64>, from source: String? = nil) throws(StarlineError)
        -> Int64
    {
        guard let total = parts(text)?.totalSeconds, range.contains(total) else {
            throw invalid(text, option: option, range: range, from: source)
        }
        return total
    }

    /// The usage error for a duration option's value.
    public static func invalid(_ text: String, option: String, range: ClosedRange<Int64>, from source: String? = nil) -> StarlineError {
        let origin = source.map { " (from \($0))" } ?? ""
        return StarlineError(
            .usage,
            "invalid value '\(text)' for --\(option)\(origin): expected a duration from \(format(range.lowerBound)) to \(format(range.upperBound)) (90, 30s, 5m, 2h, 3d, 1w)",
            details: .object([("option", .string(option)), ("value", .string(text))]))
    }

    /// Seconds in the largest unit that divides them exactly (`600` → `10m`, `86400` → `1d`, `0` → `0`): how
    /// defaults and ranges are shown.
    public static func format(_ seconds: Int64) -> String {
        guard seconds > 0 else { return String(seconds) }
        for (size, unit) in [(Int64(7 * 86_400), "w"), (86_400, "d"), (3_600, "h"), (60, "m")] where seconds % size == 0 {
            return "\(seconds / size)\(unit)"
        }
        return "\(seconds)s"
    }

    /// Seconds as a person reads a time left, in its two largest units (`187_200` → `2d 4h`, `90` → `1m 30s`).
    public static func approximate(_ seconds: Int64) -> String {
        guard seconds > 0 else { return "0s" }
        var parts: [String] = []
        var rest = seconds
        for (size, unit) in [(Int64(86_400), "d"), (3_600, "h"), (60, "m"), (1, "s")] where rest >= size {
            parts.append("\(rest / size)\(unit)")
            rest %= size
            if parts.count == 2 { break }
        }
        return parts.joined(separator: " ")
    }

    /// `value * factor + addend`, `Int64.max` when that overflows.
    static func saturating(_ value: Int64, times factor: Int64, plus addend: Int64) -> Int64 {
        let (product, o1) = value.multipliedReportingOverflow(by: factor)
        let (sum, o2) = product.addingReportingOverflow(addend)
        return o1 || o2 ? .max : sum
    }
}

extension Option where Value == Duration {
    /// A duration option (`DurationText`'s syntax from every source) within `range` seconds, `defaultValue`
    /// seconds when given nowhere; help, range and default are shown as durations.
    public static func duration(
        _ long: String, short: Character? = nil, help: String, default defaultValue: Int64,
        range: ClosedRange<Int64>, env: String? = nil, configKey: String? = nil
    ) -> Option {
        precondition(range.contains(defaultValue), "the default of --\(long) is outside its range")
        let spec = OptionSpec.duration(long, short: short, help: help, default: defaultValue, range: range, env: env, configKey: configKey)
        return Option(spec: spec) { arguments in .seconds(try arguments.durationSeconds(long, in: range) ?? defaultValue) }
    }
}

extension Option where Value == Duration? {
    /// A duration option within `range` seconds, nil when given nowhere (the command decides what absence means).
    public static func duration(
        _ long: String, short: Character? = nil, help: String, range: ClosedRange<Int64>,
        env: String? = nil, configKey: String? = nil
    ) -> Option {
        let spec = OptionSpec.duration(long, short: short, help: help, range: range, env: env, configKey: configKey)
        return Option(spec: spec) { arguments in try arguments.durationSeconds(long, in: range).map { .seconds($0) } }
    }
}

extension OptionSpec {
    /// The spec of a duration option: `DURATION`, the shared help note, the range and default as durations.
    /// (For a domain's own value of the syntax, with `Option.converted`; otherwise use `Option.duration`.)
    public static func duration(
        _ long: String, short: Character? = nil, help: String, default defaultValue: Int64? = nil,
        range: ClosedRange<Int64>, env: String? = nil, configKey: String? = nil
    ) -> OptionSpec {
        var spec = OptionSpec.value(
            long, short: short, DurationText.placeholder, help: help + " " + DurationText.helpNote,
            default: defaultValue.map(DurationText.format), env: env, configKey: configKey)
        spec.range = "\(DurationText.format(range.lowerBound))–\(DurationText.format(range.upperBound))"
        return spec
    }
}

extension ParsedArguments {
    /// A duration option's value in seconds, checked against `range`; nil when given nowhere.
    func durationSeconds(_ long: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let (text, source) = resolved(long) else { return nil }
        return try DurationText.seconds(text, option: long, range: range, from: source.rawValue)
    }
}
