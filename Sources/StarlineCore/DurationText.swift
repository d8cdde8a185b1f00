/// A duration as options take it: `30d`, `12h`, `90m`, `45s`, `2w`, or a bare number of seconds — checked
/// against `range` without overflow (`--idle-for`, `--ttl`, `--idle`).
public enum DurationText {
    public static func seconds(_ text: String, option: String, range: ClosedRange<Int64>, maximum: String) throws(StarlineError) -> Int64 {
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, !last.isNumber {
            switch last {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3_600
            case "d": unit = 86_400
            case "w": unit = 7 * 86_400
            default: throw invalid(text, option)
            }
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.count <= 12, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let count = Int64(digits) else {
            throw invalid(text, option)
        }
        let (total, overflow) = count.multipliedReportingOverflow(by: unit)
        guard !overflow, total <= range.upperBound else {
            throw StarlineError(.usage, "--\(option) \(text) is more than \(maximum)", details: .object([("option", .string(option)), ("value", .string(text))]))
        }
        guard total >= range.lowerBound else { throw invalid(text, option) }
        return total
    }

    static func invalid(_ text: String, _ option: String) -> StarlineError {
        StarlineError(.usage, "--\(option) '\(text)' is not a duration (30d, 12h, 90m, 45s, 2w, or seconds)",
                      details: .object([("option", .string(option)), ("value", .string(text))]))
    }
}
