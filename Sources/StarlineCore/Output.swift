/// Where a command's results and messages go: data on stdout, status and errors on stderr (gh style).
///
/// Each record is written out as soon as it is complete (line-buffered, as stdio is on a terminal, but for
/// pipes and files too): a JSON Lines stream reaches `tee`, `jq` or a file as its items finish, and a run
/// stopped by a signal leaves every line it printed. Like C stdio, a failure is sticky: the first one is kept
/// (`failure`), later output is dropped, and the tool's runner turns it into `WRITE_FAILED` (exit 10) when
/// the command ends — a full disk is never reported as success. Commands that produce a long stream call
/// `check()` to stop early. Messages to stderr are best-effort: there is nowhere left to report their failure.
public final class Output: @unchecked Sendable {
    // @unchecked: a command writes from one thread at a time; batch workers hand results back in order.
    public enum Mode: Sendable, Equatable { case pretty, compact, jsonLines }

    public var mode: Mode
    /// Whether --pretty, --compact or --jsonl chose `mode` (a list on a terminal is then JSON, not a table).
    public let modeIsExplicit: Bool
    /// Progress and warnings are shown when stderr is a terminal, or with --progress.
    public var showsProgress: Bool
    public let io: IOStreams
    public var stdoutIsTerminal: Bool { io.stdoutIsTerminal }
    public var stderrIsTerminal: Bool { io.stderrIsTerminal }
    /// `-q/--quiet` (`StandardOptions.quiet`): no records on stdout, no progress or notices on stderr; only
    /// errors (`reportError`, and the runner's error line) and raw bytes asked for (`writeBytes`) are written.
    public var quiet = false
    /// The first failure writing stdout (`WRITE_FAILED`, or `ByteSinkError.closed`).
    public private(set) var failure: (any Error)?
    private var buffer: [UInt8] = []
    private static let bufferLimit = 64 * 1024

    public init(io: IOStreams, mode: Mode? = nil, progress: Bool = false) {
        self.io = io
        self.mode = mode ?? (io.stdoutIsTerminal ? .pretty : .compact)
        modeIsExplicit = mode != nil
        showsProgress = progress || io.stderrIsTerminal
        buffer.reserveCapacity(Output.bufferLimit)
    }

    /// One JSON document (or one JSON Lines record in `--jsonl` mode).
    public func emit(_ value: JSON) {
        write(value.serialized(mode == .pretty ? .pretty : .compact) + "\n")
        flush()
    }

    /// One record of a stream: always a compact line.
    public func emitLine(_ value: JSON) {
        write(value.serialized(.compact) + "\n")
        flush()
    }

    public func write(_ text: String) {
        guard failure == nil, !quiet else { return }
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= Output.bufferLimit { flush() }
    }

    /// Bytes as they are (images, pre-serialised documents), after what is buffered.
    public func writeBytes(_ bytes: [UInt8]) {
        flush()
        // Not silenced by `quiet`: bytes are the product asked for (an image on stdout), not a record about it.
        guard failure == nil else { return }
        do { try io.stdout.write(bytes) } catch { failure = error }
    }

    public func flush() {
        guard !buffer.isEmpty else { return }
        defer { buffer.removeAll(keepingCapacity: true) }
        guard failure == nil else { return }
        do { try io.stdout.write(buffer) } catch { failure = error }
    }

    /// Flushes, then throws the first stdout failure, if any.
    public func check() throws {
        flush()
        if let failure { throw failure }
    }

    /// Human progress: stderr, only on a terminal unless --progress.
    public func progress(_ message: String) {
        guard showsProgress else { return }
        notice(message)
    }

    /// What a person must act on: stderr, always. A notice may quote what a server, a file or an image said
    /// (a file name, a payload, a URL): what is hidden in it or would act on the terminal is made visible
    /// (`TerminalText`).
    public func notice(_ message: String) {
        guard !quiet else { return }
        try? io.stderr.write(TerminalText.visibleLines(message) + "\n")
    }

    /// The error object as one compact line on stderr, for commands that also print a result on stdout.
    /// The result is flushed first, so a failed stdout is what gets reported (`WRITE_FAILED`, by the tool's
    /// runner) and a closed pipe stays quiet.
    public func reportError(_ error: StarlineError) {
        flush()
        guard failure == nil else { return }
        try? io.stderr.write(error.json.serialized(.compact) + "\n")
    }
}
