#if canImport(Glibc)
import Glibc
#endif

/// Where the suite keeps its files (DESIGN section 3): XDG base directories, or everything under
/// `STARLINE_HOME` (tests use it).
public struct StarlinePaths: Sendable, Equatable {
    public var config: String
    public var state: String
    public var data: String
    public var runtime: String

    public var configFile: String { config + "/config.json" }

    public init(config: String, state: String, data: String, runtime: String) {
        self.config = config
        self.state = state
        self.data = data
        self.runtime = runtime
    }

    public init(environment: Environment) {
        if let home = environment["STARLINE_HOME"], !home.isEmpty {
            let base = home.hasSuffix("/") && home.count > 1 ? String(home.dropLast()) : home
            self.init(config: base + "/config", state: base + "/state", data: base + "/data", runtime: base + "/run")
            return
        }
        let home = StarlinePaths.homeDirectory(environment)
        // "All paths set in these environment variables must be absolute. If an implementation encounters a
        // relative path in any of these variables it should consider the path invalid and ignore it."
        func xdg(_ name: String, _ fallback: String) -> String {
            if let v = environment[name], v.hasPrefix("/") { return v }
            return home + fallback
        }
        let state = xdg("XDG_STATE_HOME", "/.local/state") + "/starline"
        let runtime: String
        if let r = environment["XDG_RUNTIME_DIR"], r.hasPrefix("/") { runtime = r + "/starline" } else { runtime = state + "/run" }
        self.init(config: xdg("XDG_CONFIG_HOME", "/.config") + "/starline", state: state,
                  data: xdg("XDG_DATA_HOME", "/.local/share") + "/starline", runtime: runtime)
    }

    static func homeDirectory(_ environment: Environment) -> String {
        if let h = environment["HOME"], h.hasPrefix("/") { return h }
        if let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir { return String(cString: dir) }
        return "/"
    }
}

/// Environment variables, read from the process on demand with getenv (building a dictionary of the
/// whole environment showed up in start-up profiles), or from a fixed table in tests.
public struct Environment: Sendable, ExpressibleByDictionaryLiteral {
    private let values: [String: String]?

    /// The variables of this process.
    public static let process = Environment(values: nil)

    private init(values: [String: String]?) { self.values = values }
    public init(_ values: [String: String]) { self.values = values }
    public init(dictionaryLiteral elements: (String, String)...) {
        values = Dictionary(elements, uniquingKeysWith: { $1 })
    }

    public subscript(_ name: String) -> String? {
        if let values { return values[name] }
        return getenv(name).map { String(cString: $0) }
    }
}
