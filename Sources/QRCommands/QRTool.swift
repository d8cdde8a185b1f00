#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineQR
import Synchronization

/// `sl-qr`: make friend-link QR codes and decode images into classified JSON.
public enum QRTool {
    static let formats = ["png", "svg", "utf8", "ansi", "ascii", "matrix"]

    static let encodeOptions: [OptionSpec] = [
        .value("format", short: "f", "FORMAT", help: "Output format; png unless -o names a .svg/.txt/.json file, or utf8 when writing to a terminal.", choices: formats),
        .value("output", short: "o", "FILE", help: "Write the image to FILE and print a JSON record instead. FILE is replaced atomically (never seen half-written) and, like other output files, gets the umask and is not fsync'ed (use sync(1) when that matters).", completion: .file(extensions: ["png", "svg", "txt", "json"])),
        .value("level", short: "l", "LEVEL", help: "Error correction level.", default: "M", choices: ["L", "M", "Q", "H"]),
        .value("size", short: "s", "PIXELS", help: "Module size in pixels (png, svg).", default: "4"),
        .value("margin", short: "m", "MODULES", help: "Quiet zone around the symbol, in modules.", default: "4"),
        .value("min-version", "N", help: "Smallest QR version (1-40) to use.", default: "1"),
        .value("max-version", "N", help: "Largest QR version (1-40) allowed; more data fails with exit 12 naming the capacity.", default: "40"),
        .flag("verify", help: "Decode the image that was made and fail (exit 12) unless it reads back as the exact payload."),
    ]

    public static let spec = ToolSpec(
        name: "sl-qr",
        root: CommandSpec(
            "sl-qr", abstract: "make friend-link QR codes and decode QR images into classified JSON",
            discussion: "sl-qr encodes text, bytes or Starline friend links as QR codes (libqrencode) and decodes PNG, JPEG and PGM/PPM images (libzbar) into one JSON record per symbol. Decoded payloads are classified in the order of the Starline client: a login callback first, then a friend link (of the configured chat service, or of the default https://chat.thestarline.cn), then a web URL, then text.\n\nNon-ASCII UTF-8 text is encoded in byte mode with a UTF-8 ECI header; plain ASCII needs none; binary input (including NUL bytes) is encoded byte for byte. Images are never written to a terminal.",
            subcommands: [
                CommandSpec(
                    "encode", abstract: "Encode text or bytes as a QR code",
                    discussion: "TEXT is encoded as given; - reads the payload from standard input byte for byte (a trailing newline is part of it: use printf, not echo).",
                    options: encodeOptions,
                    arguments: [ArgumentSpec("TEXT|-", help: "The payload; - reads it from standard input.")],
                    examples: [
                        Example("sl-qr encode 'hello world' -o hello.png", "Write a PNG and print a JSON record describing it."),
                        Example("sl-qr encode -f utf8 'https://example.com'", "Show a QR code in the terminal."),
                        Example("head -c 100 /dev/urandom | sl-qr encode - -l H -o bytes.png --verify", "Encode binary data with high error correction and check it reads back."),
                    ],
                    exitStatuses: [(.ok, "encoded (and, with --verify, read back)"), (.usage, "bad options, or a PNG to a terminal"),
                                   (.storage, "the output file cannot be written"),
                                   (.data, "more data than --max-version holds, or --verify read back something else")]),
                CommandSpec(
                    "friend", abstract: "Build a validated friend link and encode it",
                    discussion: "CODE is a friend-link code (8 to 64 characters from A-Z a-z 0-9 _ -) or a friend-link URL of the configured chat service ({chat base}/f/{code}, the chat base being --chat, STARLINE_CHAT_BASE_URL, the profile, or https://chat.thestarline.cn) or of the default one; a bare code is put on the configured chat base, a URL stays on its own.",
                    options: encodeOptions,
                    arguments: [ArgumentSpec("CODE|URL", help: "A friend-link code or friend-link URL.")],
                    examples: [
                        Example("sl-qr friend AbCdEfGh1234 -o friend.png", "Make a friend-link QR code for https://chat.thestarline.cn/f/AbCdEfGh1234."),
                        Example("sl-qr friend --chat http://127.0.0.1:8080/chat AbCdEfGh1234 -f ansi", "Show a friend link of a local sl-devserver in the terminal."),
                    ],
                    exitStatuses: [(.ok, "encoded"), (.usage, "not a valid friend-link code or URL (INVALID_FRIEND_LINK)"),
                                   (.storage, "the output file cannot be written"), (.data, "--verify read back something else")]),
                CommandSpec(
                    "decode", abstract: "Decode QR symbols in images into classified JSON records",
                    discussion: "Reads PNG, JPEG and PGM/PPM images (the format is detected from the content) and prints one JSON record per symbol, in reading order: {\"file\",\"index\",\"kind\",\"text\",\"bytesBase64\",\"corners\",\"attempt\",…}. kind is authCallback (adds appId, code, state, error), friendLink (adds code, url), url, text or binary; text is null when the bytes are not UTF-8. When nothing is found in the image as it is, inverted, downscaled and upscaled copies are tried; attempt says which one worked. A file without a symbol gives {\"file\",\"found\":0}; an unreadable file gives {\"file\",\"error\":{…}}. Login callback codes are replaced by \"redacted\" (and bytesBase64 left out) unless --show-secrets. Exit 0 when every file gave a symbol, 12 when none did, 8 when some did not.",
                    options: [
                        .value("expect", "KIND", help: "Fail with exit 12 when a symbol is of another kind.", choices: PayloadKind.allCases.map(\.rawValue)),
                        .value("jobs", short: "j", "N", help: "Decode up to N images in parallel (default: the number of CPUs)."),
                    ],
                    arguments: [ArgumentSpec("FILE|-", help: "Image files; - reads one image from standard input.", variadic: true, completion: .file(extensions: ["png", "jpg", "jpeg", "pgm", "ppm", "pnm"]))],
                    examples: [
                        Example("sl-qr decode scan.jpg", "Print the symbols of a photo."),
                        Example("sl-qr decode --expect friendLink invite.png | jq -r .url", "Extract a friend-link URL, failing on anything else."),
                        Example("sl-qr decode --show-secrets callback.png | sl-login complete -", "Finish a two-step login from a scanned callback QR code."),
                    ],
                    exitStatuses: [(.ok, "every file gave a symbol (of the --expect kind)"), (.partial, "some files gave none, or could not be read"),
                                   (.data, "no file gave a symbol, an image is unreadable, or a symbol is not of the --expect kind")]),
            ],
            examples: [
                Example("sl-qr friend AbCdEfGh1234 -o friend.png && sl-qr decode friend.png", "Make a friend-link QR code and decode it back."),
            ]),
        globalOptions: StandardOptions.output + [StandardOptions.chat, StandardOptions.showSecrets],
        environment: StandardOptions.environment,
        files: [StandardOptions.configFile],
        seeAlso: ["qrencode(1)", "zbarimg(1)", "sl-chat(1)", "sl-login(1)"])

    public static func main() -> Never {
        ToolMain.run(spec) { invocation in
            switch invocation.arguments.path.first {
            case "encode": try encode(invocation, friend: false)
            case "friend": try encode(invocation, friend: true)
            default: try decode(invocation)
            }
        }
    }

    // MARK: encode / friend

    static func encode(_ invocation: Invocation, friend: Bool) throws -> ExitStatus {
        let args = invocation.arguments
        let input = args.positionals[0]
        var record: [(String, JSON)] = []
        let payload: [UInt8]
        if friend {
            let link = try FriendLink.make(input, chatBase: try invocation.chatBase())
            payload = Array(link.url.utf8)
            record += [("code", .string(link.code)), ("url", .string(link.url))]
        } else if input == "-" {
            payload = try FileBytes.read(fd: STDIN_FILENO, name: "standard input")
        } else {
            payload = Array(input.utf8)
        }
        guard !payload.isEmpty else { throw StarlineError(.usage, "nothing to encode: the payload is empty") }

        let level = QRErrorCorrection(rawValue: args.value("level") ?? "M") ?? .M
        let moduleSize = try args.int("size", in: 1...100) ?? 4
        let margin = try args.int("margin", in: 0...100) ?? 4
        try QRRenderer.validate(moduleSize: moduleSize, margin: margin)
        let minVersion = try args.int("min-version", in: 1...40) ?? 1
        let maxVersion = try args.int("max-version", in: 1...40) ?? 40
        guard minVersion <= maxVersion else {
            throw StarlineError(.usage, "--min-version \(minVersion) is greater than --max-version \(maxVersion)")
        }
        let outputPath = args.value("output").flatMap { $0 == "-" ? nil : $0 }
        let format = args.value("format") ?? defaultFormat(outputPath: outputPath, terminal: invocation.output.stdoutIsTerminal)

        let matrix = try QREncoder.encode(payload, level: level, minVersion: minVersion, maxVersion: maxVersion)
        let rendered: [UInt8]
        switch format {
        case "png": rendered = try QRRenderer.png(matrix, moduleSize: moduleSize, margin: margin)
        case "svg": rendered = Array(QRRenderer.svg(matrix, moduleSize: moduleSize, margin: margin).utf8)
        case "utf8": rendered = Array(QRRenderer.utf8(matrix, margin: margin).utf8)
        case "ansi": rendered = Array(QRRenderer.ansi(matrix, margin: margin).utf8)
        case "ascii": rendered = Array(QRRenderer.ascii(matrix, margin: margin).utf8)
        default: rendered = Array((QRRenderer.matrix(matrix).serialized(invocation.output.mode == .pretty && outputPath == nil ? .pretty : .compact) + "\n").utf8)
        }

        if args.flag("verify") { try verify(payload: payload, matrix: matrix, png: format == "png" ? rendered : nil, margin: margin) }

        guard let outputPath else {
            if format == "png", invocation.output.stdoutIsTerminal {
                throw StarlineError(.usage, "refusing to write a PNG image to a terminal; use -o FILE, redirect stdout, or --format utf8")
            }
            invocation.output.writeBytes(rendered)
            return .ok
        }
        try AtomicFile.write(rendered, to: outputPath, mode: 0o666, sync: false, applyUmask: true)
        record = [("file", .string(outputPath)), ("format", .string(format)), ("version", .int(matrix.version)),
                  ("level", .string(level.rawValue)), ("modules", .int(matrix.size)), ("payloadBytes", .int(payload.count))]
            + (format == "png" || format == "svg" ? [("pixels", .int((matrix.size + 2 * margin) * moduleSize))] : [])
            + record + [("verified", .bool(args.flag("verify")))]
        invocation.output.emit(.object(record))
        return .ok
    }

    static func defaultFormat(outputPath: String?, terminal: Bool) -> String {
        if let outputPath {
            let lower = outputPath.lowercased()
            if lower.hasSuffix(".svg") { return "svg" }
            if lower.hasSuffix(".txt") { return "utf8" }
            if lower.hasSuffix(".json") { return "matrix" }
            return "png"
        }
        return terminal ? "utf8" : "png"
    }

    /// Decodes what was made: the PNG bytes themselves, or the matrix drawn as an image for text formats.
    static func verify(payload: [UInt8], matrix: QRMatrix, png: [UInt8]?, margin: Int) throws {
        let quietZone = max(margin, 4)
        let image = try png.map { try ImageLoader.load(bytes: $0, name: "generated image") }
            ?? GrayImage(width: (matrix.size + 2 * quietZone) * 4, height: (matrix.size + 2 * quietZone) * 4,
                         pixels: QRRenderer.grayPixels(matrix, moduleSize: 4, margin: quietZone))
        // Only the image as made counts: a code that needs an inverted or rescaled retry is not verified.
        let result = try QRScanner().scan(image, attempts: [.original])
        guard result.symbols.count == 1, result.symbols[0].bytes == payload else {
            throw StarlineError(.verificationFailed, "the generated QR code does not decode back to the payload",
                                details: .object([("symbolsFound", .int(result.symbols.count))]))
        }
    }

    // MARK: decode

    struct FileOutcome: Sendable {
        var records: [JSON]
        var found: Bool
        var error: StarlineError?
        var unexpectedKinds: [String]
    }

    static func decode(_ invocation: Invocation) throws -> ExitStatus {
        let args = invocation.arguments
        let classifier = PayloadClassifier(chatBase: try invocation.chatBase(), showSecrets: args.flag("show-secrets"))
        let expect = args.value("expect").flatMap(PayloadKind.init(rawValue:))
        let files = args.positionals
        if files.filter({ $0 == "-" }).count > 1 { throw StarlineError(.usage, "standard input (-) can be read only once") }
        let cpus = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        let jobs = min(try args.int("jobs", in: 1...256) ?? cpus, files.count)
        let pretty = args.flag("pretty")
        let output = invocation.output

        var outcomes = [FileOutcome?](repeating: nil, count: files.count)
        _ = try ZBarLibrary.shared.get()  // fail once, up front, if libzbar is missing
        if jobs <= 1 {
            let scanner = try QRScanner()
            for (i, file) in files.enumerated() { outcomes[i] = decodeFile(file, scanner: scanner, classifier: classifier, expect: expect) }
        } else {
            // Workers take the next file from a shared counter; each owns its zbar scanner (not thread-safe).
            let next = Atomic<Int>(0)
            let results = Mutex<[FileOutcome?]>(outcomes)
            WorkerThreads.run(count: jobs) { _ in
                guard let scanner = try? QRScanner() else { return }  // cannot fail: the library is loaded
                while true {
                    let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard i < files.count else { return }
                    let outcome = decodeFile(files[i], scanner: scanner, classifier: classifier, expect: expect)
                    results.withLock { $0[i] = outcome }
                }
            }
            outcomes = results.withLock { $0 }
        }

        var found = 0, failed = 0
        var unexpected: [String] = []
        var firstError: StarlineError?
        for outcome in outcomes.compactMap({ $0 }) {
            for record in outcome.records {
                if pretty { output.emit(record) } else { output.emitLine(record) }
            }
            if outcome.found { found += 1 } else { failed += 1 }
            if let e = outcome.error, firstError == nil { firstError = e }
            unexpected += outcome.unexpectedKinds
        }
        output.flush()
        if let expect, !unexpected.isEmpty {
            throw StarlineError(.unexpectedKind, "expected \(expect.rawValue) but found \(unexpected.joined(separator: ", "))",
                                details: .object([("expected", .string(expect.rawValue)), ("found", .array(unexpected.map(JSON.string)))]))
        }
        if failed == 0 { return .ok }
        if found == 0 {
            if files.count == 1, let firstError { throw firstError }
            throw StarlineError(.noSymbol, files.count == 1 ? "no QR code found in \(files[0])" : "no QR code found in any of the \(files.count) files",
                                details: .object([("files", .int(files.count))]))
        }
        throw StarlineError(.partial, "\(failed) of \(files.count) files gave no QR code",
                            details: .object([("files", .int(files.count)), ("failed", .int(failed))]))
    }

    static func decodeFile(_ file: String, scanner: QRScanner, classifier: PayloadClassifier, expect: PayloadKind?) -> FileOutcome {
        let image: GrayImage
        do {
            image = file == "-" ? try ImageLoader.load(bytes: try FileBytes.read(fd: STDIN_FILENO, name: "standard input"), name: "-")
                : try ImageLoader.load(path: file)
        } catch {
            let failure = (error as? StarlineError) ?? StarlineError(.unreadableImage, "\(file): \(error)")
            let errorJSON = failure.json["error"] ?? .null
            return FileOutcome(records: [.object([("file", .string(file)), ("error", errorJSON)])], found: false, error: failure, unexpectedKinds: [])
        }
        let result = scanner.scan(image)
        guard !result.symbols.isEmpty else {
            return FileOutcome(records: [.object([("file", .string(file)), ("found", .int(0))])], found: false,
                               error: StarlineError(.noSymbol, "no QR code found in \(file)"), unexpectedKinds: [])
        }
        var records: [JSON] = []
        var unexpected: [String] = []
        for (index, symbol) in result.symbols.enumerated() {
            let payload = classifier.classify(symbol.bytes)
            if let expect, payload.kind != expect { unexpected.append(payload.kind.rawValue) }
            var fields: [(String, JSON)] = [
                ("file", .string(file)), ("index", .int(index)), ("kind", .string(payload.kind.rawValue)),
                ("text", .optional(payload.text)),
            ]
            if payload.includesBytes { fields.append(("bytesBase64", .string(Base64.encode(symbol.bytes)))) }
            fields.append(("corners", .array(symbol.corners.map { .array([.int($0.x), .int($0.y)]) })))
            fields.append(("attempt", .string(result.attempt)))
            fields += payload.fields
            records.append(.object(fields))
        }
        return FileOutcome(records: records, found: true, error: nil, unexpectedKinds: unexpected)
    }
}
