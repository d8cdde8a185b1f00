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

    public init(environment: [String: String]) {
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

    static func homeDirectory(_ environment: [String: String]) -> String {
        if let h = environment["HOME"], h.hasPrefix("/") { return h }
        if let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir { return String(cString: dir) }
        return "/"
    }
}

/// The process environment as a dictionary (read once).
public enum ProcessEnvironment {
    public static func current() -> [String: String] {
        var result: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let s = String(cString: entry)
            if let eq = s.firstIndex(of: "=") { result[String(s[..<eq])] = String(s[s.index(after: eq)...]) }
            p += 1
        }
        return result
    }
}
