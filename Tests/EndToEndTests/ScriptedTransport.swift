#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlinePlatform
import Testing
import StarlineHTTP

/// A stub `HTTPExchange` that plays a script of expected exchanges — method, path (with its query, when
/// the expectation names one) and the answer — and fails the test when the run asks for anything the script
/// does not expect, or leaves an expectation unused (`verify()`, also called when it is released).
///
/// A request takes the first expectation of its method and path (in script order) not yet used up, so
/// answers to one route come in the order scripted; `expect(…, times:)` and `allow(…)` let one answer repeat. Inject it into a whole tool run with `ToolMain.execute(tool, words, io:, network:
/// .init(transport: stub))`, or pass it to a client directly.
public final class ScriptedTransport: HTTPExchange, @unchecked Sendable {
    // @unchecked: every field is behind `state`'s lock; `sourceLocation` is immutable.

    /// One scripted exchange.
    public struct Expectation: Sendable {
        public var method: String
        /// The path, with `?query` when the request must carry exactly that query; without one, any query matches.
        public var path: String
        public var answer: Result<HTTPReply, StarlineError>
        /// How many times it is expected (`allowed`: at most, possibly never).
        public var times: Int
        public var optional: Bool
        var used = 0
    }

    /// A request the stub received, as the client built it.
    public struct Received: Sendable {
        public var method: String
        /// The URL's path and query.
        public var target: String
        public var headers: [(String, String)]
        public var body: [UInt8]?
        public var timeout: Double?
        public var bodyJSON: JSON? { body.flatMap { try? JSON.parse($0) } }
        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    private struct State {
        var script: [Expectation] = []
        var received: [Received] = []
        var unexpected: [String] = []
        var verified = false
    }

    private let state = Locked(State())
    private let sourceLocation: SourceLocation

    public init(sourceLocation: SourceLocation = #_sourceLocation) {
        self.sourceLocation = sourceLocation
    }

    deinit { verify() }

    // MARK: Script

    /// Expects `method path` `times` times (in a row), answered with `status` and a JSON `body`.
    @discardableResult
    public func expect(
        _ method: String, _ path: String, status: Int = 200, json body: String = "{}", headers: [String: String] = [:],
        times: Int = 1
    ) -> ScriptedTransport {
        var all = headers
        all["content-type"] = all["content-type"] ?? "application/json"
        return add(
            Expectation(
                method: method, path: path, answer: .success(HTTPReply(status: status, headers: all, body: Array(body.utf8))),
                times: max(1, times), optional: false))
    }

    /// Expects `method path`, answered by a transport error (no answer: a refused connection, a timeout).
    @discardableResult
    public func expect(_ method: String, _ path: String, failing error: StarlineError, times: Int = 1) -> ScriptedTransport {
        add(Expectation(method: method, path: path, answer: .failure(error), times: max(1, times), optional: false))
    }

    /// Answers `method path` whenever it comes, any number of times (also never): requests whose count the
    /// test does not pin down.
    @discardableResult
    public func allow(_ method: String, _ path: String, status: Int = 200, json body: String = "{}") -> ScriptedTransport {
        add(
            Expectation(
                method: method, path: path,
                answer: .success(
                    HTTPReply(
                        status: status, headers: ["content-type": "application/json"],
                        body: Array(body.utf8))),
                times: .max, optional: true))
    }

    private func add(_ expectation: Expectation) -> ScriptedTransport {
        state.withLock {
            $0.script.append(expectation); $0.verified = false
        }
        return self
    }

    /// A refused connection, as libcurl reports one (retryable, never sent).
    public static let connectionRefused = StarlineError(
        .network, "request failed: Couldn't connect to server", retryable: true,
        details: .object([("curlCode", .int(7))]))

    // MARK: What happened

    public var received: [Received] { state.withLock { $0.received } }
    /// "METHOD target" of every request received, in order.
    public var log: [String] { received.map { "\($0.method) \($0.target)" } }

    /// Fails the test (at the stub's creation) for every request no expectation took and every expectation
    /// not used as often as scripted. Called again on release; each problem is recorded once.
    public func verify() {
        let problems: [String] = state.withLock { s in
            if s.verified { return [] }
            s.verified = true
            var problems = s.unexpected.map { "unexpected request: \($0)" }
            for e in s.script where !e.optional && e.used < e.times {
                problems.append("expected \(e.method) \(e.path) \(e.times == 1 ? "once" : "\(e.times) times"), got it \(e.used) times")
            }
            return problems
        }
        for problem in problems {
            Issue.record(Comment(rawValue: "ScriptedTransport: \(problem)"), sourceLocation: sourceLocation)
        }
    }

    // MARK: HTTPExchange

    public func performBlocking(_ request: HTTPRequestSpec) throws -> HTTPReply {
        let target = Self.target(of: request.url)
        let received = Received(
            method: request.method, target: target, headers: request.headers, body: request.body, timeout: request.timeout)
        let answer: Result<HTTPReply, StarlineError>? = state.withLock { s in
            s.received.append(received)
            s.verified = false
            // The first expectation still open in script order; a fully used one is skipped.
            guard let index = s.script.firstIndex(where: { $0.used < $0.times && Self.matches($0, method: request.method, target: target) })
            else {
                s.unexpected.append("\(request.method) \(target)")
                return nil
            }
            s.script[index].used += 1
            return s.script[index].answer
        }
        guard let answer else {
            // A 418: a refusal no client retries or reads as "not found"; `verify` fails the test for it.
            return HTTPReply(
                status: 418, headers: [:], body: Array(#"{"error":{"code":"UNSCRIPTED","message":"not in the test's script"}}"#.utf8))
        }
        return try answer.get()
    }

    static func matches(_ e: Expectation, method: String, target: String) -> Bool {
        guard e.method == method else { return false }
        if e.path.contains("?") { return e.path == target }
        return e.path == (target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target)
    }

    /// The path and query of `url` (everything from the first "/" after the authority).
    static func target(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return "/" }
        return String(rest[slash...])
    }
}
