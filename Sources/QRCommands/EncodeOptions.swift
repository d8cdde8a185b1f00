import StarlineCore
import StarlineQR

/// What `encode` can write.
enum QRFormat: String, CaseIterable, Sendable {
    case png, svg, utf8, ansi, ascii, matrix

    /// The format when `--format` is not given: from the output file's extension (`.png`, `.svg`,
    /// `.txt`, `.json`; png for a name without one), else utf8 on a terminal and png otherwise. Any
    /// other extension is a usage error: `-o x.jpg` used to get a PNG under a JPEG name.
    static func implied(outputPath: String?, terminal: Bool) throws -> QRFormat {
        guard let outputPath else { return terminal ? .utf8 : .png }
        let name = outputPath.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return .png }
        let ext = name[name.index(after: dot)...].lowercased()
        switch ext {
        case "png": return .png
        case "svg": return .svg
        case "txt": return .utf8
        case "json": return .matrix
        default:
            throw StarlineError(
                .usage,
                "cannot tell the format from the extension .\(ext) of \(outputPath): use a .png, .svg, .txt or .json name, or --format png|svg|utf8|ansi|ascii|matrix",
                details: .object([
                    ("file", .string(outputPath)), ("extension", .string(ext)),
                    ("formats", .array(QRFormat.allCases.map { .string($0.rawValue) }))
                ]))
        }
    }
}

/// The options `encode` and `friend` share, declared once with their defaults and ranges.
struct EncodeOptions: OptionGroup {
    static let format = Option<QRFormat?>.choice(
        "format", short: "f", "FORMAT",
        help: """
            Output format; from the -o extension (.png, .svg, .txt, .json; another extension is an error), else png, or \
            utf8 when writing to a terminal.
            """)
    static let output = Option<String?>.string(
        "output", short: "o", "FILE",
        help: """
            Write the image to FILE and print a JSON record instead. A regular FILE is replaced atomically (never seen \
            half-written; through a symbolic link, its target), a device or FIFO written in place, and, like other output \
            files, gets the umask and is not fsync'ed (use sync(1) when that matters).
            """, completion: .file(extensions: ["png", "svg", "txt", "json"]))
    static let level = Option<QRErrorCorrection>.choice("level", short: "l", "LEVEL", help: "Error correction level.", default: .M)
    static let size = Option<Int>.integer(
        "size", short: "s", "PIXELS", help: "Module size in pixels (png, svg).", default: 4, range: 1...100)
    static let margin = Option<Int>.integer(
        "margin", short: "m", "MODULES", help: "Quiet zone around the symbol, in modules.", default: 4, range: 0...100)
    static let minVersion = Option<Int>.integer("min-version", "N", help: "Smallest QR version (1-40) to use.", default: 1, range: 1...40)
    static let maxVersion = Option<Int>.integer(
        "max-version", "N", help: "Largest QR version (1-40) allowed; more data fails with exit 12 naming the capacity.", default: 40,
        range: 1...40)
    static let verify = Option<Bool>.flag(
        "verify", help: "Decode the image that was made and fail (exit 12) unless it reads back as the exact payload.")

    static let specs: [OptionSpec] = [
        format.spec, output.spec, level.spec, size.spec, margin.spec, minVersion.spec, maxVersion.spec, verify.spec
    ]

    var format: QRFormat?
    /// nil: stdout (`-o -` too).
    var outputPath: String?
    var level: QRErrorCorrection
    var moduleSize: Int
    var margin: Int
    var minVersion: Int
    var maxVersion: Int
    var verify: Bool

    init(_ arguments: ParsedArguments) throws {
        format = try arguments[Self.format]
        outputPath = try arguments[Self.output].flatMap { $0 == "-" ? nil : $0 }
        level = try arguments[Self.level]
        moduleSize = try arguments[Self.size]
        margin = try arguments[Self.margin]
        try QRRenderer.validate(moduleSize: moduleSize, margin: margin)
        minVersion = try arguments[Self.minVersion]
        maxVersion = try arguments[Self.maxVersion]
        guard minVersion <= maxVersion else {
            throw StarlineError(.usage, "--min-version \(minVersion) is greater than --max-version \(maxVersion)")
        }
        verify = try arguments[Self.verify]
        // Checked here, before standard input is read or anything is encoded.
        if format == nil, let outputPath { _ = try QRFormat.implied(outputPath: outputPath, terminal: false) }
    }
}
