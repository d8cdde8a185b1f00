import StarlineCore
import StarlinePlatform
import StarlineHTTP
import StarlineBulk

/// The one place a networked tool's clients are built (gh's `cmdutil.Factory`): a command makes one from its
/// context and its platform options at the start of its run, and gets from it the session client
/// (`client`), the transports of its bulk and chat work (`transport`), the clock of its client code (`clock`:
/// the `IOStreams` clock, `context.io.now()`, with real waits) and the clock of its bulk engine
/// (`bulkClock`). No front end builds an `HTTPTransport`: the only one a tool builds is `liveTransport`, here.
///
/// Tests run a whole tool in-process with an `Injection` (`ToolMain.execute(tool, words, io:, network:)`):
/// every client of the run then talks to its `transport` (a scripted stub) and waits on its virtual clocks.
public struct PlatformFactory: Sendable {
    /// What a test puts in place of the network and of real waits, for one in-process run.
    public struct Injection: Sendable {
        /// Every transport of the run is this one.
        public var transport: any HTTPExchange
        /// Each wait of a retry (async or blocking) in seconds: recorded or ignored, never slept.
        public var wait: @Sendable (Double) -> Void
        /// The bulk engine's clock (backoffs, outage budget).
        public var bulkClock: BulkClock

        public init(
            transport: any HTTPExchange, wait: @escaping @Sendable (Double) -> Void = { _ in },
            bulkClock: BulkClock = .virtual()
        ) {
            self.transport = transport
            self.wait = wait
            self.bulkClock = bulkClock
        }
    }

    /// The injection of the run in progress (bound by `ToolMain.execute(_:_:io:network:)`; nil in a tool).
    @TaskLocal static var injected: Injection?

    public let options: PlatformOptions
    public let context: CommandContext
    /// The wall clock of the run's client code (`context.io.now()`, a test's fixed time) and its retries' waits.
    public let clock: RetryClock
    /// The clock of the run's bulk engine.
    public let bulkClock: BulkClock
    private let injection: Injection?

    public init(_ options: PlatformOptions, _ context: CommandContext) {
        self.options = options
        self.context = context
        // Views of the run's one clock (IOStreams.clock); an injection replaces the waits.
        let runClock = context.io.clock
        injection = Self.injected
        if let injection {
            let wait = injection.wait
            clock = RetryClock(now: { runClock.now().seconds }, monotonic: runClock.monotonicNanoseconds, pause: wait)
            bulkClock = injection.bulkClock
        } else {
            clock = RetryClock(runClock)
            bulkClock = BulkClock(runClock)
        }
    }

    /// The transport for `maxConnections` keep-alive connections (a worker each), with the run's `--timeout`.
    public func transport(maxConnections: Int = 8) -> any HTTPExchange {
        injection?.transport ?? Self.liveTransport(timeout: Double(options.timeout), maxConnections: maxConnections)
    }

    /// libcurl: the one `HTTPTransport` a tool builds.
    static func liveTransport(timeout: Double, maxConnections: Int) -> HTTPTransport {
        HTTPTransport(timeout: timeout, maxConnections: maxConnections)
    }

    /// The session client for this run: memory-only with STARLINE_TOKEN, else backed by the session store. A
    /// command that will talk to the server passes `network: true`, so libcurl (~9 ms to load) is loaded on a
    /// thread while the store is read (see `CurlLibrary.preload`). `custodian`: the key custodian a sign-in
    /// asked for (nil: the store's recorded one).
    @MainActor
    public func client(network: Bool = false, custodian: KeyCustodian? = nil) throws -> StarlightClient {
        // First: the load (about 16 M instructions) overlaps opening the store, its WAL recovery and unsealing,
        // which came before it and made a send or a restore wait for both in turn.
        if network && injection == nil { HTTPTransport.preloadLibrary() }
        let configuration = StarlightClient.Configuration(api: options.api, appId: options.appId, timeout: Double(options.timeout))
        let transport = transport(maxConnections: 8)
        let client: StarlightClient
        if let token = context.environment["STARLINE_TOKEN"], !token.isEmpty {
            client = StarlightClient(configuration: configuration, store: nil, transport: transport, clock: clock)
            client.adoptMemoryToken(token)
        } else {
            let key = StoreKey(api: options.api, appId: options.appId, service: options.service)
            // Storage faults (tests) are read here, in the tool layer, and passed in: the store never reads the environment for them.
            let store = try SessionStore(
                paths: context.paths, key: key, environment: context.environment,
                storageFaults: try StorageFaults(environment: context.environment), preferredCustodian: custodian)
            client = StarlightClient(configuration: configuration, store: store, transport: transport, clock: clock)
        }
        if let path = options.eventsPath { try PlatformToolSupport.attachEvents(client, path: path, context: context) }
        return client
    }
}
