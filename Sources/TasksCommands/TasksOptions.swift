#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineWorkspace

/// The options every command of `sl-tasks` takes: which workspace file, and the clock.
struct TasksGlobalOptions: OptionGroup {
    static let workspace = Option<String?>.string(
        "workspace", "FILE", help: "Use FILE instead of <data>/workspace.json.", env: "STARLINE_WORKSPACE",
        completion: .file(extensions: ["json"]))
    static let now = Option<DateExpression?>.date(
        "now", help: "Take WHEN as the current time (a fixed clock for scripts and tests), e.g. 2026-11-30T08:00:00Z.")

    static let specs: [OptionSpec] = [workspace.spec, now.spec]

    /// `--workspace` or `STARLINE_WORKSPACE`; nil: `<data>/workspace.json`.
    var workspace: String?
    /// `--now`; nil: the clock of the streams. Relative forms (`+1d`) count from that clock.
    var now: DateExpression?

    init(_ arguments: ParsedArguments) throws {
        workspace = try arguments[Self.workspace]
        // An empty name is a mistake (an unset variable in a script), not a request for the default file.
        if workspace?.isEmpty == true || workspace?.hasSuffix("/") == true {
            throw StarlineError(
                .usage, "--workspace (or STARLINE_WORKSPACE) must name a file, not '\(workspace!)'",
                details: .object([("option", .string("workspace")), ("value", .string(workspace!))]))
        }
        now = try arguments[Self.now]
    }

    /// The file to use. Only the default `<data>` directory is created; the directory of a file named with
    /// `--workspace` must exist (USAGE, exit 2): a typo must not create directories or read as an empty
    /// workspace.
    func workspacePath(_ paths: StarlinePaths) throws -> String {
        guard let workspace else { return paths.data + "/workspace.json" }
        let directory = workspace.lastIndex(of: "/").map { String(workspace[..<$0]) } ?? "."
        var info = stat()
        guard stat(directory.isEmpty ? "/" : directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw StarlineError(
                .usage, "the directory of the workspace file \(workspace) does not exist (\(directory)); create it first",
                details: .object([
                    ("option", .string("workspace")), ("value", .string(workspace)),
                    ("directory", .string(directory))
                ]))
        }
        return workspace
    }
}

/// `--notes TEXT`, or `--notes -`: read them from standard input when the command runs.
enum NotesInput: Sendable {
    case text(String)
    case standardInput
}

extension Option where Value == DateExpression? {
    /// A date in any of `DateInput.forms`, checked here and resolved against the clock when the command runs
    /// (`Workbench.date`); a malformed one is a usage error naming the option and the accepted forms.
    static func date(_ long: String, short: Character? = nil, help: String) -> Option {
        .converted(.value(long, short: short, "WHEN", help: help)) { text in
            guard let date = DateExpression(parsing: text) else {
                throw StarlineError(
                    .usage, "invalid date '\(text)' for --\(long); use \(DateInput.forms)",
                    details: .object([("option", .string(long)), ("value", .string(text))]))
            }
            return date
        }
    }
}

extension Option where Value == TimeSpan? {
    /// A duration in the syntax of every duration option (`DurationText`) within `range` seconds, its days kept
    /// as calendar days (`1d` is the same wall-clock time tomorrow, across a DST change).
    static func span(_ long: String, help: String, range: ClosedRange<Int64>) -> Option {
        .converted(.duration(long, help: help, range: range)) { text in
            guard let parts = DurationText.parts(text), range.contains(parts.totalSeconds) else {
                throw DurationText.invalid(text, option: long, range: range)
            }
            return TimeSpan(parts)
        }
    }
}

extension Option where Value == [String] {
    /// Repeatable tags, `a,b` adding both; each is checked (one word), repeats are dropped, order kept.
    static func tags(_ long: String, short: Character? = nil, help: String) -> Option {
        .convertedValues(.value(long, short: short, "TAG", help: help, repeatable: true)) { values in
            var result: [String] = []
            for value in values {
                for tag in value.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
                    try TaskRecord.validateTag(tag)
                    if !result.contains(tag) { result.append(tag) }
                }
            }
            return result
        }
    }
}

extension Option where Value == NotesInput? {
    static func notes(help: String) -> Option {
        .converted(.value("notes", short: "n", "TEXT", help: help)) { $0 == "-" ? .standardInput : .text($0) }
    }
}

extension Option where Value == InterchangeFormat? {
    /// `--format`; the names are spelled out in `InterchangeFormat.names` (no key-path map on every start).
    /// The parser has checked the value against them, and there is no environment or profile source.
    static func format(help: String) -> Option {
        .converted(.value("format", short: "f", "FORMAT", help: help, choices: InterchangeFormat.names)) { text in
            try InterchangeFormat.named(text)
        }
    }
}

extension Option where Value == InterchangeFormat {
    static func format(help: String, default defaultValue: InterchangeFormat) -> Option {
        let optional = Option<InterchangeFormat?>.converted(
            .value(
                "format", short: "f", "FORMAT", help: help, default: defaultValue.rawValue,
                choices: InterchangeFormat.names)
        ) { text in try InterchangeFormat.named(text) }
        return Option(spec: optional.spec) { arguments in try arguments[optional] ?? defaultValue }
    }
}

extension InterchangeFormat {
    /// The format by name; the parser has checked a flag's value against the names already.
    static func named(_ text: String) throws -> InterchangeFormat {
        guard let format = InterchangeFormat(rawValue: text) else {
            throw StarlineError(
                .usage, "invalid value '\(text)' for --format (choose from \(InterchangeFormat.names.joined(separator: ", ")))",
                details: .object([("option", .string("format")), ("value", .string(text))]))
        }
        return format
    }
}

extension Option where Value == String? {
    /// `--recur PERIOD` (`Recurrence`): kept as typed, once it is known to be a period.
    static let recur = Option<String?>.converted(
        .value(
            "recur", "PERIOD",
            help: """
                Repeat: when the task is done its next instance is added, due one period on (daily, weekdays, weekly, \
                biweekly, monthly, quarterly, yearly, 3d, 2w, 6mo, 1y, P1M). Needs a due date.
                """)
    ) { text in
        guard Recurrence(parsing: text) != nil else {
            throw StarlineError(
                .usage,
                "invalid period '\(text)' for --recur; use daily, weekdays, weekly, biweekly, monthly, quarterly, yearly, or a count with d, w, mo, q or y (3d, 2w, 6mo)",
                details: .object([("option", .string("recur")), ("value", .string(text))]))
        }
        return text.trimmingSpaces
    }
}
