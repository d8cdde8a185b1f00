/// The key under which bookmarks and recent visits are deduplicated. The URL as given is always kept
/// beside it; only comparison uses the normalised form.
///
/// Rules: scheme and host lowercased (the scheme itself is kept: http and https differ), a trailing
/// dot of the host dropped, the default port of the scheme dropped, the fragment dropped, `.` and `..`
/// path segments resolved, an empty path made `/`, a trailing slash of any other path dropped,
/// percent-escapes uppercased, tracking parameters (`utm_*`, `fbclid`, `gclid`, … see
/// `trackingParameters`) and empty parameters removed from the query, whose order is kept; an empty
/// query is dropped. User info, path and query case are kept.
public enum URLNormalizer {
    /// Query parameters that only identify a campaign or click, compared case-insensitively.
    public static let trackingParameters: Set<String> = [
        "fbclid", "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "twclid", "ttclid",
        "igshid", "mc_cid", "mc_eid", "_ga", "_gl", "_hsenc", "_hsmi", "mkt_tok", "li_fat_id", "s_cid",
        "srsltid", "oly_anon_id", "oly_enc_id", "vero_id", "rb_clickid", "epik"
    ]
    static let defaultPorts: [String: String] = ["http": "80", "https": "443", "ftp": "21", "ws": "80", "wss": "443"]

    public static func isTracking(_ name: Substring) -> Bool {
        let lower = name.lowercased()
        return lower.hasPrefix("utm_") || trackingParameters.contains(lower)
    }

    /// The normalised form, or nil when `url` is not an absolute `scheme://host…` URL (or `file:///…`).
    public static func normalize(_ url: String) -> String? {
        let text = Substring(url)
        guard !text.isEmpty, !text.contains(where: { $0.isWhitespace || ($0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false) }),
            let colon = text.firstIndex(of: ":")
        else { return nil }
        let scheme = text[..<colon].lowercased()
        guard let first = scheme.first, first.isASCII, first.isLetter,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") })
        else { return nil }
        var rest = text[text.index(after: colon)...]
        guard rest.hasPrefix("//") else { return nil }
        rest = rest.dropFirst(2)

        // Fragment, then query, then authority / path.
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var query: Substring? = nil
        if let q = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: q)...]
            rest = rest[..<q]
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let path = rest[slash...]

        var userInfo = ""
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            userInfo = String(authority[...at])
            hostPort = authority[authority.index(after: at)...]
        }
        var host = hostPort
        var port: Substring? = nil
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { return nil }
            host = hostPort[...close]
            let after = hostPort[hostPort.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                port = after.dropFirst()
            }
        } else if let c = hostPort.lastIndex(of: ":") {
            host = hostPort[..<c]
            port = hostPort[hostPort.index(after: c)...]
        }
        if let p = port {
            guard p.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            if p.isEmpty { port = nil }
        }
        var hostText = host.lowercased()
        if hostText.hasSuffix("."), hostText.count > 1 { hostText.removeLast() }
        if hostText.isEmpty, scheme != "file" { return nil }

        var out = scheme + "://" + userInfo + hostText
        if let p = port {
            // 0443 is 443 too.
            let digits = p.drop { $0 == "0" }
            let canonical = digits.isEmpty ? "0" : String(digits)
            if defaultPorts[scheme] != canonical { out += ":" + canonical }
        }
        out += normalizePath(path)
        if let query {
            let kept = query.split(separator: "&", omittingEmptySubsequences: true).filter { pair in
                let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
                return !name.isEmpty && !isTracking(name)
            }
            if !kept.isEmpty { out += "?" + kept.map { uppercaseEscapes($0) }.joined(separator: "&") }
        }
        return out
    }

    /// Dot segments removed (RFC 3986 section 5.2.4), `/` for an empty path, no trailing slash otherwise.
    static func normalizePath(_ path: Substring) -> String {
        guard !path.isEmpty else { return "/" }
        var output: [Substring] = []
        let segments = path.splitAtScalar("/").dropFirst()  // leading ""
        for (i, segment) in segments.enumerated() {
            let last = i == segments.count - 1
            switch segment {
            case ".":
                if last { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if last { output.append("") }
            default:
                output.append(segment)
            }
        }
        while output.count > 0, output.last == "" { output.removeLast() }
        if output.isEmpty { return "/" }
        return "/" + output.map { uppercaseEscapes($0) }.joined(separator: "/")
    }

    /// `%2f` → `%2F`: percent-escapes are case-insensitive (RFC 3986 section 6.2.2.1).
    static func uppercaseEscapes(_ s: Substring) -> String {
        guard s.contains("%") else { return String(s) }
        var chars = Array(s)
        var i = 0
        while i < chars.count {
            if chars[i] == "%", i + 2 < chars.count, chars[i + 1].isHexDigit, chars[i + 2].isHexDigit {
                chars[i + 1] = Character(chars[i + 1].uppercased())
                chars[i + 2] = Character(chars[i + 2].uppercased())
                i += 3
            } else {
                i += 1
            }
        }
        return String(chars)
    }
}
