#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineMemory

/// A file to attach: its descriptor (closed with the value), the name it gets in the vault, and the path for
/// messages. `-` is stdin, which needs --name.
final class AttachmentInput {
    let fd: Int32
    let name: String
    let path: String
    private let owned: Bool

    private init(fd: Int32, name: String, path: String, owned: Bool) {
        self.fd = fd
        self.name = name
        self.path = path
        self.owned = owned
    }

    deinit { if owned { close(fd) } }

    static func open(_ path: String, name: String? = nil) throws -> AttachmentInput {
        if path == "-" {
            guard let name else { throw StarlineError(.usage, "an attachment read from stdin needs --name NAME") }
            return AttachmentInput(fd: 0, name: name, path: "stdin", owned: false)
        }
        // Opened once and read from this descriptor. O_NONBLOCK: a FIFO at the path is refused below instead of
        // blocking in open until someone writes to it (stdin, `-`, is the way to attach a stream).
        let (fd, info) = try InputFile.openExamined(path, failure: "cannot read the file to attach, \(path)")
        guard info.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(fd)
            throw StarlineError(
                .usage, "\(path) is not a regular file (attach a stream with - and --name)", details: .object([("path", .string(path))]))
        }
        InputFile.makeBlocking(fd)
        let base = path.split(separator: "/").last.map(String.init) ?? path
        return AttachmentInput(fd: fd, name: name ?? base, path: path, owned: true)
    }
}

/// `sl-memory attach ID FILE|-`.
enum AttachCommand: Command {
    static let name = Option<String?>.string(
        "name", "NAME", help: "The attachment's name in the vault (default: the file's name; required for -).")
    static let replace = Option<Bool>.flag("replace", help: "Replace an attachment of the same name.")
    static let spec = CommandSpec(
        "attach", abstract: "Attach a file to a note (streamed and encrypted in chunks; any size)",
        options: [name.spec, replace.spec],
        arguments: [NoteRecord.idArgument, ArgumentSpec("FILE|-", help: "The file, or - for stdin (with --name).")],
        examples: [
            Example("sl-memory attach 3f2a scan.pdf", "Attach a PDF."),
            Example("tar c notes/ | sl-memory attach 3f2a - --name notes.tar", "Attach a stream.")
        ])
    struct Options { var memory: MemoryOptions; var id: String; var file: String; var name: String?; var replace: Bool }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            memory: try MemoryOptions(arguments), id: arguments.positionals[0], file: arguments.positionals[1],
            name: try arguments[name], replace: try arguments[replace])
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let input = try AttachmentInput.open(options.file, name: options.name)
        let vault = try VaultAccess.open(options.memory, context)
        let note = try vault.attach(options.id, from: input.fd, name: input.name, inputName: input.path, replace: options.replace)
        context.output.emit(NoteRecord.note(note))
        return .ok
    }
}

/// `sl-memory get ID [NAME] [-o FILE]`.
enum GetCommand: Command {
    static let output = Option<String?>.string(
        "output", short: "o", "FILE",
        help: """
            Write the attachment to FILE (a regular file is replaced only once it is complete and verified; a device or \
            FIFO is written in place) instead of stdout.
            """,
        completion: .file(extensions: []))
    static let spec = CommandSpec(
        "get", abstract: "Stream an attachment to stdout or a file, authenticating every chunk and checking its size",
        discussion: """
            On stdout the bytes are written as they are decrypted and verified chunk by chunk; a damaged file stops the \
            stream with exit 12 (VAULT_CORRUPT naming the attachment). With -o the file appears only when the whole \
            attachment verified; the record printed on stdout then describes it.
            """,
        options: [output.spec],
        arguments: [
            NoteRecord.idArgument,
            ArgumentSpec("NAME", help: "The attachment's name; may be left out when the note has exactly one.", optional: true)
        ])
    struct Options { var memory: MemoryOptions; var id: String; var name: String?; var output: String? }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            memory: try MemoryOptions(arguments), id: arguments.positionals[0], name: arguments.positionals.dropFirst().first,
            output: try arguments[output])
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let vault = try VaultAccess.open(options.memory, context)
        let name = try options.name ?? NoteRecord.onlyAttachment(of: options.id, in: vault)
        guard let path = options.output else {
            guard let sink = context.io.stdout as? FileDescriptorSink else {
                throw StarlineError(.usage, "get without -o needs stdout to be a file descriptor")
            }
            _ = try vault.getAttachment(options.id, name: name, to: sink.fd)
            return .ok
        }
        let attachment = try CompletedFile.write(to: path) { fd in try vault.getAttachment(options.id, name: name, to: fd) }
        var record = NoteRecord.attachment(attachment)
        record.set("file", .string(path))
        context.output.emit(record)
        return .ok
    }
}
