#if canImport(Glibc)
import Glibc
#endif
import CSignals

/// Everything a command reads from or writes to the world outside its arguments: standard input, output
/// and error, whether each is a terminal, the environment and the clock (gh's `iostreams`). A tool's
/// process gets `IOStreams.process`; a test gets `IOStreams.capturing(…)` and reads back the bytes, so a
/// whole tool can run in-process (`ToolMain.execute`).
public final class IOStreams: Sendable {
    public let stdin: InputSource
    public let stdout: any ByteSink
    public let stderr: any ByteSink
    public let stdinIsTerminal: Bool
    public let stdoutIsTerminal: Bool
    public let stderrIsTerminal: Bool
    public let environment: Environment
    /// The width of the terminal on stdout in columns, when stdout is one and says (tables fit it).
    public let terminalColumns: Int?
    /// The run's clock (wall time, monotonic time, waits): what every other clock of the run is a view of — the
    /// retries' (`RetryClock`), the bulk engine's (`BulkClock`); a test's fixed time or virtual clock.
    public let clock: StarlineClock

    public init(
        stdin: InputSource, stdout: any ByteSink, stderr: any ByteSink, stdinIsTerminal: Bool, stdoutIsTerminal: Bool,
        stderrIsTerminal: Bool, environment: Environment, terminalColumns: Int? = nil,
        clock: StarlineClock = .system
    ) {
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.stdinIsTerminal = stdinIsTerminal
        self.stdoutIsTerminal = stdoutIsTerminal
        self.stderrIsTerminal = stderrIsTerminal
        self.environment = environment
        self.terminalColumns = terminalColumns
        self.clock = clock
    }

    /// The wall clock (or the test's fixed time).
    public func now() -> Timestamp { clock.now() }

    /// This process's descriptors 0, 1 and 2 and its environment.
    public static func process() -> IOStreams {
        let stdoutIsTerminal = isatty(STDOUT_FILENO) == 1
        let columns = stdoutIsTerminal ? Int(starline_terminal_columns(STDOUT_FILENO)) : 0
        return IOStreams(
            stdin: .fileDescriptor(STDIN_FILENO),
            stdout: FileDescriptorSink(STDOUT_FILENO, name: "standard output", endsProcessWhenClosed: true),
            stderr: FileDescriptorSink(STDERR_FILENO, name: "standard error"),
            stdinIsTerminal: isatty(STDIN_FILENO) == 1, stdoutIsTerminal: stdoutIsTerminal,
            stderrIsTerminal: isatty(STDERR_FILENO) == 1, environment: .process, terminalColumns: columns > 0 ? columns : nil)
    }

    /// Streams for a test: `stdin` is the given bytes, stdout and stderr are captured (read them back from
    /// the returned sinks); nothing is a terminal unless `terminal`.
    public static func capturing(
        stdin: [UInt8] = [], environment: Environment = [:], terminal: Bool = false,
        columns: Int? = nil, now: Timestamp? = nil
    ) -> (io: IOStreams, stdout: CapturingSink, stderr: CapturingSink) {
        let out = CapturingSink(), err = CapturingSink()
        let clock = now.map { now in StarlineClock.system.withWallTime { now } } ?? .system
        let io = IOStreams(
            stdin: .bytes(stdin), stdout: out, stderr: err, stdinIsTerminal: terminal, stdoutIsTerminal: terminal,
            stderrIsTerminal: terminal, environment: environment, terminalColumns: columns, clock: clock)
        return (io, out, err)
    }
}

/// Where standard input comes from.
public enum InputSource: Sendable {
    case fileDescriptor(Int32)
    case bytes([UInt8])

    /// Reads it to the end.
    public func readAll(maxBytes: Int? = nil) throws -> [UInt8] {
        switch self {
        case .fileDescriptor(let fd): return try FileBytes.read(fd: fd, name: "standard input", maxBytes: maxBytes)
        case .bytes(let bytes):
            if let maxBytes, bytes.count > maxBytes {
                throw StarlineError(
                    .data, "standard input is larger than the limit of \(maxBytes) bytes", details: .object([("limit", .int(maxBytes))]))
            }
            return bytes
        }
    }

    /// The descriptor to hand to code that reads incrementally (image loaders with their own limits);
    /// nil for captured bytes.
    public var fileDescriptor: Int32? {
        if case .fileDescriptor(let fd) = self { return fd }
        return nil
    }
}

/// A destination for bytes. A failed write throws: `WRITE_FAILED` (a full disk, EIO), or
/// `ByteSinkError.closed` when the reader went away (EPIPE), which a tool treats as the end of its
/// output, not as an error to report.
public protocol ByteSink: AnyObject, Sendable {
    func write(_ bytes: UnsafeRawBufferPointer) throws
}

public enum ByteSinkError: Error, Equatable {
    /// The reading end of a pipe was closed (`… | head -1`).
    case closed
}

extension ByteSink {
    public func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }
    public func write(_ text: String) throws {
        var text = text
        try text.withUTF8 { try write(UnsafeRawBufferPointer($0)) }
    }
}

/// A file descriptor of this process.
public final class FileDescriptorSink: ByteSink {
    public let fd: Int32
    let name: String
    let endsProcessWhenClosed: Bool

    /// With `endsProcessWhenClosed` (the process's stdout), a closed pipe ends the process at once, by
    /// SIGPIPE, as it ends any Unix tool — also when SIGPIPE was ignored by whoever started us — so a stream
    /// (`sl-qr decode *.png | head -1`) stops working for nobody.
    public init(_ fd: Int32, name: String, endsProcessWhenClosed: Bool = false) {
        self.fd = fd
        self.name = name
        self.endsProcessWhenClosed = endsProcessWhenClosed
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        // FileBytes.write retries partial writes and EINTR; on failure errno says why.
        guard bytes.count > 0, !FileBytes.write(fd: fd, bytes) else { return }
        let code = errno
        // "EPIPE: fd is connected to a pipe or socket whose reading end is closed. When this happens the
        // writing process will also receive a SIGPIPE signal" — unless SIGPIPE is ignored, as a parent may
        // have arranged; either way the output has nobody left to read it.
        if code == EPIPE {
            if endsProcessWhenClosed {
                signal(SIGPIPE, SIG_DFL)
                raise(SIGPIPE)
            }
            throw ByteSinkError.closed
        }
        throw StarlineError(
            .writeFailed, "cannot write \(name): \(String(cString: strerror(code)))",
            details: .object([("errno", .int(Int(code)))]))
    }
}

/// Collects what is written, for tests (and for commands that build output before deciding where it goes).
public final class CapturingSink: ByteSink {
    private let buffer = Locked<[UInt8]>([])
    /// When set, every write fails as a full disk would (`> /dev/full`).
    private let failure: StarlineError?

    public init(failingWith failure: StarlineError? = nil) { self.failure = failure }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        if let failure { throw failure }
        buffer.withLock { $0.append(contentsOf: bytes) }
    }

    public var bytes: [UInt8] { buffer.withLock { $0 } }
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}
