#if canImport(Glibc)
import Glibc
#endif

/// Where a command's results and messages go: data on stdout, status and errors on stderr (gh style).
public final class Output: @unchecked Sendable {
    // @unchecked: a command writes from one thread at a time; batch workers hand results back in order.
    public enum Mode: Sendable, Equatable { case pretty, compact, jsonLines }

    public var mode: Mode
    /// Progress and warnings are shown when stderr is a terminal, or with --progress.
    public var showsProgress: Bool
    public let stdoutIsTerminal: Bool
    public let stderrIsTerminal: Bool
    private var buffer: [UInt8] = []

    public init(mode: Mode? = nil, progress: Bool = false) {
        stdoutIsTerminal = isatty(STDOUT_FILENO) == 1
        stderrIsTerminal = isatty(STDERR_FILENO) == 1
        self.mode = mode ?? (stdoutIsTerminal ? .pretty : .compact)
        showsProgress = progress || stderrIsTerminal
        buffer.reserveCapacity(64 * 1024)
    }

    /// Output mode from `--pretty`, `--compact` and `--jsonl` (the last two win over a terminal's default).
    public convenience init(_ arguments: ParsedArguments) {
        let mode: Mode? = arguments.flag("jsonl") ? .jsonLines : arguments.flag("compact") ? .compact : arguments.flag("pretty") ? .pretty : nil
        self.init(mode: mode, progress: arguments.flag("progress"))
    }

    /// One JSON document (or one JSON Lines record in `--jsonl` mode).
    public func emit(_ value: JSON) {
        let text = value.serialized(mode == .pretty ? .pretty : .compact)
        write(text + "\n")
    }

    /// One record of a stream: always a compact line.
    public func emitLine(_ value: JSON) {
        write(value.serialized(.compact) + "\n")
    }

    public func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 64 * 1024 { flush() }
    }

    public func writeBytes(_ bytes: [UInt8]) {
        flush()
        bytes.withUnsafeBytes { _ = FileBytes.write(fd: STDOUT_FILENO, $0) }
    }

    public func flush() {
        guard !buffer.isEmpty else { return }
        buffer.withUnsafeBytes { _ = FileBytes.write(fd: STDOUT_FILENO, $0) }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Human progress: stderr, only on a terminal unless --progress.
    public func progress(_ message: String) {
        guard showsProgress else { return }
        Output.writeStderr(message + "\n")
    }

    /// What a person must act on: stderr, always.
    public func notice(_ message: String) {
        Output.writeStderr(message + "\n")
    }

    public static func writeStderr(_ text: String) {
        var t = text
        t.withUTF8 { _ = FileBytes.write(fd: STDERR_FILENO, UnsafeRawBufferPointer($0)) }
    }
}
