import StarlineCore
import Testing
@testable import StarlineQR

@Suite struct PayloadClassifierTests {
    let defaultBase = try! BaseURL(validating: BaseURL.defaultChat)
    let localBase = try! BaseURL(validating: "http://127.0.0.1:8080/chat")

    func kind(_ text: String, base: BaseURL? = nil) -> PayloadKind {
        PayloadClassifier(chatBase: base ?? defaultBase).classify(Array(text.utf8)).kind
    }

    @Test(
        "W6 auth callbacks win over every other kind",
        arguments: [
            "starline-workbench://auth/callback?code=abc&state=xyz",
            "starline-com.example.game://auth/callback?error=access_denied&state=s",
            "STARLINE-WORKBENCH://auth/callback?code=1",
            "http://127.0.0.1:49152/callback?code=abc&state=xyz",
            "http://[::1]:8080/callback?code=abc",
            "http://127.0.0.1/callback"
        ])
    func w6AuthCallbacks(_ text: String) {
        #expect(kind(text) == .authCallback)
    }

    @Test(
        "W6 near-misses of callbacks are not callbacks",
        arguments: [
            "starline-workbench://evil/callback?code=abc",
            "starline-workbench://auth/callback/x?code=abc",
            "starline-workbench://user@auth/callback?code=abc",
            "starline-://auth/callback?code=abc",
            "http://localhost.evil.com:8080/callback?code=abc",
            "http://128.0.0.1:8080/callback?code=abc",
            "http://127.0.0.1.evil.com/callback?code=abc",
            "http://[::2]:8080/callback?code=abc",
            "http://127.0.0.1:8080/callbackx?code=abc",
            "ftp://127.0.0.1/callback?code=abc",
            "http://evil@127.0.0.1:8080/callback?code=abc"
        ])
    func w6CallbackNearMisses(_ text: String) {
        #expect(kind(text) != .authCallback)
    }

    @Test(
        "W6 every loopback spelling is a callback, its code redacted in code and text",
        arguments: [
            "http://localhost:8080/callback?code=SECRET1&state=s",
            "http://LOCALHOST/callback?code=SECRET1",
            "http://localhost.:8080/callback?code=SECRET1",
            "http://app.localhost:8080/callback?code=SECRET1",
            "http://127.0.0.2:8080/callback?code=SECRET1",
            "http://127.1:8080/callback?code=SECRET1",
            "http://2130706433:8080/callback?code=SECRET1",
            "http://0x7f.0.0.1:8080/callback?code=SECRET1",
            "http://0177.0.0.1:8080/callback?code=SECRET1",
            "http://[0:0:0:0:0:0:0:1]:8080/callback?code=SECRET1",
            "http://[::ffff:127.0.0.1]:8080/callback?code=SECRET1",
            "https://127.0.0.1:8080/callback?code=SECRET1",
            "http://127.0.0.1:8080/%63allback?code=SECRET1"
        ])
    func loopbackSpellings(_ text: String) {
        let payload = PayloadClassifier(chatBase: defaultBase).classify(Array(text.utf8))
        #expect(payload.kind == .authCallback)
        #expect(payload.text?.contains("SECRET1") == false, "text shows the code: \(payload.text ?? "nil")")
        #expect(payload.fields.first { $0.0 == "code" }?.1 == .string("redacted"))
        #expect(!payload.includesBytes)
    }

    @Test(
        "W6 a percent-encoded parameter name is the same parameter: redacted in text as in code",
        arguments: [
            "starline-workbench://auth/callback?%63ode=SECRET2&state=s",
            "starline-workbench://auth/callback?state=s&c%6Fde=SECRET2",
            "http://127.0.0.1:5000/callback?%63%6f%64%65=SECRET2",
            "starline-workbench://auth/callback?state=s#code=SECRET2"
        ])
    func percentEncodedNames(_ text: String) {
        let payload = PayloadClassifier(chatBase: defaultBase).classify(Array(text.utf8))
        #expect(payload.kind == .authCallback)
        #expect(payload.text?.contains("SECRET2") == false, "text shows the code: \(payload.text ?? "nil")")
        let shown = PayloadClassifier(chatBase: defaultBase, showSecrets: true).classify(Array(text.utf8))
        #expect(shown.text == text)
        if !text.contains("#") { #expect(shown.fields.first { $0.0 == "code" }?.1 == .string("SECRET2")) }
    }

    @Test(
        "W6 a duplicated code, state or error is refused: no code is picked, none is shown",
        arguments: [
            "starline-workbench://auth/callback?code=SECRETA&code=SECRETB&state=s",
            "http://127.0.0.1:5000/callback?code=SECRETA&%63ode=SECRETB",
            "starline-workbench://auth/callback?code=SECRETA&state=1&state=2"
        ])
    func duplicatedParameters(_ text: String) {
        for show in [false, true] {
            let payload = PayloadClassifier(chatBase: defaultBase, showSecrets: show).classify(Array(text.utf8))
            #expect(payload.kind == .authCallback)
            #expect(payload.fields.first { $0.0 == "code" }?.1 == .null)
            #expect(payload.fields.first { $0.0 == "invalid" }?.1.stringValue?.hasPrefix("duplicate parameter") == true)
            if !show { #expect(payload.text?.contains("SECRET") == false) }
        }
    }

    @Test func callbackFieldsAndRedaction() {
        let payload = "starline-workbench://auth/callback?state=s1&code=c%2B1&x=y"
        let hidden = PayloadClassifier(chatBase: defaultBase).classify(Array(payload.utf8))
        #expect(hidden.text == "starline-workbench://auth/callback?state=s1&code=redacted&x=y")
        #expect(!hidden.includesBytes)
        #expect(hidden.fields.first { $0.0 == "code" }?.1 == .string("redacted"))
        let shown = PayloadClassifier(chatBase: defaultBase, showSecrets: true).classify(Array(payload.utf8))
        #expect(shown.text == payload)
        #expect(shown.fields.first { $0.0 == "code" }?.1 == .string("c+1"))
        #expect(shown.fields.first { $0.0 == "state" }?.1 == .string("s1"))
        #expect(shown.fields.first { $0.0 == "appId" }?.1 == .string("workbench"))
    }

    @Test("W6 friend links on exactly the configured chat base, or on the default one")
    func w6FriendLinks() {
        #expect(kind("https://chat.thestarline.cn/f/AbCdEfGh") == .friendLink)
        #expect(kind("https://chat.thestarline.cn:443/f/" + String(repeating: "a", count: 64)) == .friendLink)
        #expect(kind("https://chat.thestarline.cn/f/" + String(repeating: "a", count: 65)) == .url)
        #expect(kind("https://CHAT.thestarline.cn/f/AbCdEfGh") == .friendLink)
        #expect(kind("http://127.0.0.1:8080/chat/f/AbCdEfGh", base: localBase) == .friendLink)
        #expect(kind("http://127.0.0.1:8080/f/AbCdEfGh", base: localBase) == .url)
        #expect(kind("http://127.0.0.1:8081/chat/f/AbCdEfGh", base: localBase) == .url)
        #expect(kind("http://localhost:8080/chat/f/AbCdEfGh", base: localBase) == .url)
        // The default base stays a friend link when another one is configured (W6) …
        #expect(kind("https://chat.thestarline.cn/f/AbCdEfGh", base: localBase) == .friendLink)
        // … but only exactly: its look-alikes do not.
        #expect(kind("http://chat.thestarline.cn/f/AbCdEfGh", base: localBase) == .url)
        #expect(kind("https://chat.thestarline.cn/chat/f/AbCdEfGh", base: localBase) == .url)
        #expect(kind("https://chat.thestarline.cn.evil.com/f/AbCdEfGh") == .url)
        #expect(kind("https://chat.thestarline.cn@evil.com/f/AbCdEfGh") == .url)
        #expect(kind("https://x@chat.thestarline.cn/f/AbCdEfGh") == .url)
        #expect(kind("https://chat.thestarline.cn/f/AbCdEfGh/") == .url)
    }

    @Test func urlsTextAndBinary() {
        #expect(kind("https://example.com") == .url)
        #expect(kind("http://example.com/a?b#c") == .url)
        #expect(kind("ftp://example.com") == .text)
        #expect(kind("mailto:a@example.com") == .text)
        #expect(kind("https://") == .text)
        #expect(kind("hello") == .text)
        #expect(PayloadClassifier(chatBase: defaultBase).classify([0xFF, 0x00]).kind == .binary)
        #expect(PayloadClassifier(chatBase: defaultBase).classify([0xFF, 0x00]).text == nil)
    }

    @Test func friendLinkBuilder() throws {
        #expect(try FriendLink.make("AbCdEfGh", chatBase: defaultBase).url == "https://chat.thestarline.cn/f/AbCdEfGh")
        #expect(try FriendLink.make("http://127.0.0.1:8080/chat/f/AbCdEfGh", chatBase: localBase).code == "AbCdEfGh")
        #expect(throws: StarlineError.self) { try FriendLink.make("abc", chatBase: defaultBase) }
        #expect(throws: StarlineError.self) { try FriendLink.make("https://evil.com/f/AbCdEfGh", chatBase: defaultBase) }
        #expect(throws: StarlineError.self) { try FriendLink.make("has space in it", chatBase: defaultBase) }
    }
}
