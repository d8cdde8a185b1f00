#if canImport(Glibc)
import Glibc
#endif

/// Secrets a command reads — passwords, codes, passphrases — never from argv (any local user can read a
/// process's arguments): from the terminal without echo, from a descriptor the caller names
/// (`--password-fd N`), or from stdin when it is not a terminal, one secret a line.
public struct SecretInput {
    /// Where the secrets come from.
    public enum Source: Sendable {
        /// Prompted on /dev/tty, echo off.
        case terminal
        /// Lines read from this descriptor.
        case fileDescriptor(Int32)
        /// Lines of captured bytes (stdin of an in-process run).
        case bytes([UInt8])
    }

    /// A secret line is at most this long: a password is not a file.
    public static let maxLineBytes = 4096

    private let source: Source
    private var lines: [String]?
    private var next = 0

    public init(_ source: Source) { self.source = source }

    /// The source a command uses: `--password-fd N` if given, else the terminal when stdin is one, else stdin.
    public static func source(fd: Int?, io: IOStreams) -> Source {
        if let fd { return .fileDescriptor(Int32(fd)) }
        if io.stdinIsTerminal { return .terminal }
        if let fd = io.stdin.fileDescriptor { return .fileDescriptor(fd) }
        if case .bytes(let bytes) = io.stdin { return .bytes(bytes) }
        return .terminal
    }

    /// The next secret: prompted with `prompt` on a terminal, else the next line. Empty is USAGE.
    public mutating func read(_ prompt: String, what: String) throws -> String {
        let value: String
        switch source {
        case .terminal: value = try Self.prompt(prompt)
        case .fileDescriptor(let fd):
            if lines == nil {
                lines = try Self.lines(try FileBytes.read(fd: fd, name: "the \(what) input", maxBytes: 16 * Self.maxLineBytes))
            }
            value = try nextLine(what)
        case .bytes(let bytes):
            if lines == nil { lines = try Self.lines(bytes) }
            value = try nextLine(what)
        }
        guard !value.isEmpty else { throw StarlineError(.usage, "the \(what) is empty") }
        return value
    }

    private mutating func nextLine(_ what: String) throws -> String {
        guard let lines, next < lines.count else {
            throw StarlineError(.usage, "no \(what) given: one secret a line is read (old password, then new)")
        }
        defer { next += 1 }
        return lines[next]
    }

    static func lines(_ bytes: [UInt8]) throws -> [String] {
        try bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            let trimmed = line.last == 0x0D ? line.dropLast() : line[...]
            guard trimmed.count <= maxLineBytes, let text = String(validating: trimmed, as: UTF8.self) else {
                throw StarlineError(.usage, "a secret line is longer than \(maxLineBytes) bytes or not UTF-8")
            }
            return text
        }
    }

    /// One line from /dev/tty with echo off; echo is restored afterwards, and by a signal meanwhile.
    /// `otherwise` names the command's other ways to give the secret, for the error when there is no terminal.
    public static func prompt(_ prompt: String, otherwise: String = "on stdin or with --password-fd N") throws -> String {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw StarlineError(.usage, "no terminal to ask for the secret: give it \(otherwise)") }
        defer { close(fd) }
        var saved = termios()
        guard tcgetattr(fd, &saved) == 0 else {
            throw StarlineError(.usage, "cannot read the terminal's settings: \(String(cString: strerror(errno)))")
        }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        _ = Array(prompt.utf8).withUnsafeBytes { FileBytes.write(fd: fd, $0) }
        guard tcsetattr(fd, TCSAFLUSH, &quiet) == 0 else { throw StarlineError(.usage, "cannot turn the terminal's echo off") }
        let restore = saved
        // Ctrl-C at the prompt must not leave the terminal without echo.
        let registration = Interrupts.onInterrupt {
            var settings = restore
            let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
            if tty >= 0 { _ = tcsetattr(tty, TCSAFLUSH, &settings); close(tty) }
        }
        defer {
            var settings = restore
            _ = tcsetattr(fd, TCSAFLUSH, &settings)
            registration.cancel()
        }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = Glibc.read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 || byte == 0x0A { break }
            bytes.append(byte)
            if bytes.count > maxLineBytes { throw StarlineError(.usage, "the secret is longer than \(maxLineBytes) bytes") }
        }
        if bytes.last == 0x0D { bytes.removeLast() }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw StarlineError(.usage, "the secret is not UTF-8") }
        return text
    }
}
