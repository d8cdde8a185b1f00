import Foundation
@testable import StarlineQR
import Testing

/// Several codes in one photograph (`QRTiling`): ZXing-C++ 1.4 read once over a photographed sheet of small codes
/// returns some of them; the tiles give every one, and a photograph of one code, or a rendered image, is not tiled.
@Suite struct QRTilingTests {
    static let sheetPayloads = (0..<40).map { String(format: "sheet code %02d", $0) }

    /// A sheet of 40 version-1 codes (4-pixel modules) photographed: 2400 × 1800, a background that brightens
    /// across the sheet, ink at 25 and paper at 150–230, sensor noise, a soft lens, JPEG at quality 85. Each code
    /// sits in its cell of an 8 × 5 grid, shifted by a fixed pseudo-random amount (little vertically: rows stay rows).
    static func photographedSheet() throws -> GrayImage {
        let (width, height) = (2400, 1800)
        var random = UInt64(0x5EED)
        func next(_ bound: Int) -> Int {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((random >> 33) % UInt64(bound))
        }
        var parts: [(GrayImage, x: Int, y: Int)] = []
        for (index, payload) in sheetPayloads.enumerated() {
            let code = try TestImages.qrImage(payload, moduleSize: 4)
            let (cellWidth, cellHeight) = (width / 8, height / 5)
            let x = (index % 8) * cellWidth + 10 + next(cellWidth - code.width - 20)
            let y = (index / 8) * cellHeight + 40 + next(30)
            parts.append((code, x: x, y: y))
        }
        let sheet = TestImages.compose(width: width, height: height, parts)
        var pixels = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let light = 150 + 60 * x / width + 20 * y / height
                let ink = sheet[x, y] < 128 ? 25 : light
                pixels[y * width + x] = UInt8(max(0, min(255, ink + next(13) - 6)))
            }
        }
        let photographed = GrayImage(width: width, height: height, pixels: pixels).smoothed()
        return try ImageLoader.load(bytes: TestImages.jpeg(photographed, quality: 85), name: "sheet.jpg")
    }

    @Test("a photograph of one code that fills much of it, a small image and a rendered sheet are not tiled")
    func tilingIsWantedOnlyWhereCodesCanHide() throws {
        let sheet = try Self.photographedSheet()
        func symbol(_ x: Int, _ y: Int, side: Int) -> QRSymbol {
            QRSymbol(
                bytes: Array("x".utf8),
                corners: [QRPoint(x: x, y: y), QRPoint(x: x + side, y: y), QRPoint(x: x + side, y: y + side), QRPoint(x: x, y: y + side)])
        }
        // One code of 600 × 600 in 2400 × 1800: 8 % of the photograph.
        #expect(QRTiling.wanted(for: sheet, found: [symbol(100, 100, side: 600)]) == nil)
        // One code of 100 × 100 (0.2 %): room for more; several small ones: a sheet of them; two large ones: what
        // the photograph was taken of.
        #expect(QRTiling.wanted(for: sheet, found: [symbol(100, 100, side: 100)])?.tiles.count == 9)
        #expect(QRTiling.wanted(for: sheet, found: [symbol(100, 100, side: 150), symbol(900, 100, side: 150)]) != nil)
        #expect(QRTiling.wanted(for: sheet, found: [symbol(100, 100, side: 600), symbol(900, 100, side: 600)]) == nil)
        #expect(QRTiling.wanted(for: sheet, found: [symbol(100, 100, side: 100), symbol(900, 100, side: 600)]) == nil)
        #expect(QRTiling.wanted(for: sheet, found: []) == nil)
        // Below 1,200 pixels on the short side.
        let small = sheet.cropped(x: 0, y: 0, width: 1600, height: 1100)
        #expect(QRTiling.wanted(for: small, found: [symbol(10, 10, side: 50), symbol(300, 10, side: 50)]) == nil)
        // A rendered sheet (ink on white, no mid-tones): libzbar reads every code of it at once.
        let rendered = GrayImage(width: 2400, height: 1800, value: 255)
        #expect(!rendered.looksPhotographic)
        #expect(QRTiling.wanted(for: rendered, found: [symbol(10, 10, side: 50), symbol(300, 10, side: 50)]) == nil)
    }

    @Test(
        """
        tiles cover the image, overlap by a quarter of a tile at each inner edge, and stay inside it; cropping copies \
        the rectangle
        """)
    func tileGeometryAndCrop() {
        let tiling = QRTiling(width: 2400, height: 1800, grid: 3)
        #expect(tiling.tiles.count == 9)
        #expect(tiling.tiles.allSatisfy { $0.x >= 0 && $0.y >= 0 && $0.x + $0.width <= 2400 && $0.y + $0.height <= 1800 })
        // Every pixel lies in a tile, and a 200 × 150 square (a quarter of an 800 × 600 tile) anywhere lies whole in one.
        for (x, y) in [(0, 0), (2399, 1799), (700, 520), (1500, 1130), (1195, 895)] {
            #expect(tiling.tiles.contains { x >= $0.x && x < $0.x + $0.width && y >= $0.y && y < $0.y + $0.height })
        }
        for (x, y) in [(700, 520), (1500, 1130), (700, 1130), (1500, 520)] {
            #expect(
                tiling.tiles.contains { x >= $0.x && x + 200 <= $0.x + $0.width && y >= $0.y && y + 150 <= $0.y + $0.height },
                "(\(x), \(y))")
        }
        #expect(QRTiling(width: 5000, height: 4000, grid: 4).tiles.count == 16)
        let image = GrayImage(width: 4, height: 3, pixels: Array(0..<12))
        #expect(image.cropped(x: 1, y: 1, width: 2, height: 2) == GrayImage(width: 2, height: 2, pixels: [5, 6, 9, 10]))
        #expect(image.cropped(x: 3, y: 2, width: 5, height: 5) == GrayImage(width: 1, height: 1, pixels: [11]))
        #expect(image.cropped(x: 9, y: 0, width: 2, height: 2).pixelCount == 0)
        #expect(image.cropped(x: -2, y: -2, width: 3, height: 3) == GrayImage(width: 1, height: 1, pixels: [0]))
    }
}

/// The tiles need the second engine (the ZXing-C++ shim beside the tools, which the ThreadSanitizer run does not
/// build: it skips PhotoCorpusTests).
extension PhotoCorpusTests {
    @Test("several codes in one photograph: ZXing-C++ read once misses some, its tiles give every one, in reading order")
    func photographedSheetIsReadWhole() throws {
        let image = try QRTilingTests.photographedSheet()
        #expect(image.looksPhotographic)
        let zxing = try ZXingLibrary.shared.get()
        let once = Set(zxing.decode(image).map { String(decoding: $0.bytes, as: UTF8.self) })
        #expect(
            once.count < QRTilingTests.sheetPayloads.count,
            "read once, ZXing-C++ 1.4 already gives every code: the tiles are not what reads them")
        let result = try QRScanner().scan(image)
        let texts = result.symbols.map { String(decoding: $0.bytes, as: UTF8.self) }
        #expect(Set(texts) == Set(QRTilingTests.sheetPayloads), "missing: \(Set(QRTilingTests.sheetPayloads).subtracting(texts).sorted())")
        #expect(texts.count == QRTilingTests.sheetPayloads.count, "each code once")
        // Reading order: the sheet's rows top to bottom, each row left to right (the payloads' order).
        #expect(texts == QRTilingTests.sheetPayloads)
    }
}
