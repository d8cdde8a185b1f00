#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineDevServer

/// How long a stop may take before the process ends without waiting for the connections left.
let stopBudgetMilliseconds = 1_500

/// Serving: the tool's one command.
enum ServeCommand: Command {
    static let port = Option<Int>.integer(
        "port", short: "p", "PORT", help: "TCP port on 127.0.0.1; 0 picks a free one.", default: 8080, range: 0...65535)
    static let db = Option<String?>.string(
        "db", "FILE", help: "Keep state in this SQLite file across restarts (default: a scratch file removed at stop).",
        completion: .file(extensions: ["db", "sqlite"]))
    static let seed = Option<String?>.string(
        "seed", "FILE", help: "Seed an empty database from this JSON fixture instead of the built-in one.",
        completion: .file(extensions: ["json"]))
    static let autoApprove = Option<String?>.string(
        "auto-approve", "USER", help: "Approve authorization requests and device codes as USER at once, without the sign-in form.")
    static let log = Option<String?>.string(
        "log", "FILE", help: "Append one JSON line per request (route template, status, time; never tokens, codes or passwords).",
        completion: .file(extensions: ["jsonl", "log"]))
    static let devToken = Option<String?>.string(
        "dev-token", "TOKEN",
        help: """
            The X-Dev-Token for /__dev/ routes (default: the one kept in --db FILE by an earlier run, else random; \
            printed at start). Kept in --db FILE for later runs.
            """, env: "STARLINE_DEV_TOKEN")
    static let deviceInterval = Option<Duration>.duration(
        "device-interval", help: "Polling interval given to device-code clients.", default: 5, range: 0...3600)
    static let sessionTTL = Option<Duration>.duration(
        "session-ttl", help: "Lifetime of new sessions.", default: 86400, range: 1...(365 * 86400))
    static let codeTTL = Option<Duration>.duration("code-ttl", help: "Lifetime of authorization codes.", default: 60, range: 1...3600)
    static let deviceCodeTTL = Option<Duration>.duration(
        "device-code-ttl", help: "Lifetime of device codes.", default: 600, range: 1...86400)
    static let deviceSlowDown = Option<Int>.integer(
        "device-slow-down", "N", help: "Answer slow_down to the first N polls of every device code (tests of clients).", default: 0,
        range: 0...100)
    static let connectionTimeout = Option<Duration>.duration(
        "connection-timeout", help: "Close a connection idle this long (e.g. a half-sent request).", default: 30, range: 1...3600)
    static let maxConnections = Option<Int>.integer(
        "max-connections", "N", help: "Connections served at once (each holds a thread); more are closed at once.", default: 512,
        range: 1...4096)
    static let maxConnectionsPerIP = Option<Int>.integer(
        "max-connections-per-ip", "N", help: "Connections served at once from one client address.", default: 128, range: 1...4096)
    static let eventRetention = Option<Int>.integer(
        "event-retention", "N", help: "Keep the newest N sync events; an older cursor gets 410 CURSOR_EXPIRED.", default: 100_000,
        range: 1...100_000_000)
    static let maxPollWait = Option<Duration>.duration(
        "max-poll-wait",
        help: """
            The longest a sync long poll (GET /chat/v1/sync?timeout=N) is held; a longer timeout is cut to it (0 \
            answers at once).
            """, default: 30, range: 0...30)
    static let routes = Option<Bool>.flag("routes", help: "Print the served routes, one 'METHOD /path' per line, and exit.")

    static let spec = CommandSpec(
        "sl-devserver", abstract: "a local Starline platform and chat server with fault injection",
        discussion: """
            sl-devserver serves the Starline HTTP contract (docs/openapi.yaml, also at /openapi.yaml) on a loopback \
            address: OAuth sign-in with PKCE and device codes, the account API, device sessions, the chat service under \
            /chat, and control routes under /__dev/ for tests (fault injection, restricted users, disabled apps, expired \
            sessions, SMS codes, rate limits, request counters).\n\nThe first line on stdout, flushed at once, is \
            {\"listening\":\"http://127.0.0.1:PORT\",\"devToken\":\"…\"}; the chat base URL is that address followed by \
            /chat. State lives in SQLite: without --db in a scratch WAL file of its own under the runtime directory \
            ($XDG_RUNTIME_DIR/starline, or DIR/run with STARLINE_HOME=DIR), never synced, removed when the server stops \
            (one left by a killed server is removed by the next one started there; in memory when the runtime directory \
            cannot be used); --db names a file that is kept (and keeps the dev token: a server \
            restarted on the same file prints the same devToken, so scripts holding it keep working), seeded from --seed \
            or the built-in fixture (users alice (admin, alice-pass), bob (bob-pass), carol (carol-pass); apps workbench \
            and com.example.game; a direct conversation alice-bob and a group of all three). SIGINT, SIGTERM or SIGHUP \
            stops it cleanly (exit 0) and promptly, within 2 s whatever its clients do: long polls are answered at once \
            (an empty page), requests held by an injected delay are answered, keep-alive connections are closed and the \
            port is free when it has exited. A port in use is ADDRESS_IN_USE (exit 7, retryable), not a usage error.
            """,
        options: [
            port.spec, db.spec, seed.spec, autoApprove.spec, log.spec, devToken.spec, deviceInterval.spec, sessionTTL.spec,
            codeTTL.spec, deviceCodeTTL.spec, deviceSlowDown.spec, connectionTimeout.spec, maxConnections.spec,
            maxConnectionsPerIP.spec, eventRetention.spec, maxPollWait.spec, routes.spec
        ],
        examples: [
            Example("sl-devserver --port 8080", "Serve on http://127.0.0.1:8080 (chat at http://127.0.0.1:8080/chat)."),
            Example(
                "export STARLINE_API_BASE_URL=http://127.0.0.1:8080 STARLINE_CHAT_BASE_URL=http://127.0.0.1:8080/chat",
                "Point the other tools at it."),
            Example(
                """
                curl -s -H \"X-Dev-Token: $TOKEN\" -d '{\"route\":\"GET /api/me\",\"status\":503,\"count\":2}' \
                http://127.0.0.1:8080/__dev/faults
                """, "Make the next two GET /api/me calls fail with 503."),
            Example(
                "sl-devserver --port 0 --auto-approve alice --db /tmp/dev.db --log /tmp/dev.jsonl",
                "A throw-away server for tests that signs everyone in as alice.")
        ],
        exitStatuses: [
            (.ok, "stopped by SIGINT, SIGTERM or SIGHUP (or --routes printed)"),
            (.transient, "the port is in use (ADDRESS_IN_USE) or cannot be listened on (NETWORK_ERROR)")
        ])

    struct Options {
        var configuration: DevServerConfiguration
        /// `--db FILE`; nil for a scratch file (`ScratchStore`).
        var database: String?
        var seedPath: String?
        var listRoutes: Bool
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        var configuration = DevServerConfiguration()
        configuration.port = UInt16(try arguments[port])
        configuration.autoApprove = try arguments[autoApprove]
        configuration.logPath = try arguments[log]
        configuration.devToken = try arguments[devToken]
        // The parser skips empty environment values; an empty token is refused however it is given,
        // never silently replaced by a random one.
        if configuration.devToken?.trimmingWhitespace().isEmpty == true
            || (configuration.devToken == nil && arguments.environment["STARLINE_DEV_TOKEN"] != nil)
        {
            throw StarlineError(.usage, "--dev-token / STARLINE_DEV_TOKEN must not be empty (leave both unset for a random token)")
        }
        configuration.deviceInterval = Int(try arguments[deviceInterval].components.seconds)
        configuration.sessionTTL = try arguments[sessionTTL].components.seconds
        configuration.codeTTL = try arguments[codeTTL].components.seconds
        configuration.deviceCodeTTL = try arguments[deviceCodeTTL].components.seconds
        configuration.deviceSlowDowns = try arguments[deviceSlowDown]
        configuration.connectionTimeout = Int(try arguments[connectionTimeout].components.seconds)
        configuration.maxConnections = try arguments[maxConnections]
        configuration.maxConnectionsPerIP = try arguments[maxConnectionsPerIP]
        configuration.eventRetention = try arguments[eventRetention]
        configuration.maxPollWait = Int(try arguments[maxPollWait].components.seconds)
        return Options(
            configuration: configuration, database: try arguments[db], seedPath: try arguments[seed], listRoutes: try arguments[routes])
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        var configuration = options.configuration
        if let seed = options.seedPath {
            guard access(seed, F_OK) == 0 || errno != ENOENT else { throw StarlineError(.usage, "seed file \(seed) does not exist") }
            // Opened once, bounded: a fixture is a few KiB; 64 MiB leaves room for generated ones.
            let bytes = try InputFile.read(seed, what: "the seed file", maxBytes: 64 << 20)
            do { configuration.fixture = try JSON.parse(bytes) } catch let e as StarlineError {
                throw StarlineError(.data, "seed file \(seed): \(e.message)")
            }
        }
        // Without --db, a scratch file of the server's own rather than an in-memory database, which slows as it
        // fills (ScratchStore); in memory only when the runtime directory cannot hold one, or for --routes, which
        // serves nothing and has no business creating files.
        let scratch = options.database == nil && !options.listRoutes ? scratchStore(context) : nil
        defer { scratch?.remove() }
        configuration.databasePath = options.database ?? scratch?.databasePath ?? ":memory:"
        configuration.databaseIsScratch = scratch != nil
        let server = try DevServer(configuration: configuration)
        if let user = configuration.autoApprove, try server.store.userJSON(user) == nil {
            throw StarlineError(.usage, "--auto-approve: no user '\(user)' in the seed")
        }
        if options.listRoutes {
            for route in server.routeList { context.output.write(route + "\n") }
            return .ok
        }
        // Block the stop signals in every thread (MHD's threads inherit the mask) and wait for them here.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGHUP)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        try server.start()
        context.output.write(
            JSON.object([("listening", .string(server.baseURL)), ("devToken", .string(server.devToken))]).serialized() + "\n")
        context.output.flush()
        context.output.progress("sl-devserver: serving \(server.baseURL) (chat: \(server.baseURL)/chat); stop with Ctrl-C")
        var received: Int32 = 0
        sigwait(&signals, &received)
        // Long polls, keep-alive connections and injected delays end at once (DevServer.stop); should
        // anything else hold a connection's thread (a client's request stuck in a long database statement),
        // the process still ends within `stopBudget`: the state on disk is SQLite's, consistent at any instant.
        WorkerThreads.detach {
            usleep(useconds_t(stopBudgetMilliseconds * 1000))
            let note = "sl-devserver: connections still open after \(stopBudgetMilliseconds) ms; stopped without them\n"
            _ = note.withCString { write(2, $0, strlen($0)) }
            scratch?.remove()
            _exit(0)
        }
        server.stop()
        context.output.progress("sl-devserver: stopped")
        return .ok
    }

    /// A scratch store under the runtime directory, or nil — state in memory, said on stderr — when the
    /// directory cannot be used.
    static func scratchStore(_ context: CommandContext) -> ScratchStore? {
        do { return try ScratchStore.create(in: context.paths.runtime) } catch {
            let reason = (error as? StarlineError)?.message ?? "\(error)"
            context.output.notice("sl-devserver: keeping state in memory: \(reason)")
            return nil
        }
    }
}
