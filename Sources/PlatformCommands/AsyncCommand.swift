#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlinePlatform
import StarlineHTTP

// Here, not in StarlineCore: every object file of a library is linked into each tool that uses the library,
// and an async function pulls in the Swift concurrency runtime and libdispatch (whose tables cost every start
// of sl-qr or sl-tasks ~0.5 ms of relocations). Only the networked tools are async.

/// A command of a networked tool: the `Command` shape with a `run` that awaits on the main actor (S1:
/// `StarlightClient` is main-actor isolated).
public protocol AsyncCommand: SendableMetatype {
    associatedtype Options
    static var spec: CommandSpec { get }
    static func options(_ arguments: ParsedArguments) throws -> Options
    @MainActor static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus
}

public typealias AsyncCommandRunner = @MainActor @Sendable (ParsedArguments, CommandContext) async throws -> ExitStatus

extension CommandTree where Runner == AsyncCommandRunner {
    public static func command<C: AsyncCommand>(_ command: C.Type, subcommands: [CommandTree] = []) -> CommandTree {
        CommandTree(
            C.spec, runner: { arguments, context in try await C.run(try C.options(arguments), context) },
            options: { _ = try C.options($0) },
            subcommands: subcommands)
    }
}

extension ToolMain {
    /// Runs an async tool in-process on `io` and returns its status (tests use it). `network`: every client
    /// the run's `PlatformFactory` builds talks to its transport and waits on its clocks (a test's stub).
    @MainActor
    public static func execute(
        _ tool: Tool<AsyncCommandRunner>, _ words: [String], io: IOStreams,
        network: PlatformFactory.Injection
    ) async -> ExitStatus {
        await PlatformFactory.$injected.withValue(network) { await execute(tool, words, io: io) }
    }

    /// Runs an async tool in-process on `io` and returns its status (tests use it).
    @MainActor
    public static func execute(_ tool: Tool<AsyncCommandRunner>, _ words: [String], io: IOStreams) async -> ExitStatus {
        switch prepare(tool, words, io: io) {
        case .exit(let status): return status
        case .run(let context, let runner):
            // The CA bundle every HTTPS request of this run trusts (STARLINE_CA_BUNDLE, the profile's caBundle,
            // SSL_CERT_FILE, or the system store), read once from this run's environment and profile.
            TLSTrust.configure(TLSTrust.resolve(environment: context.environment, profile: context.arguments.profile))
            do {
                return finish(context, .success(try await runner(context.arguments, context)))
            } catch {
                return finish(context, .failure(error))
            }
        }
    }

    @MainActor
    public static func main(_ tool: Tool<AsyncCommandRunner>) async -> Never {
        CoreDumps.disable()
        Interrupts.install()
        let status = await execute(tool, Array(CommandLine.arguments.dropFirst()), io: .process())
        if status != .brokenPipe {
            // _exit, not exit: nothing is left to do. Our output is written with write(2) and flushed by
            // `finish`, stdio is flushed here, SQLite has committed (a connection left open loses nothing), and no
            // exit handler is ours — exit() would run OpenSSL's cleanup for libcurl (a quarter of a millisecond
            // of freeing memory the kernel frees anyway, after a send or a restore has answered) or wait for a
            // background dlopen (glibc's exit handlers take the dynamic loader's lock) this run no longer needs.
            fflush(nil)
            _exit(status.rawValue)
        }
        exitProcess(status)
    }
}
