import Foundation
import StarlineCore

/// Runs sl-login / sl-restore against one devserver with one temporary STARLINE_HOME and machine id.
public final class SessionToolsHarness: @unchecked Sendable {
    public let server: DevServerProcess
    public let home: TemporaryDirectory
    public var extraEnvironment: [String: String] = [:]

    public init(server: DevServerProcess, home: TemporaryDirectory = TemporaryDirectory("session-home")) throws {
        self.server = server
        self.home = home
        try "0123456789abcdef0123456789abcdef\n".write(toFile: home.file("machine-id"), atomically: true, encoding: .utf8)
    }

    public var environment: [String: String] {
        var env = [
            "STARLINE_API_BASE_URL": server.baseURL, "STARLINE_CHAT_BASE_URL": server.chatBase,
            "STARLINE_MACHINE_ID_FILE": home.file("machine-id")
        ]
        for (k, v) in extraEnvironment { env[k] = v }
        return env
    }

    /// `env HOME=… STARLINE_HOME=… NAME='value'…`: the prefix that runs a tool from a shell script with the
    /// environment `run` gives it (for scripts that run tools in the background or under strace).
    public var shellEnvironment: String {
        "env HOME='\(home.path)' STARLINE_HOME='\(home.path)/starline' "
            + environment.sorted { $0.key < $1.key }.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
    }

    /// Shell lines that do what a browser does with the authorize URL in `url` (a shell word, e.g. "$1"):
    /// load the sign-in form, approve it as `user` (password `<user>-pass`), and leave the redirect to the
    /// loopback callback in `$loc`.
    public func approveInShell(url: String, user: String) -> String {
        """
        rid=$(curl -s \(url) | sed -n 's/.*name="request_id" value="\\([^"]*\\)".*/\\1/p')
        loc=$(curl -s -o /dev/null -w '%{redirect_url}' --data-urlencode "request_id=$rid" -d username=\(user) -d password=\(user)-pass -d action=approve '\(server.baseURL)/oauth/authorize')
        """
    }

    /// A script that runs `sl-login --no-browser` in the background, waits for the URL it prints, approves
    /// it as `user`, runs `callback` (shell lines that use `$loc`, the loopback callback URL) and prints
    /// `exit=STATUS` of sl-login. `--pending-ttl 60` bounds the wait should the callback never arrive.
    public func loopbackLoginScript(user: String, callback: String) -> String {
        """
        \(shellEnvironment) '\(Tools.path("sl-login"))' --no-browser --pending-ttl 60 > '\(home.path)/login.out' 2> '\(home.path)/login.err' & pid=$!
        for i in $(seq 100); do grep -q 'http://127.0.0.1' '\(home.path)/login.err' 2>/dev/null && break; sleep 0.1; done
        url=$(grep -o 'http://127.0.0.1[^ ]*/oauth/authorize[^ ]*' '\(home.path)/login.err' | head -1)
        \(approveInShell(url: "\"$url\"", user: user))
        \(callback)
        wait $pid; echo "exit=$?"
        """
    }

    public func run(_ tool: String, _ arguments: [String], stdin: [UInt8]? = nil, environment extra: [String: String] = [:]) throws
        -> ToolRun
    {
        try spawn(tool, arguments, stdin: stdin, environment: extra).wait()
    }

    public func spawn(_ tool: String, _ arguments: [String], stdin: [UInt8]? = nil, environment extra: [String: String] = [:]) throws
        -> RunningTool
    {
        var env = environment
        for (k, v) in extra { env[k] = v }
        return try Tools.spawn(tool, arguments, stdin: stdin, home: home.path, environment: env)
    }

    /// Signs `user` in through the real OAuth flow and stores the token with `sl-login --with-token`.
    @discardableResult
    public func storeLogin(_ user: String) throws -> DevServerProcess.Login {
        let login = try server.login(user)
        let run = try self.run("sl-login", ["--with-token"], stdin: Array(login.token.utf8))
        guard run.status == 0 else { throw StarlineError(.data, "sl-login --with-token failed: \(run.stderrText)") }
        return login
    }

    public func restore(_ arguments: [String] = [], environment: [String: String] = [:]) throws -> (
        status: Int32, state: String?, result: JSON?, run: ToolRun
    ) {
        let run = try self.run("sl-restore", arguments, environment: environment)
        let json = try? run.json()
        return (run.status, json?["state"]?.stringValue, json, run)
    }

    public func status() throws -> JSON { try run("sl-login", ["status"]).json() }

    public func counter(_ route: String) throws -> Int { try server.requests(route) }
}
