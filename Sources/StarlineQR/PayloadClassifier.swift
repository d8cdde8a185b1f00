import StarlineCore

/// What a scanned payload is, in the order W6 prescribes: an identity (login) callback first, then a
/// friend link, then any web URL, then plain text — so a login callback is never treated as ordinary
/// scanned content. A `part` is one symbol of a structured-append sequence whose others were not found: a
/// fragment, never classified (the start of a friend link is not a friend link).
public enum PayloadKind: String, Sendable, CaseIterable {
    case authCallback, friendLink, url, text, binary, part
}

public struct ClassifiedPayload: Sendable {
    public var kind: PayloadKind
    /// The decoded text, with an auth code replaced by "redacted" unless secrets are shown; nil when not UTF-8.
    public var text: String?
    /// Kind-specific fields in output order (`appId`, `code`, `state`, `error` / `code`, `url` / `url`).
    public var fields: [(String, JSON)]
    /// False for auth callbacks without --show-secrets: the raw bytes would reveal the code.
    public var includesBytes: Bool
    /// The charset `text` was read in (`QRText.charsetName`); nil for binary.
    public var charset: String? = nil
}

public struct PayloadClassifier: Sendable {
    public let chatBase: BaseURL
    public let showSecrets: Bool

    public init(chatBase: BaseURL, showSecrets: Bool = false) {
        self.chatBase = chatBase
        self.showSecrets = showSecrets
    }

    /// The payload's kind, read from its text in the charset its ECI designators name, else in whichever fits
    /// (`QRText`: UTF-8, else Shift_JIS or ISO-8859-1 as ZXing guesses), so a URL or a friend link written by a
    /// Japanese encoder is one too.
    public func classify(_ bytes: [UInt8], designators: [QRSymbol.ECIDesignator] = []) -> ClassifiedPayload {
        guard let decoded = QRText.decode(bytes, designators: designators) else {
            return ClassifiedPayload(kind: .binary, text: nil, fields: [], includesBytes: true)
        }
        var payload = classify(text: decoded.text)
        payload.charset = decoded.charsetName
        return payload
    }

    /// One symbol of an incomplete structured-append sequence: its text (as `classify` reads it) and its place,
    /// and no kind but `part`.
    public func part(_ bytes: [UInt8], designators: [QRSymbol.ECIDesignator], _ place: QRSymbol.SequencePart) -> ClassifiedPayload {
        let decoded = QRText.decode(bytes, designators: designators)
        return ClassifiedPayload(
            kind: .part, text: decoded?.text,
            fields: [("sequence", .object([("index", .int(place.index)), ("count", .int(place.count))]))], includesBytes: true,
            charset: decoded?.charsetName)
    }

    func classify(text: String) -> ClassifiedPayload {
        let trimmed = text.trimmingWhitespace()
        if let url = WebURL(trimmed) {
            if let callback = authCallback(url, trimmed) { return callback }
            if let code = FriendLink.code(in: url, chatBase: chatBase) {
                return ClassifiedPayload(
                    kind: .friendLink, text: text,
                    fields: [("code", .string(code)), ("url", .string(FriendLink.url(code: code, chatBase: chatBase)))],
                    includesBytes: true)
            }
            if (url.scheme == "https" || url.scheme == "http"), url.hasAuthority, !url.host.isEmpty, url.hostIsWellFormed {
                // `url` as a friend link's record has it, so `jq -r .url` reads either kind.
                return ClassifiedPayload(kind: .url, text: text, fields: [("url", .string(trimmed))], includesBytes: true)
            }
        }
        return ClassifiedPayload(kind: .text, text: text, fields: [], includesBytes: true)
    }

    /// `starline-{appId}://auth/callback?…` or `http(s)://LOOPBACK[:PORT]/callback?…` (RFC 8252), where
    /// LOOPBACK is any spelling of this machine (`localhost`, `127.0.0.0/8`, `[::1]`, …: a code sent to
    /// any of them is a login code). The path is compared percent-decoded, like the query.
    func authCallback(_ url: WebURL, _ trimmed: String) -> ClassifiedPayload? {
        let appId: String?
        let path = PercentEncoding.decodeForm(url.path)
        if url.scheme.hasPrefix("starline-"), url.scheme.count > "starline-".count {
            guard url.hasAuthority, url.userInfo == nil, url.host == "auth", url.port == nil, path == "/callback" else { return nil }
            appId = String(url.scheme.dropFirst("starline-".count))
        } else if url.scheme == "http" || url.scheme == "https", url.hasAuthority, url.userInfo == nil,
            LoopbackHost.contains(url.host), path == "/callback"
        {
            appId = nil
        } else {
            return nil
        }
        let query = CallbackQuery(Substring(url.query ?? ""))
        // A fragment is no place for a code, but a look-alike could put one there: it is redacted too.
        let fragment = url.fragment.map { CallbackQuery(Substring($0)) }
        let hasCode = query.value("code") != nil || fragment?.value("code") != nil
        let duplicated = query.duplicatedCallbackNames
        var fields: [(String, JSON)]
        if duplicated.isEmpty {
            let code = query.value("code")
            fields = [
                ("appId", .optional(appId)), ("code", .optional(showSecrets ? code : code.map { _ in "redacted" })),
                ("state", .optional(query.value("state"))), ("error", .optional(query.value("error")))
            ]
        } else {
            // Refused, not guessed: which of two codes a client would redeem is exactly the ambiguity an
            // attacker wants. The record stays a callback (never ordinary content) but carries no code.
            fields = [
                ("appId", .optional(appId)), ("code", .null), ("state", .null), ("error", .null),
                ("invalid", .string("duplicate parameter: \(duplicated.joined(separator: ", "))"))
            ]
        }
        var text = trimmed
        if !showSecrets && hasCode {
            // Rebuilt from the parsed parts, so exactly the parameters read as `code` are hidden.
            // The part before the query is kept as written (WebURL splits at the first `#`, then `?`).
            let beforeFragment = trimmed.firstIndex(of: "#").map { trimmed[..<$0] } ?? trimmed[...]
            let head = beforeFragment.firstIndex(of: "?").map { beforeFragment[..<$0] } ?? beforeFragment
            text = String(head) + (url.query.map { _ in "?" + query.redacted } ?? "") + (fragment.map { "#" + $0.redacted } ?? "")
        }
        return ClassifiedPayload(kind: .authCallback, text: text, fields: fields, includesBytes: showSecrets)
    }
}
