#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineQR

/// `sl-qr encode TEXT|-`: text or bytes as a QR code.
enum EncodeCommand: Command {
    static let batch = Option<String?>.string(
        "batch", "FILE|-",
        help: """
            Encode every line of FILE (- for standard input) into its own file in --output-dir, printing one JSON record \
            per line.
            """, completion: .file(extensions: ["txt", "jsonl"]))
    static let outputDir = Option<String?>.string(
        "output-dir", "DIR",
        help: """
            Where --batch writes its files (created when missing): DIR/NAME.EXT, NAME the line number zero-padded to 6 \
            digits or the line's name, EXT from --format (png by default).
            """, completion: .directory)
    static let jobs = Option<Int?>.integer(
        "jobs", short: "j", "N", help: "--batch: encode up to N lines in parallel (default: the number of CPUs).", range: 1...256)
    static let batchFormat = Option<BatchFormat>.choice(
        "batch-format", "FORMAT",
        help: """
            How --batch lines are read: lines (the line is the payload) or jsonl ({\"text\":…,\"name\":…}, name optional: \
            no /, no leading dot).
            """, default: .lines)

    static let spec = CommandSpec(
        "encode", abstract: "Encode text or bytes as a QR code",
        discussion: """
            TEXT is encoded as given; - reads the payload from standard input byte for byte (a trailing newline is part \
            of it: use printf, not echo), refusing with CAPACITY_EXCEEDED (exit 12) as soon as more than the largest QR \
            payload (7089 bytes) has arrived. With --batch, every line is encoded with the same options into --output-dir \
            and a JSON record is printed per line (JSON Lines, with \"line\"); a bad line gets a record with an \"error\" \
            and the run goes on: exit 8 when some lines failed, 12 when all did.
            """,
        options: EncodeOptions.specs + [batch.spec, outputDir.spec, batchFormat.spec, jobs.spec, StandardOptions.quiet],
        arguments: [ArgumentSpec("TEXT|-", help: "The payload; - reads it from standard input. Not with --batch.", optional: true)],
        examples: [
            Example("sl-qr encode 'hello world' -o hello.png", "Write a PNG and print a JSON record describing it."),
            Example("sl-qr encode -f utf8 'https://example.com'", "Show a QR code in the terminal."),
            Example(
                "head -c 100 /dev/urandom | sl-qr encode - -l H -o bytes.png --verify",
                "Encode binary data with high error correction and check it reads back."),
            Example(
                "sl-qr encode --batch links.txt --output-dir codes",
                "Write codes/000001.png, codes/000002.png, … one per line of links.txt.")
        ],
        exitStatuses: [
            (.ok, "encoded (and, with --verify, read back)"), (.usage, "bad options, an unknown -o extension, or a PNG to a terminal"),
            (.partial, "--batch: some lines failed (their records say why)"),
            (.storage, "the output file cannot be written"),
            (.data, "more data than --max-version holds, --verify read back something else, or every --batch line failed")
        ])

    struct Options {
        var text: String
        var encoding: EncodeOptions
        var batch: BatchEncode?
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        let encoding = try EncodeOptions(arguments)
        let text = arguments.positionals.first
        guard let source = try arguments[batch] else {
            guard let text else { throw StarlineError(.usage, "missing TEXT|- (or --batch FILE|-)") }
            if try arguments[outputDir] != nil { throw StarlineError(.usage, "--output-dir goes with --batch; use -o FILE for one code") }
            return Options(text: text, encoding: encoding, batch: nil)
        }
        if text != nil { throw StarlineError(.usage, "give either TEXT|- or --batch, not both") }
        if encoding.outputPath != nil { throw StarlineError(.usage, "--batch writes into --output-dir; -o is for one code") }
        guard let directory = try arguments[outputDir] else { throw StarlineError(.usage, "--batch needs --output-dir DIR") }
        return Options(
            text: "", encoding: encoding,
            batch: BatchEncode(
                source: source, directory: directory, batchFormat: try arguments[batchFormat], options: encoding,
                format: encoding.format ?? .png,
                jobs: try arguments[jobs] ?? max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))))
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        if let batch = options.batch { return try batch.run(context) }
        let payload = options.text == "-" ? try readPayload(context, options.encoding) : Array(options.text.utf8)
        return try QRImageWriter.write(payload: payload, options.encoding, extraFields: [], context)
    }

    /// Standard input, bounded before it is buffered: no QR code holds more than
    /// `QREncoder.absoluteMaxBytes`, so one byte more is all it takes to know the payload cannot fit,
    /// and `< /dev/zero` fails at once with CAPACITY_EXCEEDED instead of growing without limit.
    static func readPayload(_ context: CommandContext, _ options: EncodeOptions) throws -> [UInt8] {
        let limit = QREncoder.absoluteMaxBytes
        let bytes: [UInt8]
        if let fd = context.io.stdin.fileDescriptor {
            bytes = try ImageLoader.readPrefix(fileDescriptor: fd, name: "standard input", maxBytes: limit)
        } else {
            bytes = Array(try context.io.stdin.readAll().prefix(limit + 1))  // captured bytes (in-process runs): already in memory
        }
        guard bytes.count > limit else { return bytes }
        let capacity = QREncoder.capacity(
            level: options.level, minVersion: options.minVersion, maxVersion: options.maxVersion, payload: bytes)
        throw StarlineError(
            .capacityExceeded,
            "standard input holds more than \(limit) bytes, more than any QR code holds (capacity at version ≤ \(options.maxVersion), "
                + "level \(options.level.rawValue): \(capacity) bytes)",
            details: .object([
                ("lengthAtLeast", .int(limit + 1)), ("capacity", .int(capacity)),
                ("maxVersion", .int(options.maxVersion)), ("level", .string(options.level.rawValue))
            ]))
    }
}

/// `sl-qr friend CODE|URL`: a validated friend link as a QR code.
enum FriendCommand: Command {
    static let spec = CommandSpec(
        "friend", abstract: "Build a validated friend link and encode it",
        discussion: """
            CODE is a friend-link code (8 to 64 characters from A-Z a-z 0-9 _ -) or a friend-link URL of the configured \
            chat service ({chat base}/f/{code}, the chat base being --chat, STARLINE_CHAT_BASE_URL, the profile, or \
            https://chat.thestarline.cn) or of the default one; a bare code is put on the configured chat base, a URL \
            stays on its own.
            """,
        options: EncodeOptions.specs,
        arguments: [ArgumentSpec("CODE|URL", help: "A friend-link code or friend-link URL.")],
        examples: [
            Example(
                "sl-qr friend AbCdEfGh1234 -o friend.png", "Make a friend-link QR code for https://chat.thestarline.cn/f/AbCdEfGh1234."),
            Example(
                "sl-qr friend --chat http://127.0.0.1:8080/chat AbCdEfGh1234 -f ansi",
                "Show a friend link of a local sl-devserver in the terminal.")
        ],
        exitStatuses: [
            (.ok, "encoded"), (.usage, "not a valid friend-link code or URL (INVALID_FRIEND_LINK)"),
            (.storage, "the output file cannot be written"), (.data, "--verify read back something else")
        ])

    struct Options {
        var link: String
        var chatBase: BaseURL
        var encoding: EncodeOptions
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(link: arguments.positionals[0], chatBase: try arguments[StandardOptions.chatBase], encoding: try EncodeOptions(arguments))
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let link = try FriendLink.make(options.link, chatBase: options.chatBase)
        return try QRImageWriter.write(
            payload: Array(link.url.utf8), options.encoding,
            extraFields: [("code", .string(link.code)), ("url", .string(link.url))], context)
    }
}
