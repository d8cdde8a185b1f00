import StarlineCore

/// One HTTP request as the application sees it.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path as MHD delivers it (percent-decoded), without the query.
    public var path: String
    public var query: [(String, String)]
    /// Header names lowercased.
    public var headers: [String: String]
    public var body: [UInt8]
    public var clientAddress: String
    public var bodyTooLarge: Bool

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
    public func queryValue(_ name: String) -> String? { query.first { $0.0 == name }?.1 }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// Close the connection without answering (an injected "reset" fault).
    public var dropConnection = false
    /// Wait this long after the handler ran before answering (an injected "delay" fault).
    public var delayMilliseconds = 0

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func json(_ status: Int, _ value: JSON) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: Array((value.serialized() + "\n").utf8))
    }

    /// `{"error":{"code":…,"message":…}}`
    public static func error(_ status: Int, _ code: String, _ message: String) -> HTTPResponse {
        json(status, .object([("error", .object([("code", .string(code)), ("message", .string(message))]))]))
    }

    /// RFC 6749 §5.2 error: `{"error":"invalid_grant","error_description":"…"}`
    public static func oauthError(_ status: Int, _ error: String, _ description: String) -> HTTPResponse {
        var r = json(status, .object([("error", .string(error)), ("error_description", .string(description))]))
        r.headers.append(("Cache-Control", "no-store"))
        return r
    }

    /// An HTML page that loads nothing and cannot be framed. Its forms may post only to this server, and
    /// `formRedirect` names the one place a form's answer may redirect to: CSP's form-action also governs
    /// the redirects after the submission (CSP Level 3 §6.4.1: "navigation request … redirect"), and
    /// Chromium enforces that, so a sign-in form whose 302 goes to the app's redirect URI must list that
    /// URI's origin. A source that is not plainly an origin or a scheme is left out (the redirect is then
    /// blocked) rather than let into the header.
    public static func html(_ status: Int, _ text: String, formRedirect: String? = nil) -> HTTPResponse {
        var formAction = "form-action 'self'"
        if let source = formRedirect.flatMap(cspSource) { formAction += " " + source }
        return HTTPResponse(
            status: status,
            headers: [
                ("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store"),
                ("X-Frame-Options", "DENY"),
                ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; \(formAction)")
            ],
            body: Array(text.utf8))
    }

    /// The CSP source expression that allows exactly `uri`'s origin: `http://127.0.0.1:PORT` for a loopback
    /// redirect, `starline-app:` for a custom scheme (a scheme-source, CSP §2.3.1).
    static func cspSource(_ uri: String) -> String? {
        let schemeCharacters = Set("abcdefghijklmnopqrstuvwxyz0123456789+-.")
        if let url = WebURL(uri), url.scheme == "http" || url.scheme == "https" {
            let host = url.host
            let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789.-[]:")
            guard host.lowercased().allSatisfy(allowed.contains) else { return nil }
            return "\(url.scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
        }
        guard let colon = uri.firstIndex(of: ":"), colon != uri.startIndex,
            uri[..<colon].lowercased().allSatisfy(schemeCharacters.contains)
        else { return nil }
        return String(uri[...colon])
    }

    public static func redirect(_ location: String) -> HTTPResponse {
        HTTPResponse(status: 302, headers: [("Location", location), ("Cache-Control", "no-store")])
    }
}
