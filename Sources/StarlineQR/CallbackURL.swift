import StarlineCore

/// The parsed form of a callback URL's query, from which a payload is classified and redacted — once,
/// so what `code` says and what `text` shows can never disagree (W6: a percent-encoded name
/// such as `%63ode` is the same parameter as `code`, and is redacted as `code` is).
struct CallbackQuery {
    /// One `name=value` pair: the raw text (kept as is when not redacted) and the decoded name and value.
    struct Item {
        var raw: Substring
        var name: String
        var value: String
    }

    /// The parameters a callback is read from; each may appear at most once.
    static let callbackNames: Set<String> = ["code", "state", "error"]

    var items: [Item]

    /// Parses `query` as application/x-www-form-urlencoded: pairs split on `&`, names and values
    /// percent-decoded (`+` is a space).
    init(_ query: Substring) {
        items = query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            if let eq = pair.firstIndex(of: "=") {
                return Item(
                    raw: pair, name: PercentEncoding.decodeForm(pair[..<eq]),
                    value: PercentEncoding.decodeForm(pair[pair.index(after: eq)...]))
            }
            return Item(raw: pair, name: PercentEncoding.decodeForm(pair), value: "")
        }
    }

    func value(_ name: String) -> String? { items.first { $0.name == name }?.value }

    /// The callback parameters that appear more than once: a callback with two codes is ambiguous
    /// (which one would a client redeem?), so it is refused rather than guessed at.
    var duplicatedCallbackNames: [String] {
        var seen: Set<String> = [], duplicated: [String] = []
        for item in items where Self.callbackNames.contains(item.name) {
            if !seen.insert(item.name).inserted, !duplicated.contains(item.name) { duplicated.append(item.name) }
        }
        return duplicated
    }

    /// The query with every pair whose decoded name is `code` replaced by `code=redacted`.
    var redacted: String {
        items.map { $0.name == "code" ? "code=redacted" : String($0.raw) }.joined(separator: "&")
    }
}

/// Whether a URL host names this machine, in any spelling a resolver or URL parser maps to loopback:
/// `localhost` (and `*.localhost`, RFC 6761, with or without a trailing dot), any IPv4 literal in
/// 127.0.0.0/8 written the way inet_aton and WHATWG parsers accept it (`127.1`, `0x7f.0.0.1`,
/// `2130706433`), and IPv6 `::1` or `::ffff:127.x.x.x` however it is written.
enum LoopbackHost {
    static func contains(_ host: String) -> Bool {
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        if name.hasPrefix("[") && name.hasSuffix("]") {
            guard let bytes = ipv6(name.dropFirst().dropLast()) else { return false }
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
            return bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] && bytes[12] == 127
        }
        return ipv4(name).map { $0 >> 24 == 127 } ?? false
    }

    /// inet_aton's forms: 1 to 4 parts, each decimal, `0x` hex or leading-zero octal; the last part
    /// fills the remaining bytes.
    static func ipv4(_ text: String) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var values: [UInt64] = []
        for part in parts {
            let lower = part.lowercased()
            let value: UInt64?
            if lower.hasPrefix("0x") {
                value = lower.count == 2 ? 0 : UInt64(lower.dropFirst(2), radix: 16)
            } else if lower.count > 1, lower.hasPrefix("0") {
                value = UInt64(lower.dropFirst(), radix: 8)
            } else {
                value = lower.isEmpty ? nil : UInt64(lower, radix: 10)
            }
            guard let value, value <= UInt64(UInt32.max) else { return nil }
            values.append(value)
        }
        var result: UInt64 = 0
        for (i, v) in values.dropLast().enumerated() {
            guard v <= 255 else { return nil }
            result |= v << (8 * (3 - UInt64(i)))
        }
        let last = values.last!
        let remaining = 8 * UInt64(5 - values.count)
        guard remaining >= 64 || last < (1 << remaining) else { return nil }
        return UInt32(result | last)
    }

    /// The 16 bytes of an IPv6 literal (no zone), with `::` and a trailing dotted IPv4 part.
    static func ipv6(_ text: Substring) -> [UInt8]? {
        guard !text.contains("%") else { return nil }
        let halves = text.components("::")
        guard halves.count <= 2 else { return nil }
        func groups(_ s: Substring) -> [UInt16]? {
            if s.isEmpty { return [] }
            var out: [UInt16] = []
            let fields = s.split(separator: ":", omittingEmptySubsequences: false)
            for (i, field) in fields.enumerated() {
                if i == fields.count - 1, field.contains(".") {
                    guard let v4 = ipv4(String(field)), field.split(separator: ".").count == 4 else { return nil }
                    out += [UInt16(v4 >> 16), UInt16(v4 & 0xFFFF)]
                } else {
                    guard (1...4).contains(field.count), let g = UInt16(field, radix: 16) else { return nil }
                    out.append(g)
                }
            }
            return out
        }
        guard let head = groups(halves[0]) else { return nil }
        var all = head
        if halves.count == 2 {
            guard let tail = groups(halves[1]), head.count + tail.count <= 7 else { return nil }
            all += [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        }
        guard all.count == 8 else { return nil }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}

extension Substring {
    /// Splits on a separator string (no Foundation).
    fileprivate func components(_ separator: String) -> [Substring] {
        var parts: [Substring] = []
        var rest = self[...]
        while let range = rest.firstRange(of: separator) {
            parts.append(rest[..<range.lowerBound])
            rest = rest[range.upperBound...]
        }
        parts.append(rest)
        return parts
    }
}
