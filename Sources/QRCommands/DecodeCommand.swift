#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineQR

/// `sl-qr decode FILE…|-`: the QR symbols of images as classified JSON records.
enum DecodeCommand: Command {
    static let expect = Option<PayloadKind?>.choice("expect", "KIND", help: "Fail with exit 12 when a symbol is of another kind.")
    static let jobs = Option<Int?>.integer(
        "jobs", short: "j", "N", help: "Decode up to N images in parallel (default: the number of CPUs).", range: 1...256)
    static let maxFileSize = Option<Int>.integer(
        "max-file-size", "MIB",
        help: """
            Refuse an image file (or standard input) over this many MiB: checked with fstat before reading and again \
            while reading.
            """, default: ImageLoader.defaultMaxFileBytes >> 20, range: 1...4096)
    static let maxPixels = Option<Int>.integer(
        "max-pixels", "MEGAPIXELS", help: "Refuse an image of more megapixels, from its header, before any pixel buffer is allocated.",
        default: ImageLoader.defaultMaxPixels / 1_000_000, range: 1...1000)
    static let pixelBudget = Option<Int>.integer(
        "pixel-budget", "MEGAPIXELS",
        help: """
            Megapixels held in memory at once by all -j workers together (scanning costs about 3 bytes a pixel); a worker \
            waits while it is spent, and an image larger than the budget is decoded alone.
            """, default: 100, range: 1...10000)
    static let raw = Option<Bool>.flag(
        "raw",
        help: """
            Print only the payloads, one per line, as decoded (zbarimg's --raw); login callback codes stay redacted \
            unless --show-secrets.
            """)
    static let quiet = Option<Bool>.flag(
        "quiet", short: "q",
        help: """
            No notices on stderr: no progress, nothing for a file without a symbol — the exit status says it (zbarimg's \
            -q); a file that cannot be read is still reported.
            """)
    static let defaultImageTimeout = 30_000
    static let imageTimeout = Option<Int>.integer(
        "image-timeout", "MS",
        help: """
            Per-image safety deadline in milliseconds: which retries run is decided by the image (each reads its pixels \
            against a budget of 160 million, so every retry for a photo up to ~17 megapixels, and the same ones on a \
            busy machine as on an idle one); this only stops a pass that takes far longer than its pixels say: no retry \
            starts after it, and an image over 2 megapixels, scanned in a helper process, is stopped at it (a smaller one \
            finishes its pass, well under a second); the record then has \"timedOut\":true. 0 tries the image as it is only.
            """, default: defaultImageTimeout, range: 0...3_600_000)

    static let spec = CommandSpec(
        "decode", abstract: "Decode QR symbols in images into classified JSON records",
        discussion: """
            Reads PNG, JPEG (including CMYK), PBM/PGM/PPM, BMP, GIF (the first image), WebP, TIFF (the first page), \
            HEIC and AVIF images (the format is detected from the content; transparent parts are white; a JPEG's Exif \
            orientation and a HEIC's rotation are applied) and prints \
            one JSON record per symbol, in reading order: \
            {\"file\",\"index\",\"kind\",\"text\",\"bytesBase64\",\"corners\",\"attempt\",…}. kind is authCallback (adds \
            appId, code, state, error), friendLink (adds code, url), url, text or binary. text is the payload in the \
            charset named by charset: the one its ECI says (any of the AIM ECI table: ISO-8859-1 to -16, Shift_JIS, \
            UTF-8, UTF-16BE, GB18030, Big5, EUC-KR, US-ASCII, windows-125x, IBM437; several joined by +), else the one \
            that fits: UTF-8 when the bytes are UTF-8, else Shift_JIS or ISO-8859-1 as ZXing guesses them (Kanji mode \
            is Shift_JIS); bytesBase64 keeps the bytes as stored; text and charset are null (kind binary) when no \
            charset fits (in a guessed charset, control characters other than tab, CR and LF mean data). A structured- \
            append sequence found whole is one record; each symbol of one found in part is a record of kind part \
            (adds sequence {index,count}; never classified, not printed by --raw, and the file counts as giving no \
            code). The attempts are decided by the image: a code a program rendered is read by libzbar as it is \
            (original) and inverted; when that finds nothing, and first for a photograph (more than a tenth of its \
            pixels mid-tones, read by libzbar as it is only after), ZXing-C++ reads it as it is, inverted (for a \
            photograph), smoothed and upscaled (attempts zxing, zxing-inverted, zxing-smoothed, zxing-upscaled: strong \
            perspective, light on dark, noise, small modules; only when installed, see `sl-qr --version`), then \
            libzbar tries a downscaled copy and copies for photographs (downscaled, binarized, sharpened, \
            inverted-binarized), and last ZXing-C++ reads copies stretched along each diagonal (zxing-tilted: codes \
            photographed at a steep angle). Without ZXing-C++, libzbar tries original, inverted, downscaled, upscaled, \
            stretched, binarized, sharpened, smooth-upscaled, inverted-binarized and inverted-upscaled. attempt says \
            which one worked. Several codes in one image are all reported: when the codes found in a photograph of \
            1,200 pixels or more on its short side each cover under 1 % of it, ZXing-C++ also reads overlapping \
            tiles (3 × 3, 4 × 4 above 16 megapixels) and adds the codes found there; and the regions around finder \
            patterns (three of a like size at a square's corners, or two a code's distance apart) outside the codes \
            read are read on their own (modules under 3 pixels scaled up), which adds a code beside those an attempt \
            read, and reads a small code in a large scene when no attempt read any (attempt regions). A file without a symbol gives \
            {\"file\",\"found\":0,\"tried\":N} (N: how many attempts ran); an unreadable file gives {\"file\",\"error\":{…}}. Login callback codes are replaced \
            by \"redacted\" (and bytesBase64 left out) unless --show-secrets. With --expect KIND only records of that \
            kind are printed. Limits (each overridable): --max-file-size (256 MiB), --max-pixels (100 megapixels), \
            --pixel-budget (100 megapixels at once across workers), --image-timeout (30 s per image, a safety net). Progress \
            goes to stderr on a terminal or with --progress; -q/--quiet drops it. With --raw only the payloads are \
            printed, each followed by a newline, as zbarimg --raw does (a file without a symbol gets a notice on stderr \
            unless -q), so `zbarimg --raw -q IMG` becomes `sl-qr decode --raw -q IMG`. Exit 0 when every file gave a \
            symbol, 12 when none did, 8 when some did not (zbarimg exits 4 in both cases: a script that tests for 4 \
            tests for a non-zero status instead); with -q nothing is printed for either.
            """,
        options: [expect.spec, raw.spec, quiet.spec, jobs.spec, maxFileSize.spec, maxPixels.spec, pixelBudget.spec, imageTimeout.spec]
            + ListOptions.specs,
        arguments: [
            ArgumentSpec(
                "FILE|-", help: "Image files; - reads one image from standard input.", variadic: true,
                completion: .file(extensions: ["png", "jpg", "jpeg", "pgm", "ppm", "pnm"]))
        ],
        examples: [
            Example("sl-qr decode scan.jpg", "Print the symbols of a photo."),
            Example("sl-qr decode --expect friendLink invite.png | jq -r .url", "Extract a friend-link URL, failing on anything else."),
            Example(
                "sl-qr decode --raw -q scan.jpg", "Only the payloads, one per line, nothing on stderr but errors (as zbarimg --raw -q)."),
            Example(
                "sl-qr decode --show-secrets callback.png | sl-login complete -", "Finish a two-step login from a scanned callback QR code."
            )
        ],
        exitStatuses: [
            (.ok, "every file gave a symbol (of the --expect kind)"), (.partial, "some files gave none, or could not be read"),
            (.data, "no file gave a symbol, an image is unreadable, or a symbol is not of the --expect kind")
        ])

    struct Options {
        var files: [String]
        var expect: PayloadKind?
        var jobs: Int
        var classifier: PayloadClassifier
        var raw: Bool
        var quiet: Bool
        var limits: QRBatchDecoder.Limits
        var list: ListOptions
    }

    /// A table's columns (RecordList): a person wants to see what each file holds.
    static let columns = ["file", "kind", "text", "attempt"]

    /// A file's row in a table: one without a symbol says so (`none`, and why), instead of a blank row.
    static func tableRow(_ record: JSON) -> JSON {
        guard record["kind"] == nil else { return record }
        var row = record
        row.set("kind", .string("none"))
        row.set("text", .string(record["error"]?["message"]?.stringValue ?? "no QR code found"))
        return row
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        let files = arguments.positionals
        if files.filter({ $0 == "-" }).count > 1 { throw StarlineError(.usage, "standard input (-) can be read only once") }
        let cpus = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        return Options(
            files: files, expect: try arguments[expect], jobs: min(try arguments[jobs] ?? cpus, files.count),
            classifier: PayloadClassifier(
                chatBase: try arguments[StandardOptions.chatBase], showSecrets: try arguments[StandardOptions.showSecrets]),
            raw: try arguments[raw], quiet: try arguments[quiet],
            limits: QRBatchDecoder.Limits(
                maxFileBytes: try arguments[maxFileSize] << 20, maxPixels: try arguments[maxPixels] * 1_000_000,
                pixelBudget: try arguments[pixelBudget] * 1_000_000, imageTimeout: Double(try arguments[imageTimeout]) / 1000),
            list: try listOptions(arguments))
    }

    /// -o/--fields choose how records print; --raw prints no records, so it takes neither.
    static func listOptions(_ arguments: ParsedArguments) throws -> ListOptions {
        let list = try ListOptions(arguments)
        if try arguments[raw], list.format != nil || list.fields != nil {
            throw StarlineError(.usage, "--raw prints only the payloads: it cannot be combined with -o/--output or --fields")
        }
        return list
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let (files, expect, classifier, limits) = (options.files, options.expect, options.classifier, options.limits)
        let output = context.output
        // Read once, up front, so workers never touch the context's streams; a failed read is that file's error.
        // Bounded like a file: a descriptor is read with the limit, captured bytes are checked against it.
        var stdin: Result<[UInt8], any Error>?
        if files.contains("-") {
            stdin = Result { () throws -> [UInt8] in
                if let fd = context.io.stdin.fileDescriptor {
                    return try ImageLoader.readAll(fileDescriptor: fd, name: "-", maxBytes: limits.maxFileBytes)
                }
                let bytes = try context.io.stdin.readAll()  // captured bytes (in-process runs): already in memory
                if bytes.count > limits.maxFileBytes { throw ImageLoader.tooLargeFile("-", limits.maxFileBytes) }
                return bytes
            }
        }
        let decoder = QRBatchDecoder(
            classifier: classifier, expect: expect, limits: limits, jobs: options.jobs,
            isolation: IsolatedScan.available ? IsolatedScan.isolation : nil)
        let progress = DecodeProgress(total: files.count, output: output, quiet: options.quiet)
        let outcomes = try decoder.decode(files, stdin: stdin, progress: progress)

        var found = 0, failed = 0
        // As every list: JSON Lines piped, a table on a terminal, one indented array with --pretty, or -o.
        let list = options.raw ? nil : RecordList(output, options.list, columns: columns)
        let table = list != nil && RecordList.format(output, options.list) == .table
        var unexpected: [String] = []
        var firstError: StarlineError?
        /// A file failed for another reason than having no symbol (it could not be read).
        var unreadable = false
        for outcome in outcomes {
            // With --expect, stdout carries only records of that kind, so `| jq -r .url` sees no others.
            if options.raw {
                for payload in outcome.payloads where expect == nil || payload.kind == expect {
                    // A pipe gets the bytes as decoded; a terminal what is hidden in them made visible (an image
                    // can carry escape sequences as well as text: TerminalText).
                    let shown =
                        output.stdoutIsTerminal
                        ? Array(TerminalText.visibleLines(String(decoding: payload.bytes, as: UTF8.self)).utf8) : payload.bytes
                    output.writeBytes(shown + [0x0A])
                }
                if !outcome.found, !options.quiet, let file = outcome.records.first?["file"]?.stringValue {
                    output.notice("sl-qr: \(file): " + (outcome.error?.message ?? "no QR code found"))
                }
            } else {
                for record in outcome.records where expect == nil || record["kind"]?.stringValue == expect?.rawValue {
                    list?.add(table ? Self.tableRow(record) : record)
                }
            }
            if outcome.found { found += 1 } else { failed += 1 }
            if let e = outcome.error, firstError == nil { firstError = e }
            if let e = outcome.error, e.code != .noSymbol { unreadable = true }
            unexpected += outcome.unexpectedKinds
        }
        list?.finish()
        output.flush()
        if let expect, !unexpected.isEmpty {
            throw StarlineError(
                .unexpectedKind, "expected \(expect.rawValue) but found \(unexpected.joined(separator: ", "))",
                details: .object([("expected", .string(expect.rawValue)), ("found", .array(unexpected.map(JSON.string)))]))
        }
        if failed == 0 { return .ok }
        // -q (zbarimg's): a file without a symbol is told by the exit status alone, as zbarimg -q tells it; a file
        // that could not be read is still an error.
        if options.quiet, !unreadable { return found == 0 ? ErrorCode.noSymbol.exitStatus : ErrorCode.partial.exitStatus }
        if found == 0 {
            if files.count == 1, let firstError { throw firstError }
            throw StarlineError(
                .noSymbol, files.count == 1 ? "no QR code found in \(files[0])" : "no QR code found in any of the \(files.count) files",
                details: .object([("files", .int(files.count))]))
        }
        throw StarlineError(
            .partial, "\(failed) of \(files.count) files gave no QR code",
            details: .object([("files", .int(files.count)), ("failed", .int(failed))]))
    }
}

/// "decoded 3 of 10 files" on stderr while a long run goes on: only on a terminal or with --progress
/// (Output decides), at most four lines a second, and always the last one.
final class DecodeProgress: QRBatchDecoder.Progress {
    let total: Int
    let output: Output
    /// Progress lines at all: on a terminal or with --progress, and not with -q.
    let shown: Bool
    private let state = Locked<(done: Int, found: Int, last: Double)>((0, 0, 0))

    init(total: Int, output: Output, quiet: Bool = false) {
        self.total = total
        self.output = output
        shown = output.showsProgress && !quiet
        state.withLock { $0.last = QRScanner.now() }
    }

    /// A retry of one image that has already taken a while (a large photo, a pathological image).
    func retrying(_ file: String, _ attempt: QRScanner.Attempt, after seconds: Double) {
        guard shown, seconds >= 1 else { return }
        let tenths = Int(seconds * 10)
        output.progress("sl-qr: \(file): nothing found after \(tenths / 10).\(tenths % 10) s, trying \(attempt.rawValue)")
    }

    func finished(_ file: String, found: Bool) {
        guard shown else { return }
        state.withLock { s in
            s.done += 1
            if found { s.found += 1 }
            let now = QRScanner.now()
            guard s.done == total || now - s.last >= 0.25 else { return }
            s.last = now
            output.progress("sl-qr: decoded \(s.done) of \(total) files (\(s.found) with a QR code), last \(file)")
        }
    }
}
