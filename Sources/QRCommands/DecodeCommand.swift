#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineQR
import Synchronization

/// `sl-qr decode FILE…|-`: the QR symbols of images as classified JSON records.
enum DecodeCommand: Command {
    static let expect = Option<PayloadKind?>.choice("expect", "KIND", help: "Fail with exit 12 when a symbol is of another kind.")
    static let jobs = Option<Int?>.integer("jobs", short: "j", "N", help: "Decode up to N images in parallel (default: the number of CPUs).", range: 1...256)

    static let spec = CommandSpec(
        "decode", abstract: "Decode QR symbols in images into classified JSON records",
        discussion: "Reads PNG, JPEG and PGM/PPM images (the format is detected from the content) and prints one JSON record per symbol, in reading order: {\"file\",\"index\",\"kind\",\"text\",\"bytesBase64\",\"corners\",\"attempt\",…}. kind is authCallback (adds appId, code, state, error), friendLink (adds code, url), url, text or binary; text is null when the bytes are not UTF-8. When nothing is found in the image as it is, inverted, downscaled and upscaled copies are tried; attempt says which one worked. A file without a symbol gives {\"file\",\"found\":0}; an unreadable file gives {\"file\",\"error\":{…}}. Login callback codes are replaced by \"redacted\" (and bytesBase64 left out) unless --show-secrets. Exit 0 when every file gave a symbol, 12 when none did, 8 when some did not.",
        options: [expect.spec, jobs.spec],
        arguments: [ArgumentSpec("FILE|-", help: "Image files; - reads one image from standard input.", variadic: true, completion: .file(extensions: ["png", "jpg", "jpeg", "pgm", "ppm", "pnm"]))],
        examples: [
            Example("sl-qr decode scan.jpg", "Print the symbols of a photo."),
            Example("sl-qr decode --expect friendLink invite.png | jq -r .url", "Extract a friend-link URL, failing on anything else."),
            Example("sl-qr decode --show-secrets callback.png | sl-login complete -", "Finish a two-step login from a scanned callback QR code."),
        ],
        exitStatuses: [(.ok, "every file gave a symbol (of the --expect kind)"), (.partial, "some files gave none, or could not be read"),
                       (.data, "no file gave a symbol, an image is unreadable, or a symbol is not of the --expect kind")])

    struct Options {
        var files: [String]
        var expect: PayloadKind?
        var jobs: Int
        var classifier: PayloadClassifier
        var pretty: Bool
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        let files = arguments.positionals
        if files.filter({ $0 == "-" }).count > 1 { throw StarlineError(.usage, "standard input (-) can be read only once") }
        let cpus = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        return Options(files: files, expect: try arguments[expect], jobs: min(try arguments[jobs] ?? cpus, files.count),
                       classifier: PayloadClassifier(chatBase: try arguments[StandardOptions.chatBase], showSecrets: try arguments[StandardOptions.showSecrets]),
                       pretty: try arguments[StandardOptions.pretty])
    }

    struct FileOutcome: Sendable {
        var records: [JSON]
        var found: Bool
        var error: StarlineError?
        var unexpectedKinds: [String]
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let (files, expect, classifier) = (options.files, options.expect, options.classifier)
        let output = context.output
        // Read once, up front, so workers never touch the context's streams; a failed read is that file's error.
        let stdin: Result<[UInt8], any Error>? = files.contains("-") ? Result { try context.readStandardInput() } : nil
        func decode(_ file: String, _ scanner: QRScanner) -> FileOutcome {
            decodeFile(file, stdin: stdin, scanner: scanner, classifier: classifier, expect: expect)
        }

        var outcomes = [FileOutcome?](repeating: nil, count: files.count)
        _ = try ZBarLibrary.shared.get()  // fail once, up front, if libzbar is missing
        if options.jobs <= 1 {
            let scanner = try QRScanner()
            for (i, file) in files.enumerated() { outcomes[i] = decode(file, scanner) }
        } else {
            // Workers take the next file from a shared counter; each owns its zbar scanner (not thread-safe).
            let next = Atomic<Int>(0)
            let results = Locked<[FileOutcome?]>(outcomes)
            WorkerThreads.run(count: options.jobs) { _ in
                guard let scanner = try? QRScanner() else { return }  // cannot fail: the library is loaded
                while true {
                    let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard i < files.count else { return }
                    let outcome = decode(files[i], scanner)
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
                if options.pretty { output.emit(record) } else { output.emitLine(record) }
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

    static func decodeFile(_ file: String, stdin: Result<[UInt8], any Error>?, scanner: QRScanner, classifier: PayloadClassifier, expect: PayloadKind?) -> FileOutcome {
        let image: GrayImage
        do {
            image = file == "-" ? try ImageLoader.load(bytes: try (stdin ?? .success([])).get(), name: "-") : try ImageLoader.load(path: file)
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
