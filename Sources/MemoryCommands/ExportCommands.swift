#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineCrypto
import StarlineMemory

/// The share code of an export: 24 Crockford base32 characters (120 random bits) in groups of four. It is the
/// age passphrase, so `age -d` opens the file with it.
enum ShareCode {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    static func generate() -> String {
        var bits = Sodium.randomBytes(15)
        defer { Sodium.wipe(&bits) }
        var characters: [Character] = []
        for i in 0..<24 {
            let bit = i * 5
            let word = (UInt16(bits[bit / 8]) << 8) | UInt16(bit / 8 + 1 < bits.count ? bits[bit / 8 + 1] : 0)
            characters.append(alphabet[Int((word >> (11 - UInt16(bit % 8))) & 0x1F)])
            if i % 4 == 3 && i < 23 { characters.append("-") }
        }
        return String(characters)
    }

    /// What a person typed: spaces dropped, upper case, the dashes put back into a bare 24-character code.
    static func normalize(_ text: String) -> String {
        let compact = text.uppercased().filter { !$0.isWhitespace }
        guard !compact.contains("-"), compact.count == 24 else { return compact }
        var out = ""
        for (i, c) in compact.enumerated() {
            if i > 0 && i % 4 == 0 { out.append("-") }
            out.append(c)
        }
        return out
    }
}

/// `sl-memory export -o FILE`.
enum ExportCommand: Command {
    static let output = Option<String?>.string(
        "output", short: "o", "FILE",
        help: """
            Write the export to FILE (a regular file appears only when complete; a device or FIFO is written in place, \
            without --verify).
            """, completion: .file(extensions: ["age"]))
    static let armor = Option<Bool>.flag("armor", short: "a", help: "ASCII-armored age file (PEM-like text) instead of binary.")
    static let shareCodeFD = Option<Int?>.integer(
        "share-code-fd", "N", help: "Write the share code (and a newline) to file descriptor N instead of stderr.", range: 0...65535)
    static let verify = Option<Bool>.flag(
        "verify", help: "Open the written file again with the share code and check the whole package before reporting success.")
    static let spec = CommandSpec(
        "export", abstract: "Export every note and attachment as an age file opened by a generated share code",
        discussion: """
            The export is an age v1 file (age-encryption.org/v1) with one scrypt stanza, work factor 18, whose passphrase \
            is a generated share code of 120 random bits, printed on stderr (always) and in the result only with \
            --show-secrets. Anyone with the file and the code can read it: `age -d FILE` asks for the code. Inside is a \
            JSON Lines package (docs/formats.md, \"Memory export\"). Export and import are local operations: the \
            platform's Account service has no redeem route, so a share code is not a server-side transfer (W3).
            """,
        options: [output.spec, armor.spec, shareCodeFD.spec, verify.spec, StandardOptions.showSecrets.spec, StandardOptions.quiet],
        examples: [
            Example("sl-memory export -o memory.age", "Export; the share code is on stderr."),
            Example("age -d -o memory.jsonl memory.age", "Open it with age (it asks for the share code).")
        ])
    struct Options {
        var memory: MemoryOptions; var output: String; var armor: Bool; var shareCodeFD: Int?; var verify: Bool; var showSecrets: Bool
    }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        guard let output = try arguments[output], !output.isEmpty else { throw StarlineError(.usage, "export needs -o FILE") }
        return Options(
            memory: try MemoryOptions(arguments), output: output, armor: try arguments[armor], shareCodeFD: try arguments[shareCodeFD],
            verify: try arguments[verify], showSecrets: try arguments[StandardOptions.showSecrets])
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let vault = try VaultAccess.open(options.memory, context)
        let code = ShareCode.generate()
        let passphrase = SecretBytes(copying: Array(code.utf8))
        let verify: ((String, MemoryExportPackage.Summary) throws -> Void)? =
            !options.verify
            ? nil
            : { partial, summary in
                let file = try ExportFile.open(partial)
                let checked = try MemoryExportPackage.check { try file.decrypt(AgeDecryptor(passphrase: passphrase), to: $0) }
                guard checked == summary else {
                    throw StarlineError(
                        .data, "the written export does not hold what was exported (\(checked.notes) of \(summary.notes) notes)")
                }
            }
        let summary = try CompletedFile.write(to: options.output, check: verify) { fd in
            let encryptor = try AgeEncryptor(
                passphrase: passphrase, workFactor: AgeEncryptor.defaultWorkFactor,
                armored: options.armor, output: .fileDescriptor(fd, name: options.output))
            let summary = try MemoryExportPackage.write(vault, exportedAt: context.io.now()) { try encryptor.write($0) }
            try encryptor.finish()
            return summary
        }
        // What a person must act on goes to stderr, TTY or not (README, Conventions) — or where they said.
        if let fd = options.shareCodeFD {
            guard Array((code + "\n").utf8).withUnsafeBytes({ FileBytes.write(fd: Int32(fd), $0) }) else {
                throw FileBytes.posixError("cannot write the share code to descriptor \(fd)", path: "fd \(fd)")
            }
        } else {
            try? context.io.stderr.write("Share code: \(code)\nOpen the export with: age -d \(options.output)\n")
        }
        var result: [(String, JSON)] = [
            ("file", .string(options.output)), ("notes", .int(summary.notes)), ("attachments", .int(summary.attachments)),
            ("format", .string("age")), ("workFactor", .int(AgeEncryptor.defaultWorkFactor)), ("armored", .bool(options.armor)),
            ("verified", .bool(options.verify))
        ]
        if options.showSecrets { result.append(("shareCode", .string(code))) }
        context.output.emit(.object(result))
        return .ok
    }
}

/// An export to read, opened once: every pass reads this descriptor from its start, so a file put in place of
/// the path meanwhile (whoever can write its directory can rename one over it) is never read. Symbolic links
/// are followed — an export linked from ~/Downloads is as good as the file — because nothing here trusts the
/// file: every byte of it is authenticated by the share code, and the import commits only after its last one.
/// Only a regular file: it is read twice (checked whole, then imported), which a pipe or device cannot be.
final class ExportFile {
    let fd: Int32
    let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// O_NONBLOCK: a FIFO at the path is refused at once instead of waiting for a writer at open.
    static func open(_ path: String) throws -> ExportFile {
        let (fd, info) = try InputFile.openExamined(path, failure: "cannot read \(path)")
        let file = ExportFile(fd: fd, path: path)
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StarlineError(
                .usage, "\(path) is not a regular file: an export is read twice (checked whole, then imported), so it must be a file",
                details: .object([("path", .string(path))]))
        }
        InputFile.makeBlocking(fd)
        return file
    }

    /// Decrypts the whole file, from its first byte, into `writer`.
    func decrypt(_ decryptor: AgeDecryptor, to writer: AgeWriter) throws {
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw FileBytes.posixError("cannot read \(path)", path: path) }
        try decryptor.decrypt(from: .fileDescriptor(fd, name: path), to: writer)
    }
}

/// `sl-memory import FILE`.
enum ImportCommand: Command {
    static let shareCodeFD = Option<Int?>.integer(
        "share-code-fd", "N", help: "Read the share code from file descriptor N (else STARLINE_MEMORY_SHARE_CODE, else the terminal).",
        range: 0...65535)
    static let shareCodeFile = Option<String?>.string(
        "share-code-file", "FILE", help: "Read the share code from FILE, a regular file of yours that group and others cannot access.",
        completion: .file(extensions: []))
    static let dryRun = Option<Bool>.flag(
        "dry-run",
        help:
            "Check the whole export and list the notes it would add (at most the first \(MemoryExportPackage.previewTitles) titles, each cut to \(MemoryExportPackage.previewTitleScalars) characters), without adding them."
    )
    static let maxWorkFactor = Option<Int>.integer(
        "max-work-factor", "N", help: "Refuse an age file whose scrypt work factor is above N (as age does).",
        default: AgeDecryptor.defaultMaximumWorkFactor, range: 1...30)
    static let spec = CommandSpec(
        "import", abstract: "Import an export (age file and share code) as new notes",
        discussion: """
            The file is opened once and read twice from that descriptor: first the whole of it is checked — the age \
            header and every chunk, then every line of the package, each attachment's size and digest — then it is read \
            again and imported in one transaction, which commits only after the last byte checked again and matched the \
            first reading: a damaged, truncated or changed export adds nothing. Notes get new ids and keep their times. \
            Exit 13 for a wrong share code, 12 for a damaged file or package.
            """,
        options: [shareCodeFD.spec, shareCodeFile.spec, maxWorkFactor.spec, dryRun.spec],
        arguments: [ArgumentSpec("FILE", help: "The export (binary or armored), a regular file.")])
    struct Options {
        var memory: MemoryOptions; var file: String; var shareCodeFD: Int?; var shareCodeFile: String?; var maxWorkFactor: Int;
        var dryRun: Bool
    }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        let file = arguments.positionals[0]
        if file == "-" { throw StarlineError(.usage, "import needs a file, not stdin: it is read twice (checked whole, then imported)") }
        let options = Options(
            memory: try MemoryOptions(arguments), file: file, shareCodeFD: try arguments[shareCodeFD],
            shareCodeFile: try arguments[shareCodeFile],
            maxWorkFactor: try arguments[maxWorkFactor], dryRun: try arguments[dryRun])
        if options.shareCodeFD != nil && options.shareCodeFile != nil {
            throw StarlineError(.usage, "--share-code-fd and --share-code-file cannot be used together")
        }
        return options
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let file = try ExportFile.open(options.file)
        let typed = try shareCode(options, context)
        // As typed first (an age -p passphrase is any text); then as a share code is written (upper case, dashes).
        var decryptor = AgeDecryptor(passphrase: SecretBytes(copying: Array(typed.utf8)), maximumWorkFactor: options.maxWorkFactor)
        // Pass 1: everything checked, nothing written.
        let checked: MemoryExportPackage.Summary
        do {
            checked = try MemoryExportPackage.check(listingTitles: options.dryRun) { try file.decrypt(decryptor, to: $0) }
        } catch let error as StarlineError where error.code == .ageWrongPassphrase && ShareCode.normalize(typed) != typed {
            decryptor = AgeDecryptor(
                passphrase: SecretBytes(copying: Array(ShareCode.normalize(typed).utf8)), maximumWorkFactor: options.maxWorkFactor)
            checked = try MemoryExportPackage.check(listingTitles: options.dryRun) { try file.decrypt(decryptor, to: $0) }
        }
        if options.dryRun {
            context.output.emit(
                .object([
                    ("file", .string(options.file)), ("dryRun", .bool(true)),
                    ("wouldImport", .object([("notes", .int(checked.notes)), ("attachments", .int(checked.attachments))])),
                    ("notes", .array(checked.titles.map(JSON.string))),
                    ("notesNotListed", .int(checked.notes - checked.titles.count))
                ]))
            return .ok
        }
        let vault = try VaultAccess.open(options.memory, context)
        // Pass 2, from the same descriptor, in one transaction that commits only if it reads what pass 1 checked.
        let summary = try MemoryExportPackage.importPackage(into: vault, expecting: checked) { try file.decrypt(decryptor, to: $0) }
        context.output.emit(
            .object([
                ("file", .string(options.file)),
                ("imported", .object([("notes", .int(summary.notes)), ("attachments", .int(summary.attachments))]))
            ]))
        return .ok
    }

    static func shareCode(_ options: Options, _ context: CommandContext) throws -> String {
        let text: String
        if let fd = options.shareCodeFD {
            text = try SecretLines.split(try FileBytes.read(fd: Int32(fd), name: "the share code descriptor", maxBytes: 4096)).first ?? ""
        } else if let path = options.shareCodeFile {
            text = try SecretLines.readPrivateFile(path, what: "share code file").first ?? ""
        } else if let value = context.environment["STARLINE_MEMORY_SHARE_CODE"], !value.isEmpty {
            text = value
        } else {
            text = try SecretInput.prompt(
                "Share code: ", otherwise: "with --share-code-fd N, --share-code-file PATH or STARLINE_MEMORY_SHARE_CODE")
        }
        guard !text.isEmpty else { throw StarlineError(.usage, "the share code is empty") }
        return text
    }
}
