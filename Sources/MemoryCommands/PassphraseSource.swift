#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineCrypto

/// Where `sl-memory` reads the vault passphrase (W2): `--passphrase-fd N`, `--passphrase-file FILE`
/// (refused when group/world-readable, as ssh refuses a readable key), `STARLINE_MEMORY_PASSPHRASE`, or the
/// terminal without echo. Never argv: any local user can read a process's arguments. One passphrase a line
/// from a descriptor or file (`passwd` reads the current one, then the new one).
struct PassphraseSource {
    static let fd = Option<Int?>.integer(
        "passphrase-fd", "N", help: "Read the passphrase from file descriptor N (one a line: passwd reads the current, then the new one).",
        range: 0...65535)
    static let file = Option<String?>.string(
        "passphrase-file", "FILE", help: "Read the passphrase from FILE, a regular file of yours that group and others cannot access.",
        completion: .file(extensions: []))
    static let environmentVariable = "STARLINE_MEMORY_PASSPHRASE"
    static let specs: [OptionSpec] = [fd.spec, file.spec]

    enum Origin { case descriptor(Int32), file(String), environment(String), terminal, none }
    let origin: Origin
    private var lines: [String]?
    private var next = 0

    /// What the options say; resolved against the environment and terminal when the command runs.
    struct Given { var fd: Int?; var file: String? }

    static func given(_ arguments: ParsedArguments) throws -> Given {
        let fd = try arguments[Self.fd], file = try arguments[Self.file]
        if fd != nil && file != nil { throw StarlineError(.usage, "--passphrase-fd and --passphrase-file cannot be used together") }
        return Given(fd: fd, file: file)
    }

    init(_ given: Given, environment: Environment, stdinIsTerminal: Bool) {
        let fd = given.fd, file = given.file
        if let fd {
            origin = .descriptor(Int32(fd))
        } else if let file {
            origin = .file(file)
        } else if let text = environment[Self.environmentVariable], !text.isEmpty {
            origin = .environment(text)
        } else if stdinIsTerminal || Self.hasTerminal {
            origin = .terminal
        } else {
            origin = .none
        }
    }

    /// True when the passphrase was given explicitly (fd, file, environment): it is then always checked, even
    /// while an agent holds the key.
    var isExplicit: Bool {
        switch origin {
        case .descriptor, .file, .environment: true
        case .terminal, .none: false
        }
    }

    static let otherWays = "with --passphrase-fd N, --passphrase-file PATH or STARLINE_MEMORY_PASSPHRASE"

    var canPrompt: Bool { if case .terminal = origin { true } else { false } }

    /// The next passphrase; `prompt` is shown on the terminal. `confirm`: a terminal asks twice (a new one).
    mutating func read(_ prompt: String, confirm: Bool = false) throws -> SecretBytes {
        let text: String
        switch origin {
        case .descriptor(let fd):
            if lines == nil {
                lines = try SecretLines.split(try FileBytes.read(fd: fd, name: "the passphrase descriptor", maxBytes: 64 * 1024))
            }
            text = try nextLine()
        case .file(let path):
            if lines == nil {
                lines = try SecretLines.readPrivateFile(path, what: "passphrase file")
            }
            text = try nextLine()
        case .environment(let value):
            text = value
        case .terminal:
            text = try SecretInput.prompt(prompt, otherwise: Self.otherWays)
            if confirm, try SecretInput.prompt("Again: ", otherwise: Self.otherWays) != text {
                throw StarlineError(.usage, "the two passphrases differ")
            }
        case .none:
            throw StarlineError(
                .locked,
                """
                no passphrase: give it with --passphrase-fd, --passphrase-file or STARLINE_MEMORY_PASSPHRASE, run on a \
                terminal, or unlock the vault first (sl-memory unlock)
                """)
        }
        guard !text.isEmpty else { throw StarlineError(.usage, "the passphrase is empty") }
        return SecretBytes(copying: Array(text.utf8))
    }

    /// Tries typed at the terminal before a wrong passphrase fails the command, as ssh and gpg give.
    static let terminalTries = 3

    /// `open` with the next passphrase. At the terminal a passphrase that `open` finds wrong (WRONG_PASSPHRASE)
    /// is asked for again, `terminalTries` in all, and the last error is thrown; a descriptor, a file or the
    /// environment fails at once: a script's passphrase does not get better by asking again, and each try costs
    /// an Argon2id derivation.
    mutating func attempt<T>(_ prompt: String, _ open: (SecretBytes) throws -> T) throws -> T {
        var tries = 1
        var ask = prompt
        while true {
            let secret = try read(ask)
            do {
                return try open(secret)
            } catch let error as StarlineError where error.code == .wrongPassphrase && canPrompt && tries < Self.terminalTries {
                tries += 1
                ask = "Wrong passphrase, try again. " + prompt
            }
        }
    }

    private mutating func nextLine() throws -> String {
        guard let lines, next < lines.count, !lines[next].isEmpty else {
            throw StarlineError(.usage, "no passphrase given: one passphrase a line is read (passwd: the current one, then the new one)")
        }
        defer { next += 1 }
        return lines[next]
    }

    private static var hasTerminal: Bool {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        if fd < 0 { return false }
        close(fd)
        return true
    }

}

/// Lines of a secret input: LF or CRLF, at most 4 KiB each; not UTF-8 is a usage error.
enum SecretLines {
    /// The lines of a private file of ours, at most 64 KiB: opened once and checked on that descriptor — a
    /// regular file, owned by this user, with no group or other permission bits — before a byte of it is read,
    /// so a file swapped in at the path cannot slip through. Anything else is INSECURE_PERMISSIONS (exit 10),
    /// as ssh refuses a key others could read or replace: a FIFO or device at the path (which could also block
    /// or never end; a pipe goes to the -fd option), another user's file (root reads it whatever its mode).
    static func readPrivateFile(_ path: String, what: String) throws -> [String] {
        // Non-blocking open: a FIFO is refused below instead of blocking in open until someone writes it.
        let (fd, info) = try InputFile.openExamined(path, failure: "cannot read the \(what) \(path)")
        defer { close(fd) }
        func refuse(_ problem: String) -> StarlineError {
            StarlineError(
                .insecurePermissions, "the \(what) \(path) \(problem)",
                details: .object([
                    ("path", .string(path)), ("mode", .string(String(info.st_mode & 0o7777, radix: 8))),
                    ("owner", .int(Int64(info.st_uid)))
                ]))
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw refuse("is not a regular file; a secret is read from a private file, or from a descriptor (the -fd option)")
        }
        guard info.st_uid == geteuid() else {
            throw refuse("belongs to uid \(info.st_uid), not to you (uid \(geteuid())); it was not read")
        }
        if info.st_mode & 0o077 != 0 {
            throw refuse("is accessible by group or others (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        InputFile.makeBlocking(fd)
        return try split(try FileBytes.read(fd: fd, name: "the \(what) \(path)", maxBytes: 64 * 1024))
    }

    static func split(_ bytes: [UInt8]) throws -> [String] {
        try bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            var line = line
            if line.last == 0x0D { line = line.dropLast() }
            guard line.count <= SecretInput.maxLineBytes, let text = String(validating: line, as: UTF8.self) else {
                throw StarlineError(.usage, "a passphrase line is longer than \(SecretInput.maxLineBytes) bytes or not UTF-8")
            }
            return text
        }
    }
}
