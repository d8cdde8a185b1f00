/// A validated API or chat base URL (W4): `https://`, or `http://` on a loopback host
/// (127.0.0.0/8, `[::1]`, `localhost`); no user info, query or fragment. Applies to every
/// override — flag, environment or configuration — of both base URLs.
public struct BaseURL: Sendable, Equatable, CustomStringConvertible {
    public let scheme: String
    public let host: String
    /// The port when it is not the scheme's default one.
    public let port: Int?
    /// The path prefix without a trailing slash ("" or "/chat").
    public let path: String

    public var description: String { origin + path }
    public var origin: String { "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "") }

    /// Validates `text`; `name` says which setting it came from, for the error message.
    public init(validating text: String, name: String = "base URL") throws {
        func reject(_ why: String) -> StarlineError {
            StarlineError(
                .invalidURL, "rejected \(name) '\(BaseURL.redactingUserInfo(text))': \(why)",
                details: .object([("setting", .string(name)), ("reason", .string(why))]))
        }
        guard let url = WebURL(text) else { throw reject("not an absolute URL") }
        guard url.scheme == "https" || url.scheme == "http" else { throw reject("the scheme must be https, or http on a loopback host") }
        guard url.hasAuthority, !url.host.isEmpty else { throw reject("it has no host") }
        if url.userInfo != nil || url.host.contains("@") { throw reject("user info ('@') is not allowed") }
        if url.query != nil { throw reject("a query is not allowed") }
        if url.fragment != nil { throw reject("a fragment is not allowed") }
        guard url.hostIsWellFormed, !url.host.contains("%") else { throw reject("the host is not a valid host name") }
        if url.scheme == "http", !url.hostIsLoopback {
            throw reject("http is only allowed on a loopback host (127.0.0.0/8, [::1], localhost); use https")
        }
        if url.port == 0 { throw reject("port 0 is not a valid port") }
        var path = url.path
        while path.hasSuffix("/") { path.removeLast() }
        let segments = path.splitAtScalar("/").dropFirst()
        if segments.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) { throw reject("the path has empty or dot segments") }
        if path.contains("%") { throw reject("percent-encoded paths are not allowed") }
        scheme = url.scheme
        host = url.host
        port = url.port == (url.scheme == "https" ? 443 : 80) ? nil : url.port
        self.path = path
    }

    /// True when `url` is on this base's scheme, host and port (default ports compare equal).
    public func sameOrigin(_ url: WebURL) -> Bool {
        url.hasAuthority && url.scheme == scheme && url.host == host && url.effectivePort == (port ?? (scheme == "https" ? 443 : 80))
    }

    public static let defaultAPI = "https://account.thestarline.cn"
    public static let defaultChat = "https://chat.thestarline.cn"

    /// Error messages must not echo credentials someone put in a URL.
    static func redactingUserInfo(_ text: String) -> String {
        let chars = Array(text)
        var i = 0
        while i + 2 < chars.count, !(chars[i] == ":" && chars[i + 1] == "/" && chars[i + 2] == "/") { i += 1 }
        guard i + 2 < chars.count else { return text }
        let start = i + 3
        var end = start
        while end < chars.count, !"/?#".contains(chars[end]) { end += 1 }
        guard let at = chars[start..<end].lastIndex(of: "@") else { return text }
        return String(chars[..<start]) + "…" + String(chars[at...])
    }
}
