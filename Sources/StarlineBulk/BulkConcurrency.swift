import StarlineCore

/// `--parallel N|auto`: how many requests a bulk run keeps in flight (S16). `auto` (the default) starts at
/// `autoStart` and raises the number while that raises the throughput, up to `autoCeiling`
/// (`ConcurrencyTuner`), so one process keeps a near server and a far one equally busy; a number fixes the
/// most in flight (429s still halve it for a while).
public enum BulkConcurrency: Sendable, Equatable, CustomStringConvertible {
    case auto
    case fixed(Int)

    public static let autoStart = 8
    public static let autoCeiling = 64
    public static let range = 1...128

    public init(parsing text: String) throws(StarlineError) {
        if text == "auto" {
            self = .auto
            return
        }
        guard let n = Int(text), Self.range.contains(n) else {
            throw StarlineError(
                .usage,
                "invalid value '\(text.prefix(40))' for --parallel: expected auto or a number from \(Self.range.lowerBound) to \(Self.range.upperBound)",
                details: .object([("option", .string("parallel")), ("value", .string(String(text.prefix(40))))]))
        }
        self = .fixed(n)
    }

    /// The most in flight (threads and connections).
    public var ceiling: Int {
        switch self {
        case .auto: Self.autoCeiling
        case .fixed(let n): n
        }
    }

    /// Where an adapting run starts; nil when fixed.
    public var start: Int? {
        switch self {
        case .auto: Self.autoStart
        case .fixed: nil
        }
    }

    public var description: String {
        switch self {
        case .auto: "auto"
        case .fixed(let n): String(n)
        }
    }
}
