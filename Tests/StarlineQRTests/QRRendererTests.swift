import CPNG
import Foundation
import StarlineCore
import Testing

@testable import StarlineQR

private let sample = "https://starline.example/friend/AB12CD34"

// MARK: - PNG

@Test("PNG output is byte-identical for identical input")
func pngDeterministic() throws {
    let first = try QRRenderer.png(try QREncoder.encode(sample))
    let second = try QRRenderer.png(try QREncoder.encode(sample))
    #expect(first == second)
    #expect(first != (try QRRenderer.png(try QREncoder.encode(sample + "!"))))
}

@Test(
    "PNG is 1-bit grayscale of (size + 2·margin)·moduleSize pixels, with no time or text chunks",
    arguments: [(1, 0), (4, 4), (3, 2), (10, 1), (2, 7)])
func pngHeader(moduleSize: Int, margin: Int) throws {
    let matrix = try QREncoder.encode(sample, level: .Q)
    let png = try QRRenderer.png(matrix, moduleSize: moduleSize, margin: margin)
    let side = (matrix.size + 2 * margin) * moduleSize
    #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
    let chunks = try pngChunks(png)
    let ihdr = try #require(chunks.first)
    #expect(ihdr.type == "IHDR")
    #expect(bigEndian(ihdr.data, at: 0) == side)
    #expect(bigEndian(ihdr.data, at: 4) == side)
    #expect(ihdr.data[8] == 1, "bit depth")
    #expect(ihdr.data[9] == 0, "colour type 0 = grayscale")
    #expect(chunks.map(\.type) == ["IHDR", "IDAT", "IEND"])
    #expect(chunks.last?.type == "IEND")
    let types = Set(chunks.map(\.type))
    #expect(types.isDisjoint(with: ["tIME", "tEXt", "zTXt", "iTXt"]), "chunks: \(chunks.map(\.type))")
}

@Test(
    "PNG pixels: dark modules 0, light modules and quiet zone 255, every pixel",
    arguments: [(1, 0), (4, 4), (3, 2)])
func pngPixels(moduleSize: Int, margin: Int) throws {
    let matrix = try QREncoder.encode(Array("pixels ✓".utf8), level: .M)
    let decoded = try readPNGGray(try QRRenderer.png(matrix, moduleSize: moduleSize, margin: margin))
    let side = (matrix.size + 2 * margin) * moduleSize
    #expect(decoded.width == side && decoded.height == side)
    var mismatches = 0
    for py in 0..<side {
        for px in 0..<side {
            let x = px / moduleSize - margin, y = py / moduleSize - margin
            let dark = x >= 0 && y >= 0 && x < matrix.size && y < matrix.size && matrix[x, y]
            if decoded.pixels[py * side + px] != (dark ? 0 : 255) { mismatches += 1 }
        }
    }
    #expect(mismatches == 0)
}

@Test("PNG rejects bad module sizes and margins, and images beyond the pixel limit, as usage errors")
func pngValidation() throws {
    let small = try QREncoder.encode("x")
    for (moduleSize, margin) in [(0, 4), (-1, 4), (4, -1)] {
        let error = try #require(throws: StarlineError.self) {
            try QRRenderer.png(small, moduleSize: moduleSize, margin: margin)
        }
        #expect(error.code == .usage, "moduleSize \(moduleSize) margin \(margin)")
    }
    let huge = try QREncoder.encode("x", minVersion: 40)
    let error = try #require(throws: StarlineError.self) { try QRRenderer.png(huge, moduleSize: 100) }
    #expect(error.code == .usage)
    #expect(throws: Never.self) { try QRRenderer.validate(moduleSize: 1, margin: 0) }
}

@Test("a version-40 PNG at 8 px per module has the right size")
func largePNG() throws {
    let matrix = try QREncoder.encode([UInt8](repeating: 0xFF, count: 2953), level: .L)
    let png = try QRRenderer.png(matrix, moduleSize: 8)
    // IHDR width and height, big-endian at offsets 16 and 20: (177 + 8) * 8 = 1480.
    #expect(Array(png[16..<24]) == [0, 0, 0x05, 0xC8, 0, 0, 0x05, 0xC8])
}

// MARK: - SVG

@Test("SVG is standalone, sized in pixels with a module viewBox, and its path draws exactly the dark modules")
func svgOutput() throws {
    let matrix = try QREncoder.encode(sample, level: .H)
    let margin = 3, moduleSize = 5
    let svg = QRRenderer.svg(matrix, moduleSize: moduleSize, margin: margin)
    let modules = matrix.size + 2 * margin
    let pixels = modules * moduleSize
    #expect(svg.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "))
    #expect(svg.hasSuffix("</svg>\n"))
    #expect(svg.contains("xmlns=\"http://www.w3.org/2000/svg\""))
    #expect(svg.contains("width=\"\(pixels)\" height=\"\(pixels)\""))
    #expect(svg.contains("viewBox=\"0 0 \(modules) \(modules)\""))
    #expect(svg.contains("shape-rendering=\"crispEdges\""))
    #expect(svg.contains("<rect width=\"\(modules)\" height=\"\(modules)\" fill=\"#ffffff\"/>"))
    #expect(svg.components(separatedBy: "<path").count == 2, "exactly one path")

    // Replay the path: every "M x y h n v1 h-n z" is one horizontal run of dark modules.
    let d = try #require(svg.components(separatedBy: " d=\"").last?.components(separatedBy: "\"").first)
    var painted = [[Bool]](repeating: [Bool](repeating: false, count: modules), count: modules)
    for run in d.split(separator: "M") {
        let parts = run.split(separator: " ")
        let x = try #require(Int(parts[0]))
        let rest = parts[1].split(separator: "h")
        let y = try #require(Int(rest[0]))
        let length = try #require(Int(rest[1].dropLast(2)))  // "7v1"
        #expect(rest.count == 3 && rest[2] == "-\(length)z")
        for i in x..<(x + length) {
            #expect(!painted[y][i], "module \(i),\(y) painted twice")
            painted[y][i] = true
        }
    }
    let expected = (0..<modules).map { y in
        (0..<modules).map { x in matrix.isDark(x: x - margin, y: y - margin) }
    }
    #expect(painted == expected)
}

// MARK: - Terminal renderers

@Test(
    "UTF-8 half blocks: ceil((size+2·margin)/2) lines, light modules drawn as ink",
    arguments: [0, 1, 2, 3, 4])
func utf8Output(margin: Int) throws {
    let matrix = try QREncoder.encode(sample)
    let text = QRRenderer.utf8(matrix, margin: margin)
    let total = matrix.size + 2 * margin
    #expect(text.hasSuffix("\n"))
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
    #expect(lines.count == (total + 1) / 2)
    for (index, line) in lines.enumerated() {
        let cells = Array(line)
        try #require(cells.count == total, "line \(index) has \(cells.count) cells")
        for (x, cell) in cells.enumerated() {
            let top = 2 * index, bottom = 2 * index + 1
            let upperInk = !matrix.isDark(x: x - margin, y: top - margin)
            let lowerInk = bottom < total && !matrix.isDark(x: x - margin, y: bottom - margin)
            let expected: Character = upperInk ? (lowerInk ? "█" : "▀") : (lowerInk ? "▄" : " ")
            #expect(cell == expected, "line \(index) cell \(x)")
        }
    }
    if margin >= 2 {
        // The top quiet zone is solid ink: two light module rows per line.
        #expect(lines.first == Substring(String(repeating: "█", count: total)))
    }
}

@Test("ANSI output: one module row per line, two spaces per module, reset at every line end")
func ansiOutput() throws {
    let matrix = try QREncoder.encode(sample, level: .L)
    let margin = 2
    let text = QRRenderer.ansi(matrix, margin: margin)
    let total = matrix.size + 2 * margin
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
    #expect(lines.count == total)
    let light = "\u{1B}[47m", dark = "\u{1B}[40m", reset = "\u{1B}[0m"
    for (y, line) in lines.enumerated() {
        #expect(line.hasSuffix(reset), "line \(y)")
        var rest = Substring(line.dropLast(reset.count))
        var colour: Bool? = nil
        var row: [Bool] = []
        while !rest.isEmpty {
            if rest.hasPrefix(light) {
                colour = false; rest = rest.dropFirst(light.count)
            } else if rest.hasPrefix(dark) {
                colour = true; rest = rest.dropFirst(dark.count)
            } else {
                try #require(rest.hasPrefix("  "), "unexpected text in line \(y)")
                let current: Bool = try #require(colour as Bool?, "module before any colour in line \(y)")
                row.append(current)
                rest = rest.dropFirst(2)
            }
        }
        #expect(row == (0..<total).map { matrix.isDark(x: $0 - margin, y: y - margin) }, "line \(y)")
    }
}

@Test("ASCII output is byte-identical to qrencode -t ASCII", arguments: [0, 2, 4])
func asciiMatchesQrencode(margin: Int) throws {
    for level in [QRErrorCorrection.L, .H] {
        let matrix = try QREncoder.encode(sample, level: level)
        let ours = QRRenderer.ascii(matrix, margin: margin)
        let theirs = try runTool(qrencodePath, ["-t", "ASCII", "-m", String(margin), "-l", level.rawValue, sample])
        try #require(theirs.status == 0)
        #expect(Array(ours.utf8) == theirs.stdout, "margin \(margin) level \(level)")
        let lines = ours.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        let total = matrix.size + 2 * margin
        #expect(lines.count == total)
        #expect(lines.allSatisfy { $0.count == 2 * total })
    }
}

// MARK: - JSON matrix

@Test("matrix JSON: version, level, size and one 0/1 string per row without quiet zone")
func matrixJSON() throws {
    let matrix = try QREncoder.encode(sample, level: .Q)
    let json = QRRenderer.matrix(matrix)
    #expect(json.objectValue?.map(\.0) == ["version", "level", "size", "rows"])
    #expect(json["version"]?.intValue == Int64(matrix.version))
    #expect(json["level"]?.stringValue == "Q")
    #expect(json["size"]?.intValue == Int64(matrix.size))
    let rowValues = try #require(json["rows"]?.arrayValue)
    let rows = rowValues.compactMap { $0.stringValue }
    #expect(rows.count == matrix.size)
    #expect(rows.allSatisfy { $0.count == matrix.size && $0.allSatisfy { $0 == "0" || $0 == "1" } })
    #expect(rows.map { String($0.map { $0 == "1" ? "#" : "." }) } == moduleRows(matrix))
    // The finder pattern's top edge starts the first row.
    #expect(rows[0].hasPrefix("11111110"))
    let compact = json.serialized()
    #expect(compact.hasPrefix("{\"version\":\(matrix.version),\"level\":\"Q\",\"size\":\(matrix.size),\"rows\":[\"1111111"))
    #expect(try JSON.parse(compact) == json)
}

// MARK: - Helpers

struct PNGChunk {
    var type: String
    var data: [UInt8]
}

func bigEndian(_ bytes: [UInt8], at offset: Int) -> Int {
    bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
}

/// Walks the chunk list after the signature; fails on truncation.
func pngChunks(_ png: [UInt8]) throws -> [PNGChunk] {
    var chunks: [PNGChunk] = []
    var offset = 8
    while offset < png.count {
        try #require(offset + 12 <= png.count, "truncated chunk header")
        let length = bigEndian(png, at: offset)
        let type = String(decoding: png[offset + 4..<offset + 8], as: UTF8.self)
        try #require(offset + 12 + length <= png.count, "truncated \(type) chunk")
        chunks.append(PNGChunk(type: type, data: Array(png[offset + 8..<offset + 8 + length])))
        offset += 12 + length
    }
    return chunks
}

/// Decodes a PNG to 8-bit gray with libpng's simplified read API (independent of our writer).
func readPNGGray(_ png: [UInt8]) throws -> (width: Int, height: Int, pixels: [UInt8]) {
    var image = png_image()
    image.version = png_uint_32(PNG_IMAGE_VERSION)
    defer { png_image_free(&image) }
    let begun = png.withUnsafeBytes { png_image_begin_read_from_memory(&image, $0.baseAddress, $0.count) }
    try #require(begun != 0, "libpng could not read the header")
    image.format = png_uint_32(PNG_FORMAT_GRAY)
    var pixels = [UInt8](repeating: 0x7F, count: Int(starline_png_image_size(&image)))
    let finished = pixels.withUnsafeMutableBytes { png_image_finish_read(&image, nil, $0.baseAddress, 0, nil) }
    try #require(finished != 0, "libpng could not decode the image")
    return (Int(image.width), Int(image.height), pixels)
}
