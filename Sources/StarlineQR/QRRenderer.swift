import StarlineCore

/// Output formats for a `QRMatrix`. `margin` is the quiet zone in modules (the standard asks
/// for 4); `moduleSize` is the side of one module in pixels.
///
/// The string renderers do not throw: call `validate(moduleSize:margin:)` on user input first
/// (a negative margin or a module size below 1 is a programming error there).
public enum QRRenderer {
    /// Largest PNG side in pixels we agree to allocate (16 384² bytes = 256 MiB of raw gray).
    public static let maxPixelSide = 16_384

    /// Throws `USAGE` unless `moduleSize ≥ 1` and `margin ≥ 0` (and both are of a sane size).
    public static func validate(moduleSize: Int = 4, margin: Int = 4) throws {
        guard (1...maxPixelSide).contains(moduleSize) else {
            throw StarlineError(
                .usage, "module size must be between 1 and \(maxPixelSide) pixels (got \(moduleSize))",
                details: .object([("moduleSize", .int(moduleSize))]))
        }
        guard (0...maxPixelSide).contains(margin) else {
            throw StarlineError(
                .usage, "margin must be between 0 and \(maxPixelSide) modules (got \(margin))",
                details: .object([("margin", .int(margin))]))
        }
    }

    // MARK: PNG

    /// A 1-bit grayscale PNG: dark modules black, light modules and quiet zone white; the image is
    /// `(size + 2·margin)·moduleSize` pixels square. Identical input gives identical bytes.
    public static func png(_ matrix: QRMatrix, moduleSize: Int = 4, margin: Int = 4) throws -> [UInt8] {
        try validate(moduleSize: moduleSize, margin: margin)
        let side = (matrix.size + 2 * margin) * moduleSize
        guard side <= maxPixelSide else {
            throw StarlineError(
                .usage,
                "a \(side)×\(side) pixel image is larger than the \(maxPixelSide) pixel limit; "
                    + "use a smaller module size or margin",
                details: .object([("side", .int(side)), ("maxSide", .int(maxPixelSide))]))
        }
        return try PNGWriter.oneBitGray(width: side, height: side, scanlines: scanlines(matrix, moduleSize: moduleSize, margin: margin))
    }

    /// The PNG scanlines (see `PNGWriter.oneBitGray`), built per module row: one white scanline with the
    /// dark modules' bits cleared, repeated `moduleSize` times — never a byte per pixel.
    static func scanlines(_ matrix: QRMatrix, moduleSize: Int, margin: Int) -> [UInt8] {
        let n = matrix.size
        let side = (n + 2 * margin) * moduleSize
        let stride = PNGWriter.scanlineBytes(width: side)
        var white = [UInt8](repeating: 0xFF, count: stride)
        white[0] = 0  // filter type None
        if side % 8 != 0 { white[stride - 1] = 0xFF << UInt8(8 - side % 8) }  // unused bits 0
        var out: [UInt8] = []
        out.reserveCapacity(stride * side)
        for _ in 0..<margin * moduleSize { out += white }
        var row = white
        for y in 0..<n {
            row = white
            for x in 0..<n where matrix.modules[y * n + x] != 0 {
                let first = (x + margin) * moduleSize
                for pixel in first..<first + moduleSize {
                    row[1 + pixel >> 3] &= ~(0x80 >> UInt8(pixel & 7))
                }
            }
            for _ in 0..<moduleSize { out += row }
        }
        for _ in 0..<margin * moduleSize { out += white }
        return out
    }

    /// The raw image: start all white, blacken the dark modules of the first pixel row of each
    /// module row, then copy that row `moduleSize - 1` times.
    package static func grayPixels(_ matrix: QRMatrix, moduleSize: Int, margin: Int) -> [UInt8] {
        let n = matrix.size
        let side = (n + 2 * margin) * moduleSize
        var pixels = [UInt8](repeating: 255, count: side * side)
        matrix.modules.withUnsafeBufferPointer { modules in
            pixels.withUnsafeMutableBufferPointer { buffer in
                let base = buffer.baseAddress!
                for y in 0..<n {
                    let row = base + (y + margin) * moduleSize * side
                    for x in 0..<n where modules[y * n + x] != 0 {
                        (row + (x + margin) * moduleSize).update(repeating: 0, count: moduleSize)
                    }
                    for copy in 1..<moduleSize {
                        (row + copy * side).update(from: row, count: side)
                    }
                }
            }
        }
        return pixels
    }

    // MARK: SVG

    /// A standalone SVG: `width`/`height` in pixels, `viewBox` in modules, a white background
    /// and one black `<path>` made of the horizontal runs of dark modules.
    public static func svg(_ matrix: QRMatrix, moduleSize: Int = 4, margin: Int = 4) -> String {
        precondition(moduleSize >= 1 && margin >= 0, "validate(moduleSize:margin:) first")
        let modules = matrix.size + 2 * margin
        let pixels = modules * moduleSize
        var path = ""
        path.reserveCapacity(matrix.size * matrix.size)
        for y in 0..<matrix.size {
            var x = 0
            while x < matrix.size {
                guard matrix[x, y] else { x += 1; continue }
                let start = x
                while x < matrix.size && matrix[x, y] { x += 1 }
                let run = x - start
                path += "M\(start + margin) \(y + margin)h\(run)v1h-\(run)z"
            }
        }
        var svg = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="\(pixels)" height="\(pixels)" \
            viewBox="0 0 \(modules) \(modules)" shape-rendering="crispEdges">
            <rect width="\(modules)" height="\(modules)" fill="#ffffff"/>

            """
        if !path.isEmpty { svg += "<path fill=\"#000000\" d=\"\(path)\"/>\n" }
        svg += "</svg>\n"
        return svg
    }

    // MARK: Terminal text

    /// Half blocks, two module rows per line, for terminals with a DARK background: light
    /// modules and the quiet zone are drawn as ink (`▀ ▄ █`), dark modules are left blank — the
    /// convention of `qrencode -t UTF8`. Below an odd last row there is only background.
    /// `ceil((size + 2·margin) / 2)` lines, each ending in `\n`.
    public static func utf8(_ matrix: QRMatrix, margin: Int = 4) -> String {
        precondition(margin >= 0, "validate(moduleSize:margin:) first")
        let total = matrix.size + 2 * margin
        var out = ""
        out.reserveCapacity((total + 1) / 2 * (total * 3 + 1))
        for top in stride(from: 0, to: total, by: 2) {
            for x in 0..<total {
                let upper = !matrix.isDark(x: x - margin, y: top - margin)
                let lower = top + 1 < total && !matrix.isDark(x: x - margin, y: top + 1 - margin)
                let cell: String =
                    switch (upper, lower) {
                    case (true, true): "█"
                    case (true, false): "▀"
                    case (false, true): "▄"
                    case (false, false): " "
                    }
                out += cell
            }
            out += "\n"
        }
        return out
    }

    /// Background colours (`ESC[47m` light, `ESC[40m` dark), two spaces per module, one module
    /// row per line, `ESC[0m` before each newline: readable on any terminal theme.
    public static func ansi(_ matrix: QRMatrix, margin: Int = 4) -> String {
        precondition(margin >= 0, "validate(moduleSize:margin:) first")
        let light = "\u{1B}[47m", dark = "\u{1B}[40m", reset = "\u{1B}[0m"
        let total = matrix.size + 2 * margin
        var out = ""
        for y in 0..<total {
            var current: Bool? = nil
            for x in 0..<total {
                let isDark = matrix.isDark(x: x - margin, y: y - margin)
                // Emit a colour only where it changes: same picture, a fraction of the bytes.
                if isDark != current { out += isDark ? dark : light; current = isDark }
                out += "  "
            }
            out += reset + "\n"
        }
        return out
    }

    /// `##` per dark module, two spaces per light one, the quiet zone as spaces, one module row
    /// per line — the layout of `qrencode -t ASCII`.
    public static func ascii(_ matrix: QRMatrix, margin: Int = 4) -> String {
        precondition(margin >= 0, "validate(moduleSize:margin:) first")
        let total = matrix.size + 2 * margin
        var bytes: [UInt8] = []
        bytes.reserveCapacity(total * (2 * total + 1))
        for y in 0..<total {
            for x in 0..<total {
                let mark: UInt8 = matrix.isDark(x: x - margin, y: y - margin) ? UInt8(ascii: "#") : UInt8(ascii: " ")
                bytes.append(mark)
                bytes.append(mark)
            }
            bytes.append(UInt8(ascii: "\n"))
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: JSON

    /// `{"version":V,"level":"M","size":N,"rows":["1110…",…]}`: one string per module row,
    /// `1` dark and `0` light, without the quiet zone.
    public static func matrix(_ matrix: QRMatrix) -> JSON {
        var rows: [JSON] = []
        rows.reserveCapacity(matrix.size)
        var line = [UInt8](repeating: 0, count: matrix.size)
        for y in 0..<matrix.size {
            for x in 0..<matrix.size { line[x] = matrix[x, y] ? UInt8(ascii: "1") : UInt8(ascii: "0") }
            rows.append(.string(String(decoding: line, as: UTF8.self)))
        }
        return .object([
            ("version", .int(matrix.version)),
            ("level", .string(matrix.level.rawValue)),
            ("size", .int(matrix.size)),
            ("rows", .array(rows))
        ])
    }
}
