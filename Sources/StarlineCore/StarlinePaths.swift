#if canImport(Glibc)
import Glibc
#endif

/// Where the suite keeps its files (README, Environment and files): XDG base directories, or everything under
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
        self.init(
            config: xdg("XDG_CONFIG_HOME", "/.config") + "/starline", state: state,
            data: xdg("XDG_DATA_HOME", "/.local/share") + "/starline", runtime: runtime)
    }

    /// `$HOME`; when it is unset (or not absolute), the user's entry in /etc/passwd; failing that, "/".
    static func homeDirectory(_ environment: Environment, passwdFile: String = "/etc/passwd", uid: UInt32 = getuid()) -> String {
        if let h = environment["HOME"], h.hasPrefix("/") { return h }
        return passwdHomeDirectory(uid: uid, passwdFile: passwdFile) ?? "/"
    }

    /// The home directory of `uid` in a passwd(5) file (`name:password:UID:GID:GECOS:directory:shell`),
    /// first matching entry, as the NSS `files` source reads it; nil when the file, the entry or its
    /// directory is missing.
    ///
    /// A fallback for when $HOME is unset (`env -i`, some cron and service setups). Not getpwuid: sl-tasks
    /// is a fully static executable, and a static glibc cannot load the NSS modules getpwuid goes through
    /// (GNU ld says so at link time: "Using 'getpwuid' in statically linked applications requires at runtime
    /// the shared libraries from the glibc version used for linking"; lld links without a word). So a user
    /// who exists only in another NSS database (LDAP, systemd-homed, …) and has no $HOME gets "/" — such a
    /// user sets HOME, or STARLINE_HOME.
    static func passwdHomeDirectory(uid: UInt32, passwdFile: String) -> String? {
        guard let bytes = try? FileBytes.read(passwdFile) else { return nil }
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: ":"), maxSplits: 6, omittingEmptySubsequences: false)
            guard fields.count == 7, line.first != UInt8(ascii: "#"),
                UInt32(String(decoding: fields[2], as: UTF8.self)) == uid
            else { continue }
            let directory = String(decoding: fields[5], as: UTF8.self)
            return directory.isEmpty ? nil : directory
        }
        return nil
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
