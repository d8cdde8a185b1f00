#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineCrypto
import StarlineMemory

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
        let workFactor = KDFLevel.exportWorkFactor(context)
        let export = try MemoryTransfer.export(
            vault, to: options.output, armored: options.armor, verify: options.verify, exportedAt: context.io.now(), workFactor: workFactor)
        let (summary, code) = (export.summary, export.shareCode)
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
            ("format", .string("age")), ("workFactor", .int(workFactor)), ("armored", .bool(options.armor)),
            ("verified", .bool(options.verify))
        ]
        if options.showSecrets { result.append(("shareCode", .string(code))) }
        context.output.emit(.object(result))
        return .ok
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
        // Pass 1: everything checked, nothing written.
        let checked = try MemoryTransfer.check(
            file, shareCode: try shareCode(options, context), maximumWorkFactor: options.maxWorkFactor, listingTitles: options.dryRun)
        if options.dryRun {
            context.output.emit(
                .object([
                    ("file", .string(options.file)), ("dryRun", .bool(true)),
                    ("wouldImport", .object([("notes", .int(checked.summary.notes)), ("attachments", .int(checked.summary.attachments))])),
                    ("notes", .array(checked.summary.titles.map(JSON.string))),
                    ("notesNotListed", .int(checked.summary.notes - checked.summary.titles.count))
                ]))
            return .ok
        }
        let vault = try VaultAccess.open(options.memory, context)
        // Pass 2, from the same descriptor, in one transaction that commits only if it reads what pass 1 checked.
        let summary = try MemoryTransfer.importChecked(file, checked, into: vault)
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
