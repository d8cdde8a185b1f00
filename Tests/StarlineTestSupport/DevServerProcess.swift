import Foundation
import StarlineCore
import StarlineCrypto
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP exchange of a test with a server on loopback (`LoopbackHTTPClient`).
public struct HTTPResult: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]
    /// How the exchange ended, as curl's exit code for it: 0, 52/56 when the server dropped the connection, 28 on
    /// timeout (`LoopbackHTTPClient`).
    public var curlExit: Int32

    public var text: String { String(decoding: body, as: UTF8.self) }
    public func json() throws -> JSON { try JSON.parse(body) }
    public var errorCode: String? { (try? json())?["error"]?["code"]?.stringValue ?? (try? json())?["error"]?.stringValue }
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A running `sl-devserver --port 0` for one test.
public final class DevServerProcess: @unchecked Sendable {
    public let baseURL: String
    public let devToken: String
    public var chatBase: String { baseURL + "/chat" }
    private let process: RunningTool
    private let scratch = TemporaryDirectory("devserver")

    /// `port` 0 picks a free one; a fixed one restarts a server where its clients expect it.
    public init(_ arguments: [String] = [], environment: [String: String] = [:], port: Int = 0) throws {
        process = try Tools.spawn(
            "sl-devserver", ["--port", String(port)] + arguments, home: scratch.path,
            environment: ["PATH": "/usr/bin:/bin"].merging(environment) { $1 })
        // The first line, flushed at once: {"listening":"http://127.0.0.1:PORT","devToken":"…"}
        let process = self.process
        _ = process.waitForStdout(seconds: 60) { $0.contains("\n") || process.poll() != nil }
        let line = process.stdoutSoFar.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
        guard let first = try? JSON.parse(line), let url = first["listening"]?.stringValue, let token = first["devToken"]?.stringValue
        else {
            let run = process.waitOrKill(seconds: 0)
            throw StarlineError(
                .data, "sl-devserver did not print its address (exit \(run.status)): \(run.stdoutText) \(run.stderrText)")
        }
        baseURL = url
        devToken = token
    }

    /// SIGTERM, then wait; returns the exit status (128 + the signal when one ended it).
    @discardableResult
    public func stop() -> Int32 {
        if process.poll() == nil { process.signal(SIGTERM) }
        return process.wait().status
    }

    /// SIGKILL, as a crash or a pulled plug ends it; waits for it to be gone.
    public func kill() {
        _ = process.waitOrKill(seconds: 0)
    }

    /// The port it listens on.
    public var port: Int { Int(baseURL.split(separator: ":").last ?? "0") ?? 0 }

    deinit { stop() }

    public enum Body {
        case json(JSON)
        case form([(String, String)])
        case raw([UInt8], contentType: String)
    }

    /// One request (`LoopbackHTTPClient`, in this process). `path` is appended to the base URL unless it is absolute;
    /// `maxTime` bounds it as curl's `--max-time` (default 300 s: a hang fails the test, it does not stall the run).
    public func request(
        _ method: String, _ path: String, token: String? = nil, dev: Bool = false, body: Body? = nil,
        headers: [(String, String)] = [], maxTime: Double? = nil
    ) throws -> HTTPResult {
        var fields: [(String, String)] = []
        if let token { fields.append(("Authorization", "Bearer \(token)")) }
        if dev { fields.append(("X-Dev-Token", devToken)) }
        fields += headers
        var upload: [UInt8]?
        switch body {
        case .json(let value)?:
            fields.append(("Content-Type", "application/json"))
            upload = Array(value.serialized().utf8)
        case .form(let pairs)?:
            fields.append(("Content-Type", "application/x-www-form-urlencoded"))
            upload = Array(pairs.map { PercentEncoding.encode($0.0) + "=" + PercentEncoding.encode($0.1) }.joined(separator: "&").utf8)
        case .raw(let bytes, let contentType)?:
            fields.append(("Content-Type", contentType))
            upload = bytes
        case nil:
            upload = nil
        }
        return LoopbackHTTPClient.exchange(
            method, path.hasPrefix("http") ? path : baseURL + path, headers: fields, body: upload, seconds: maxTime ?? 300)
    }

    /// Creates `count` device sessions of `user` (`POST /__dev/users/{uid}/sessions`); their ids.
    public func createSessions(user: String = "carol", count: Int) throws -> [String] {
        let reply = try dev("POST", "/__dev/users/\(user)/sessions", .object([("count", .int(count))]))
        return try reply.json()["ids"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    public func dev(_ method: String, _ path: String, _ json: JSON? = nil) throws -> HTTPResult {
        try request(method, path, dev: true, body: json.map { .json($0) })
    }

    /// How many requests matched `route` ("METHOD /template", as `GET /__dev/counters` keys them).
    public func requests(_ route: String) throws -> Int {
        Int(try dev("GET", "/__dev/counters").json()["counters"]?[route]?.intValue ?? 0)
    }

    /// Waits (up to `seconds`) until `route` has been asked `count` times in all: a request sent from another
    /// thread has reached the server — a long poll is waiting — without guessing how long that takes.
    public func waitForRequests(_ route: String, atLeast count: Int, seconds: Double = 30) throws -> Bool {
        try eventually(seconds: seconds) { try requests(route) >= count }
    }

    /// Moves the server's wall time by `seconds` (`POST /__dev/clock`): what has a lifetime expires without the
    /// test sleeping it out.
    public func advanceClock(_ seconds: Int) throws {
        let moved = try dev("POST", "/__dev/clock", .object([("advanceSeconds", .int(seconds))]))
        guard moved.status == 200 else {
            throw StarlineError(.data, "POST /__dev/clock answered \(moved.status): \(moved.text)")
        }
    }

    /// A PKCE verifier and its S256 challenge.
    public static func pkce() -> (verifier: String, challenge: String) {
        let verifier = Base64.encodeURL(Sodium.randomBytes(32))
        return (verifier, Base64.encodeURL(SHA256.hash(Array(verifier.utf8))))
    }

    public struct Login: Sendable {
        public var token: String
        public var sessionId: String
        public var response: JSON
    }

    /// Signs in through the real authorization-code flow: the HTML form, the redirect, the token exchange.
    public func login(
        _ user: String, password: String? = nil, app: String = "workbench", redirectURI: String = "http://127.0.0.1:53682/callback"
    ) throws -> Login {
        let (verifier, challenge) = Self.pkce()
        let page = try request(
            "GET",
            "/oauth/authorize?response_type=code&client_id=\(PercentEncoding.encode(app))&redirect_uri=\(PercentEncoding.encode(redirectURI))&state=s1&code_challenge=\(challenge)&code_challenge_method=S256"
        )
        guard let requestId = Self.formValue(page.text, "request_id") else {
            throw StarlineError(.data, "no sign-in form (status \(page.status)): \(page.text.prefix(200))")
        }
        let approved = try request(
            "POST", "/oauth/authorize",
            body: .form([
                ("request_id", requestId), ("username", user),
                ("password", password ?? "\(user)-pass"), ("action", "approve")
            ]))
        guard approved.status == 302, let location = approved.header("Location"), let code = WebURL(location)?.queryValue("code") else {
            throw StarlineError(.data, "approval did not redirect with a code (status \(approved.status))")
        }
        let token = try request(
            "POST", "/oauth/token",
            body: .form([
                ("grant_type", "authorization_code"), ("code", code), ("client_id", app),
                ("redirect_uri", redirectURI), ("code_verifier", verifier)
            ]))
        let json = try token.json()
        guard let access = json["access_token"]?.stringValue, let session = json["session_id"]?.stringValue else {
            throw StarlineError(.data, "token exchange failed: \(token.text)")
        }
        return Login(token: access, sessionId: session, response: json)
    }

    /// The value of `<input … name="NAME" value="…">` in an HTML page.
    public static func formValue(_ html: String, _ name: String) -> String? {
        guard let range = html.range(of: "name=\"\(name)\" value=\"") else { return nil }
        let rest = html[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }
}
