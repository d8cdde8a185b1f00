import StarlineCore
import StarlineQR

/// Renders a payload as `encode` and `friend` print it: the image on stdout, or written to `-o FILE`
/// with a JSON record describing it on stdout.
enum QRImageWriter {
    static func write(payload: [UInt8], _ options: EncodeOptions, extraFields: [(String, JSON)], _ context: CommandContext) throws
        -> ExitStatus
    {
        let output = context.output
        let format = try options.format ?? QRFormat.implied(outputPath: options.outputPath, terminal: output.stdoutIsTerminal)
        let pretty = output.mode == .pretty && options.outputPath == nil
        guard let outputPath = options.outputPath else {
            if format == .png, output.stdoutIsTerminal {
                throw StarlineError(.usage, "refusing to write a PNG image to a terminal; use -o FILE, redirect stdout, or --format utf8")
            }
            output.writeBytes(try render(payload: payload, options, format: format, prettyMatrix: pretty).bytes)
            return .ok
        }
        output.emit(.object(try writeFile(payload: payload, options, format: format, to: outputPath, extraFields: extraFields)))
        return .ok
    }

    /// Encodes, renders and (with --verify) checks one payload: the bytes of the image and its matrix.
    static func render(payload: [UInt8], _ options: EncodeOptions, format: QRFormat, prettyMatrix: Bool) throws -> (
        matrix: QRMatrix, bytes: [UInt8]
    ) {
        guard !payload.isEmpty else { throw StarlineError(.usage, "nothing to encode: the payload is empty") }
        let (moduleSize, margin) = (options.moduleSize, options.margin)
        let matrix = try QREncoder.encode(payload, level: options.level, minVersion: options.minVersion, maxVersion: options.maxVersion)
        let rendered: [UInt8] =
            switch format {
            case .png: try QRRenderer.png(matrix, moduleSize: moduleSize, margin: margin)
            case .svg: Array(QRRenderer.svg(matrix, moduleSize: moduleSize, margin: margin).utf8)
            case .utf8: Array(QRRenderer.utf8(matrix, margin: margin).utf8)
            case .ansi: Array(QRRenderer.ansi(matrix, margin: margin).utf8)
            case .ascii: Array(QRRenderer.ascii(matrix, margin: margin).utf8)
            case .matrix: Array((QRRenderer.matrix(matrix).serialized(prettyMatrix ? .pretty : .compact) + "\n").utf8)
            }
        if options.verify { try verify(payload: payload, matrix: matrix, png: format == .png ? rendered : nil, margin: margin) }
        return (matrix, rendered)
    }

    /// Renders one payload into `path` (atomically, or in place for a device or FIFO: `OutputTarget`) and returns the record that describes it.
    static func writeFile(
        payload: [UInt8], _ options: EncodeOptions, format: QRFormat, to path: String,
        extraFields: [(String, JSON)]
    ) throws -> [(String, JSON)] {
        let (matrix, rendered) = try render(payload: payload, options, format: format, prettyMatrix: false)
        try OutputTarget.write(rendered, to: path, mode: 0o666, sync: false, applyUmask: true)
        return [
            ("file", .string(path)), ("format", .string(format.rawValue)), ("version", .int(matrix.version)),
            ("level", .string(options.level.rawValue)), ("modules", .int(matrix.size)), ("payloadBytes", .int(payload.count))
        ]
            + (format == .png || format == .svg ? [("pixels", .int((matrix.size + 2 * options.margin) * options.moduleSize))] : [])
            + extraFields + [("verified", .bool(options.verify))]
    }

    /// Decodes what was made: the PNG bytes themselves, or the matrix drawn as an image for text formats.
    static func verify(payload: [UInt8], matrix: QRMatrix, png: [UInt8]?, margin: Int) throws {
        let quietZone = max(margin, 4)
        let image =
            try png.map { try ImageLoader.load(bytes: $0, name: "generated image") }
            ?? GrayImage(
                width: (matrix.size + 2 * quietZone) * 4, height: (matrix.size + 2 * quietZone) * 4,
                pixels: QRRenderer.grayPixels(matrix, moduleSize: 4, margin: quietZone))
        // Only the image as made counts: a code that needs an inverted or rescaled retry is not verified.
        let result = try QRScanner().scan(image, attempts: [.original])
        guard result.symbols.count == 1, result.symbols[0].bytes == payload else {
            throw StarlineError(
                .verificationFailed, "the generated QR code does not decode back to the payload",
                details: .object([("symbolsFound", .int(result.symbols.count))]))
        }
    }
}
