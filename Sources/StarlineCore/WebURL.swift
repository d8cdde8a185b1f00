/// A minimal RFC 3986 parse of an absolute URL into its parts, without normalising anything away.
/// Foundation's URL is avoided on purpose: it accepts and "repairs" inputs that a security check
/// must reject (user info tricks, backslashes, whitespace).
public struct WebURL: Sendable, Equatable {
    public var scheme: String  // lowercased
    public var userInfo: String?
    public var host: String  // lowercased; IPv6 literals keep their brackets
    public var port: Int?
    public var path: String
    public var query: String?
    public var fragment: String?
    public var hasAuthority: Bool

    public init?(_ text: String) {
        // Control characters, spaces and backslashes have no place in a URL we accept.
        guard !text.isEmpty, !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0 == "\\" || $0.value == 0x7F }) else {
            return nil
        }
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let scheme = text[..<colon]
        guard let first = scheme.first, first.isASCII, first.isLetter,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") })
        else { return nil }
        self.scheme = scheme.lowercased()
        var rest = text[text.index(after: colon)...]
        if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        }
        if let q = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: q)...])
            rest = rest[..<q]
        }
        if rest.hasPrefix("//") {
            hasAuthority = true
            rest = rest.dropFirst(2)
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            var authority = rest[..<end]
            path = String(rest[end...])
            if let at = authority.lastIndex(of: "@") {
                userInfo = String(authority[..<at])
                authority = authority[authority.index(after: at)...]
            }
            var hostPart = authority
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else { return nil }
                hostPart = authority[...close]
                let after = authority[authority.index(after: close)...]
                if !after.isEmpty {
                    guard after.hasPrefix(":") else { return nil }
                    guard let p = WebURL.port(after.dropFirst()) else { return nil }
                    port = p
                }
            } else if let c = authority.lastIndex(of: ":") {
                hostPart = authority[..<c]
                // An empty port ("host:") is legal in RFC 3986 but only ever a mistake or a trick here.
                guard let p = WebURL.port(authority[authority.index(after: c)...]) else { return nil }
                port = p
            }
            host = hostPart.lowercased()
        } else {
            hasAuthority = false
            host = ""
            path = String(rest)
        }
    }

    private static func port(_ digits: Substring) -> Int? {
        guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(digits), n <= 65535 else {
            return nil
        }
        return n
    }

    /// The port, or the scheme's default one.
    public var effectivePort: Int? {
        port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil)
    }

    /// Query items in order, decoded as application/x-www-form-urlencoded ('+' is a space).
    public var queryItems: [(name: String, value: String)] {
        guard let query, !query.isEmpty else { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            if let eq = pair.firstIndex(of: "=") {
                return (PercentEncoding.decodeForm(pair[..<eq]), PercentEncoding.decodeForm(pair[pair.index(after: eq)...]))
            }
            return (PercentEncoding.decodeForm(pair), "")
        }
    }

    public func queryValue(_ name: String) -> String? { queryItems.first { $0.name == name }?.value }

    /// True for a host name made of LDH labels (ASCII letters, digits, hyphens), or an IP literal.
    public var hostIsWellFormed: Bool {
        if host.hasPrefix("[") {
            return host.count > 2 && host.dropFirst().dropLast().allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        }
        guard !host.isEmpty, host.count <= 253 else { return false }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        return labels.allSatisfy { label in
            !label.isEmpty && label.count <= 63 && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
    }

    /// 127.0.0.0/8 written as a strict dotted quad, `[::1]` or `localhost` (W4).
    public var hostIsLoopback: Bool {
        if host == "localhost" || host == "[::1]" { return true }
        return IPv4.parse(host).map { $0.0 == 127 } ?? false
    }
}

enum IPv4 {
    /// Strict dotted-decimal only: no octal, hex, shortened or zero-padded forms (`127.1`, `0x7f.0.0.1`).
    static func parse(_ s: String) -> (UInt8, UInt8, UInt8, UInt8)? {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var octets: [UInt8] = []
        for p in parts {
            guard !p.isEmpty, p.count <= 3, p.allSatisfy({ $0.isASCII && $0.isNumber }),
                !(p.count > 1 && p.first == "0"), let v = UInt8(p)
            else { return nil }
            octets.append(v)
        }
        return (octets[0], octets[1], octets[2], octets[3])
    }
}

public enum PercentEncoding {
    /// Decodes %XX escapes and '+' as space; invalid escapes are kept literally.
    public static func decodeForm<S: StringProtocol>(_ s: S) -> String { decode(s, plusIsSpace: true) }

    /// Decodes %XX escapes ('+' stays '+', as in a URL path); invalid escapes are kept literally.
    public static func decode<S: StringProtocol>(_ s: S) -> String { decode(s, plusIsSpace: false) }

    private static func decode<S: StringProtocol>(_ s: S, plusIsSpace: Bool) -> String {
        var bytes: [UInt8] = []
        var it = Array(s.utf8)[...]
        while let b = it.popFirst() {
            if plusIsSpace, b == UInt8(ascii: "+") {
                bytes.append(0x20)
            } else if b == UInt8(ascii: "%"), it.count >= 2, let h = hex(it[it.startIndex]), let l = hex(it[it.startIndex + 1]) {
                bytes.append(h << 4 | l)
                it = it.dropFirst(2)
            } else {
                bytes.append(b)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Encodes everything but RFC 3986 unreserved characters.
    public static func encode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%"
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(b >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(b & 15)]))
            }
        }
        return out
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - 55
        default: nil
        }
    }
}

/// Text put into HTML: the five characters that could end an element or an attribute value escaped
/// (the OWASP rule for element content and quoted attributes).
public enum HTMLText {
    public static func escape(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
