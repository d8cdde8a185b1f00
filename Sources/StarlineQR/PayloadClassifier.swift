import StarlineCore

/// What a scanned payload is, in the order W6 prescribes: an identity (login) callback first, then a
/// friend link, then any web URL, then plain text — so a login callback is never treated as ordinary
/// scanned content.
public enum PayloadKind: String, Sendable, CaseIterable {
    case authCallback, friendLink, url, text, binary
}

public struct ClassifiedPayload: Sendable {
    public var kind: PayloadKind
    /// The decoded text, with an auth code replaced by "redacted" unless secrets are shown; nil when not UTF-8.
    public var text: String?
    /// Kind-specific fields in output order (`appId`, `code`, `state`, `error` / `code`, `url`).
    public var fields: [(String, JSON)]
    /// False for auth callbacks without --show-secrets: the raw bytes would reveal the code.
    public var includesBytes: Bool
}

public struct PayloadClassifier: Sendable {
    public let chatBase: BaseURL
    public let showSecrets: Bool

    public init(chatBase: BaseURL, showSecrets: Bool = false) {
        self.chatBase = chatBase
        self.showSecrets = showSecrets
    }

    public func classify(_ bytes: [UInt8]) -> ClassifiedPayload {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return ClassifiedPayload(kind: .binary, text: nil, fields: [], includesBytes: true)
        }
        let trimmed = text.trimmingWhitespace()
        if let url = WebURL(trimmed) {
            if let callback = authCallback(url, trimmed) { return callback }
            if let code = FriendLink.code(in: url, chatBase: chatBase) {
                return ClassifiedPayload(kind: .friendLink, text: text,
                                         fields: [("code", .string(code)), ("url", .string(FriendLink.url(code: code, chatBase: chatBase)))],
                                         includesBytes: true)
            }
            if (url.scheme == "https" || url.scheme == "http"), url.hasAuthority, !url.host.isEmpty, url.hostIsWellFormed {
                return ClassifiedPayload(kind: .url, text: text, fields: [], includesBytes: true)
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
                  LoopbackHost.contains(url.host), path == "/callback" {
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
            fields = [("appId", .optional(appId)), ("code", .optional(showSecrets ? code : code.map { _ in "redacted" })),
                      ("state", .optional(query.value("state"))), ("error", .optional(query.value("error")))]
        } else {
            // Refused, not guessed: which of two codes a client would redeem is exactly the ambiguity an
            // attacker wants. The record stays a callback (never ordinary content) but carries no code.
            fields = [("appId", .optional(appId)), ("code", .null), ("state", .null), ("error", .null),
                      ("invalid", .string("duplicate parameter: \(duplicated.joined(separator: ", "))"))]
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

/// A friend link: `{chat base}/f/{code}` with a code of 8–64 characters from `[A-Za-z0-9_-]`, where the chat
/// base is the configured one exactly (scheme, host, port, path prefix) or the default
/// `https://chat.thestarline.cn` (DESIGN §4: "the configured chat base … or the default") — a link someone
/// shared from the real service stays a friend link for a user pointed at a devserver.
public enum FriendLink {
    public static func isValidCode(_ code: some StringProtocol) -> Bool {
        (8...64).contains(code.utf8.count) && code.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F
        }
    }

    public static func url(code: String, chatBase: BaseURL) -> String { "\(chatBase)/f/\(code)" }

    /// The default chat base, always accepted besides the configured one.
    static let defaultChatBase = try! BaseURL(validating: BaseURL.defaultChat)

    /// The code when `url` is a friend link of `chatBase` or of the default chat base; nil for look-alikes
    /// (other host, scheme or port, user info, another path prefix, extra segments, a query or a fragment).
    public static func code(in url: WebURL, chatBase: BaseURL) -> String? {
        match(url, chatBase: chatBase)?.code
    }

    /// The code and the chat base `url` belongs to.
    static func match(_ url: WebURL, chatBase: BaseURL) -> (code: String, base: BaseURL)? {
        for base in [chatBase, defaultChatBase] {
            if let code = code(in: url, exactly: base) { return (code, base) }
        }
        return nil
    }

    private static func code(in url: WebURL, exactly chatBase: BaseURL) -> String? {
        guard chatBase.sameOrigin(url), url.userInfo == nil, url.query == nil, url.fragment == nil else { return nil }
        let prefix = chatBase.path + "/f/"
        guard url.path.hasPrefix(prefix) else { return nil }
        let code = url.path.dropFirst(prefix.count)
        guard isValidCode(code) else { return nil }
        return String(code)
    }

    /// Builds a validated link from a bare code (on the configured chat base) or a friend-link URL (kept on
    /// the base it names, the configured or the default one).
    public static func make(_ input: String, chatBase: BaseURL) throws -> (code: String, url: String) {
        let trimmed = input.trimmingWhitespace()
        if isValidCode(trimmed) { return (trimmed, url(code: trimmed, chatBase: chatBase)) }
        if let parsed = WebURL(trimmed), parsed.hasAuthority {
            if let found = match(parsed, chatBase: chatBase) { return (found.code, url(code: found.code, chatBase: found.base)) }
            throw StarlineError(.invalidFriendLink, "not a friend link of \(chatBase): expected \(chatBase)/f/CODE (set --chat or STARLINE_CHAT_BASE_URL for another chat service)",
                                details: .object([("chatBase", .string(chatBase.description))]))
        }
        throw StarlineError(.invalidFriendLink, "invalid friend-link code: expected 8 to 64 characters from A-Z a-z 0-9 _ -",
                            details: .object([("length", .int(trimmed.utf8.count))]))
    }
}

