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
    static let output = Option<String?>.string("output", short: "o", "FILE", help: "Write the export to FILE (a regular file appears only when complete; a device or FIFO is written in place, without --verify).", completion: .file(extensions: ["age"]))
    static let armor = Option<Bool>.flag("armor", short: "a", help: "ASCII-armored age file (PEM-like text) instead of binary.")
    static let shareCodeFD = Option<Int?>.integer("share-code-fd", "N", help: "Write the share code (and a newline) to file descriptor N instead of stderr.", range: 0...65535)
    static let verify = Option<Bool>.flag("verify", help: "Open the written file again with the share code and check the whole package before reporting success.")
    static let spec = CommandSpec(
        "export", abstract: "Export every note and attachment as an age file opened by a generated share code",
        discussion: "The export is an age v1 file (age-encryption.org/v1) with one scrypt stanza, work factor 18, whose passphrase is a generated share code of 120 random bits, printed on stderr (always) and in the result only with --show-secrets. Anyone with the file and the code can read it: `age -d FILE` asks for the code. Inside is a JSON Lines package (docs/formats.md, \"Memory export\"). Export and import are local operations: the platform's Account service has no redeem route, so a share code is not a server-side transfer (W3).",
        options: [output.spec, armor.spec, shareCodeFD.spec, verify.spec, StandardOptions.showSecrets.spec],
        examples: [Example("sl-memory export -o memory.age", "Export; the share code is on stderr."),
                   Example("age -d -o memory.jsonl memory.age", "Open it with age (it asks for the share code).")])
    struct Options { var memory: MemoryOptions; var output: String; var armor: Bool; var shareCodeFD: Int?; var verify: Bool; var showSecrets: Bool }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        guard let output = try arguments[output], !output.isEmpty else { throw StarlineError(.usage, "export needs -o FILE") }
        return Options(memory: try MemoryOptions(arguments), output: output, armor: try arguments[armor], shareCodeFD: try arguments[shareCodeFD],
                       verify: try arguments[verify], showSecrets: try arguments[StandardOptions.showSecrets])
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let vault = try VaultAccess.open(options.memory, context)
        let code = ShareCode.generate()
        let passphrase = SecretBytes(copying: Array(code.utf8))
        let verify: ((String, MemoryExportPackage.Summary) throws -> Void)? = !options.verify ? nil : { partial, summary in
            let checked = try ImportCommand.read(partial, AgeDecryptor(passphrase: passphrase), into: nil)
            guard checked == summary else {
                throw StarlineError(.data, "the written export does not hold what was exported (\(checked.notes) of \(summary.notes) notes)")
            }
        }
        let summary = try CompletedFile.write(to: options.output, check: verify) { fd in
            let encryptor = try AgeEncryptor(passphrase: passphrase, workFactor: AgeEncryptor.defaultWorkFactor,
                                              armored: options.armor, output: .fileDescriptor(fd, name: options.output))
            let summary = try MemoryExportPackage.write(vault, exportedAt: context.io.now()) { try encryptor.write($0) }
            try encryptor.finish()
            return summary
        }
        // What a person must act on goes to stderr, TTY or not (DESIGN section 3) — or where they said.
        if let fd = options.shareCodeFD {
            guard Array((code + "\n").utf8).withUnsafeBytes({ FileBytes.write(fd: Int32(fd), $0) }) else {
                throw FileBytes.posixError("cannot write the share code to descriptor \(fd)", path: "fd \(fd)")
            }
        } else {
            try? context.io.stderr.write("Share code: \(code)\nOpen the export with: age -d \(options.output)\n")
        }
        var result: [(String, JSON)] = [("file", .string(options.output)), ("notes", .int(summary.notes)), ("attachments", .int(summary.attachments)),
                                        ("format", .string("age")), ("workFactor", .int(AgeEncryptor.defaultWorkFactor)), ("armored", .bool(options.armor)),
                                        ("verified", .bool(options.verify))]
        if options.showSecrets { result.append(("shareCode", .string(code))) }
        context.output.emit(.object(result))
        return .ok
    }
}

/// `sl-memory import FILE`.
enum ImportCommand: Command {
    static let shareCodeFD = Option<Int?>.integer("share-code-fd", "N", help: "Read the share code from file descriptor N (else STARLINE_MEMORY_SHARE_CODE, else the terminal).", range: 0...65535)
    static let shareCodeFile = Option<String?>.string("share-code-file", "FILE", help: "Read the share code from FILE (not readable by group or others).", completion: .file(extensions: []))
    static let dryRun = Option<Bool>.flag("dry-run", help: "Check the whole export and list the notes it would add, without adding them.")
    static let maxWorkFactor = Option<Int>.integer("max-work-factor", "N", help: "Refuse an age file whose scrypt work factor is above N (as age does).", default: AgeDecryptor.defaultMaximumWorkFactor, range: 1...30)
    static let spec = CommandSpec(
        "import", abstract: "Import an export (age file and share code) as new notes",
        discussion: "The whole file is checked first — the age header and every chunk, then every line of the package, each attachment's size and BLAKE2b — and only then read again and imported: a damaged or truncated export adds nothing. Notes get new ids and keep their times. Exit 13 for a wrong share code, 12 for a damaged file or package.",
        options: [shareCodeFD.spec, shareCodeFile.spec, maxWorkFactor.spec, dryRun.spec],
        arguments: [ArgumentSpec("FILE", help: "The export (binary or armored).")])
    struct Options { var memory: MemoryOptions; var file: String; var shareCodeFD: Int?; var shareCodeFile: String?; var maxWorkFactor: Int; var dryRun: Bool }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        let file = arguments.positionals[0]
        if file == "-" { throw StarlineError(.usage, "import needs a file, not stdin: it is read twice (checked whole, then imported)") }
        let options = Options(memory: try MemoryOptions(arguments), file: file, shareCodeFD: try arguments[shareCodeFD], shareCodeFile: try arguments[shareCodeFile],
                              maxWorkFactor: try arguments[maxWorkFactor], dryRun: try arguments[dryRun])
        if options.shareCodeFD != nil && options.shareCodeFile != nil { throw StarlineError(.usage, "--share-code-fd and --share-code-file cannot be used together") }
        return options
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let typed = try shareCode(options, context)
        // As typed first (an age -p passphrase is any text); then as a share code is written (upper case, dashes).
        var decryptor = AgeDecryptor(passphrase: SecretBytes(copying: Array(typed.utf8)), maximumWorkFactor: options.maxWorkFactor)
        // Pass 1: everything checked, nothing written.
        let checked: MemoryExportPackage.Summary
        do {
            checked = try read(options.file, decryptor, into: nil)
        } catch let error as StarlineError where error.code == .ageWrongPassphrase && ShareCode.normalize(typed) != typed {
            decryptor = AgeDecryptor(passphrase: SecretBytes(copying: Array(ShareCode.normalize(typed).utf8)), maximumWorkFactor: options.maxWorkFactor)
            checked = try read(options.file, decryptor, into: nil)
        }
        if options.dryRun {
            context.output.emit(.object([("file", .string(options.file)), ("dryRun", .bool(true)),
                                         ("wouldImport", .object([("notes", .int(checked.notes)), ("attachments", .int(checked.attachments))])),
                                         ("notes", .array(checked.titles.map(JSON.string)))]))
            return .ok
        }
        let vault = try VaultAccess.open(options.memory, context)
        let summary = try read(options.file, decryptor, into: vault)
        context.output.emit(.object([("file", .string(options.file)), ("imported", .object([("notes", .int(summary.notes)), ("attachments", .int(summary.attachments))]))]))
        return .ok
    }

    static func read(_ path: String, _ decryptor: AgeDecryptor, into vault: MemoryVault?) throws -> MemoryExportPackage.Summary {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileBytes.posixError("cannot read \(path)", path: path) }
        defer { close(fd) }
        let reader = MemoryExportReader(into: vault)
        try decryptor.decrypt(from: .fileDescriptor(fd, name: path), to: AgeWriter { (bytes) throws(StarlineError) in
            do { try reader.push(bytes) } catch let error as StarlineError { throw error } catch { throw StarlineError(.storage, "\(error)") }
        })
        return try reader.finish()
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
            text = try SecretInput.prompt("Share code: ", otherwise: "with --share-code-fd N, --share-code-file PATH or STARLINE_MEMORY_SHARE_CODE")
        }
        guard !text.isEmpty else { throw StarlineError(.usage, "the share code is empty") }
        return text
    }
}
