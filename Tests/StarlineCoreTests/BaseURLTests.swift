import Testing
@testable import StarlineCore

@Suite struct BaseURLTests {
    @Test(
        "W4 accepts https anywhere and http on loopback hosts",
        arguments: [
            ("https://chat.thestarline.cn", "https://chat.thestarline.cn"),
            ("https://chat.thestarline.cn/", "https://chat.thestarline.cn"),
            ("HTTPS://Chat.TheStarline.CN:443/", "https://chat.thestarline.cn"),
            ("https://example.com:8443/prefix/", "https://example.com:8443/prefix"),
            ("http://127.0.0.1:8080/chat", "http://127.0.0.1:8080/chat"),
            ("http://127.1.2.3", "http://127.1.2.3"),
            ("http://localhost:9000", "http://localhost:9000"),
            ("http://[::1]:5000/chat", "http://[::1]:5000/chat"),
            ("http://127.0.0.1:80", "http://127.0.0.1")
        ])
    func w4Accepts(_ input: String, _ normalized: String) throws {
        #expect(try BaseURL(validating: input).description == normalized)
    }

    @Test(
        "W4 rejects overrides that are not https or loopback http, or carry user info, query or fragment",
        arguments: [
            "http://chat.thestarline.cn",  // http off loopback
            "http://127.0.0.1.evil.com",  // look-alike loopback
            "http://localhost.evil.com",
            "http://0x7f.0.0.1", "http://127.1", "http://0177.0.0.1", "http://2130706433", "http://[::ffff:127.0.0.1]",
            "http://128.0.0.1",
            "https://user@chat.thestarline.cn",  // user info
            "https://user:pw@chat.thestarline.cn",
            "https://chat.thestarline.cn@evil.com",
            "http://evil.com@127.0.0.1",
            "https://chat.thestarline.cn/?x=1",  // query
            "https://chat.thestarline.cn?",  // empty query
            "https://chat.thestarline.cn/#frag",  // fragment
            "https://chat.thestarline.cn#",
            "ftp://chat.thestarline.cn", "javascript:alert(1)", "file:///etc/passwd",
            "chat.thestarline.cn", "//chat.thestarline.cn", "https://", "https:///path",
            "https://chat.thestarline.cn:99999", "https://chat.thestarline.cn:", "https://chat.thestarline.cn:0",
            "https://exa mple.com", " https://chat.thestarline.cn", "https://chat.thestarline.cn\\@evil.com",
            "https://chat%2ethestarline.cn", "https://chаt.thestarline.cn",  // Cyrillic а
            "https://chat.thestarline.cn/a/../b", "https://chat.thestarline.cn//x",
            ""
        ])
    func w4Rejects(_ input: String) {
        do {
            _ = try BaseURL(validating: input, name: "STARLINE_CHAT_BASE_URL")
            Issue.record("accepted \(input)")
        } catch let e as StarlineError {
            #expect(e.code == .invalidURL)
            #expect(e.exitStatus == .usage)
            #expect(e.message.contains("STARLINE_CHAT_BASE_URL"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("W4 error messages never echo credentials")
    func w4RedactsUserInfo() throws {
        let e = try #require(throws: StarlineError.self) { try BaseURL(validating: "https://bob:hunter2@example.com") }
        #expect(!e.message.contains("hunter2"))
        #expect(!e.message.contains("bob"))
    }

    @Test func sameOriginComparesDefaultPorts() throws {
        let base = try BaseURL(validating: "https://chat.thestarline.cn")
        #expect(base.sameOrigin(try #require(WebURL("https://chat.thestarline.cn:443/f/x"))))
        #expect(!base.sameOrigin(try #require(WebURL("https://chat.thestarline.cn:444/f/x"))))
        #expect(!base.sameOrigin(try #require(WebURL("http://chat.thestarline.cn/f/x"))))
    }

    @Test func webURLParsesParts() throws {
        let u = try #require(WebURL("starline-workbench://auth/callback?code=a%2Bb+c&state=s#frag"))
        #expect(u.scheme == "starline-workbench")
        #expect(u.host == "auth" && u.path == "/callback")
        #expect(u.queryValue("code") == "a+b c")
        #expect(u.fragment == "frag")
        #expect(WebURL("http://[::1]:8080/callback")?.port == 8080)
        #expect(WebURL("no scheme") == nil)
    }
}

@Suite struct StarlinePathsTests {
    @Test func starlineHomeRelocatesEverything() {
        let p = StarlinePaths(environment: ["STARLINE_HOME": "/tmp/sh", "XDG_CONFIG_HOME": "/elsewhere"])
        #expect(p == StarlinePaths(config: "/tmp/sh/config", state: "/tmp/sh/state", data: "/tmp/sh/data", runtime: "/tmp/sh/run"))
        #expect(p.configFile == "/tmp/sh/config/config.json")
    }

    @Test func xdgDirectoriesWithFallbacks() {
        let p = StarlinePaths(environment: ["HOME": "/home/u", "XDG_CONFIG_HOME": "/c", "XDG_RUNTIME_DIR": "/run/user/1"])
        #expect(p.config == "/c/starline")
        #expect(p.state == "/home/u/.local/state/starline")
        #expect(p.data == "/home/u/.local/share/starline")
        #expect(p.runtime == "/run/user/1/starline")
    }

    @Test func relativeXDGValuesAreIgnoredAndRuntimeFallsBackToState() {
        let p = StarlinePaths(environment: ["HOME": "/home/u", "XDG_DATA_HOME": "relative/dir"])
        #expect(p.data == "/home/u/.local/share/starline")
        #expect(p.runtime == "/home/u/.local/state/starline/run")
    }
}
