#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlinePlatform

// Here, not in StarlineCore: every object file of a library is linked into each tool that uses the library,
// and an async function pulls in the Swift concurrency runtime and libdispatch (whose tables cost every start
// of sl-qr or sl-tasks ~0.5 ms of relocations). Only the networked tools are async.
extension ToolMain {
    public static func runAsync(_ tool: ToolSpec, arguments: [String] = CommandLine.arguments,
                                _ body: (Invocation) async throws -> ExitStatus) async -> Never {
        let status: ExitStatus
        switch prepare(tool, Array(arguments.dropFirst())) {
        case .exit(let s): status = s
        case .run(let invocation):
            do {
                status = try await body(invocation)
                invocation.output.flush()
            } catch {
                invocation.output.flush()
                status = report(error, tool: tool, path: invocation.arguments.path)
            }
        }
        if CurlLibrary.preloadInFlight {
            // exit() would wait for the background dlopen (glibc's exit handlers take the dynamic loader's
            // lock) for a library this run no longer needs. Nothing else is pending: our output is written
            // with write(2) and flushed above, stdio is flushed here, and no exit handler of ours matters.
            fflush(nil)
            _exit(status.rawValue)
        }
        exit(status.rawValue)
    }
}
