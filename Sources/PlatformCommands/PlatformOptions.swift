import StarlineCore
import StarlinePlatform

/// The global options of every platform tool, typed and read in one place.
public struct PlatformOptions: Sendable {
    public static let appId = Option<String>.string(
        "app-id", "ID", help: "App ID of the platform application.",
        default: "workbench", env: "STARLINE_APP_ID", configKey: "appId")
    public static let service = Option<String>.string(
        "service", "NAME", help: "Service name that separates stored sessions of host environments.",
        default: "default", env: "STARLINE_SERVICE", configKey: "service")
    public static let timeout = Option<Duration>.duration(
        "timeout", help: "Network timeout.", default: 30, range: 1...3600,
        env: "STARLINE_TIMEOUT", configKey: "timeout")
    public static let events = Option<String?>.string(
        "events", "FILE", help: "Append sessionChanged and error events as JSON Lines to FILE (- for stdout).",
        completion: .file(extensions: ["jsonl"]))

    /// These options' declarations in help order: the base URLs (`--api`, then a tool's own), `--app-id`
    /// unless the tool is bound to one app (sl-chat: W4), then the rest. Every platform tool's spec takes its
    /// list from here, so each option is declared once.
    public static func specs(baseURLs: [OptionSpec] = [StandardOptions.api], withAppId: Bool = true) -> [OptionSpec] {
        baseURLs + (withAppId ? [appId.spec] : []) + [service.spec, timeout.spec, events.spec]
    }

    public var api: BaseURL
    public var appId: String
    public var service: String
    public var timeout: Int
    public var eventsPath: String?

    public init(_ arguments: ParsedArguments) throws {
        try self.init(arguments, appId: try arguments[Self.appId])
    }

    /// For a tool bound to one app, without `--app-id` (sl-chat always uses `workbench`, W4).
    public init(_ arguments: ParsedArguments, appId: String) throws {
        api = try arguments[StandardOptions.apiBase]
        self.appId = appId
        service = try arguments[Self.service]
        timeout = Int(try arguments[Self.timeout].components.seconds)
        eventsPath = try arguments[Self.events]
    }
}
