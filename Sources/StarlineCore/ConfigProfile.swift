/// One profile of `config.json`. Values are kept as strings so they resolve exactly like flags
/// and environment variables (precedence: flag > environment > profile > default).
public struct ConfigProfile: Sendable {
    public var name: String
    public var settings: [String: String]
    /// The directory of the file the profile came from: a relative path in a profile (`caBundle`) means a
    /// file beside it, never one in whatever directory the tool happens to run in.
    public var directory: String?

    public init(name: String, settings: [String: String], directory: String? = nil) {
        self.name = name
        self.settings = settings
        self.directory = directory
    }

    public func value(_ key: String) -> String? { settings[key] }

    /// The value of a key that names a file: an absolute path as it is, a relative one resolved against the
    /// profile's directory (nil when the profile has none to resolve it against).
    public func path(_ key: String) -> String? {
        guard let value = settings[key], !value.isEmpty else { return nil }
        if value.hasPrefix("/") { return value }
        guard let directory else { return nil }
        return directory + "/" + value
    }

    /// Loads `--profile NAME` (or `defaultProfile`, or `default`) from the config file. A missing file
    /// is no configuration; a malformed file, or a profile asked for by name that does not exist, is a
    /// usage error (exit 2) naming the file.
    public static func load(path: String, requested: String?) throws -> ConfigProfile? {
        let bytes: [UInt8]
        do {
            // It decides whom the tool trusts (the API a token is sent to, the CA bundle): owned by root or by
            // us and writable by nobody else, checked on the descriptor read (INSECURE_PERMISSIONS). A profile
            // is a few kilobytes; 1 MiB bounds a hostile one.
            guard let b = try AtomicFile.read(path, what: "configuration file", trust: .trustDeciding, maxBytes: 1 << 20) else {
                if let requested { throw StarlineError(.config, "profile '\(requested)' not found: \(path) does not exist") }
                return nil
            }
            bytes = b
        } catch let error as StarlineError where error.code == .storage {
            throw StarlineError(.config, "cannot read configuration \(path): \(error.message)")
        }
        let root: JSON
        do { root = try JSON.parse(bytes) } catch let error as StarlineError {
            throw StarlineError(.config, "malformed configuration \(path): \(error.message)", details: .object([("file", .string(path))]))
        }
        guard case .object = root else { throw StarlineError(.config, "malformed configuration \(path): expected an object") }
        let name = requested ?? root["defaultProfile"]?.stringValue ?? "default"
        guard let profile = root["profiles"]?[name], let members = profile.objectValue else {
            if requested != nil || root["defaultProfile"] != nil {
                let known = root["profiles"]?.objectValue?.map(\.0) ?? []
                var message = "profile '\(name)' not found in \(path)"
                if let near = Suggestion.nearest(to: name, in: known) { message += "; did you mean '\(near)'?" }
                throw StarlineError(.config, message, details: .object([("profile", .string(name)), ("file", .string(path))]))
            }
            return nil
        }
        var settings: [String: String] = [:]
        for (key, value) in members {
            switch value {
            case .string(let s): settings[key] = s
            case .int(let i): settings[key] = String(i)
            case .double(let d): settings[key] = String(d)
            case .number(let text): settings[key] = text
            case .bool(let b): settings[key] = b ? "true" : "false"
            default:
                throw StarlineError(.config, "malformed configuration \(path): profiles.\(name).\(key) must be a string, number or boolean")
            }
        }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        return ConfigProfile(name: name, settings: settings, directory: directory)
    }
}
