/// A friend link: `{chat base}/f/{code}` with a code of 8–64 characters from `[A-Za-z0-9_-]`, where the chat
/// base is the configured one exactly (scheme, host, port, path prefix) or the default
/// `https://chat.thestarline.cn` (W4, W6: the configured chat base or the default) — a link someone
/// shared from the real service stays a friend link for a user pointed at a devserver.
public enum FriendLink {
    public static func isValidCode(_ code: some StringProtocol) -> Bool {
        (8...64).contains(code.utf8.count)
            && code.utf8.allSatisfy { b in
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
        let parsed = WebURL(trimmed)
        if let parsed, parsed.hasAuthority, let found = match(parsed, chatBase: chatBase) {
            return (found.code, url(code: found.code, chatBase: found.base))
        }
        // Anything shaped like an address (a scheme, a host, a path) is judged as one: a look-alike
        // (chat.thestarline.cn.evil.example/f/…, with or without a scheme) is told which host was expected, not
        // how long a code is.
        if parsed?.hasAuthority == true || trimmed.unicodeScalars.contains(where: { $0 == "/" || $0 == ":" || $0 == "." }) {
            throw StarlineError(
                .invalidFriendLink,
                "not a friend link of \(chatBase): expected \(chatBase)/f/CODE (set --chat or STARLINE_CHAT_BASE_URL for another chat service)",
                details: .object([("chatBase", .string(chatBase.description))]))
        }
        throw StarlineError(
            .invalidFriendLink, "invalid friend-link code: expected 8 to 64 characters from A-Z a-z 0-9 _ -",
            details: .object([("length", .int(trimmed.utf8.count))]))
    }
}
