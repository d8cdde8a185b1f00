import Foundation
@testable import StarlineQR
import StarlineTestSupport
import Testing

/// Where codes are, from their finder patterns (`FinderPatternScan`, `QRRegionsOfInterest`), and the cubic upscale
/// a region of small modules is read at (`GrayImage.sharplyUpscaled`).
@Suite struct QRRegionsOfInterestTests {
    @Test("runs in the ratio 1:1:3:1:1 within half a module fit a finder pattern; others do not")
    func finderRatio() {
        #expect(FinderPatternScan.fitsRatio([1, 1, 3, 1, 1]))
        #expect(FinderPatternScan.fitsRatio([4, 4, 12, 4, 4]))
        #expect(FinderPatternScan.fitsRatio([5, 3, 13, 4, 4]), "photographed: each run within half a module")
        #expect(!FinderPatternScan.fitsRatio([4, 4, 4, 4, 4]), "a centre as narrow as the rings")
        #expect(!FinderPatternScan.fitsRatio([4, 4, 12, 4, 9]), "an outer run twice a module")
        #expect(!FinderPatternScan.fitsRatio([1, 1, 3, 1, 0]), "a run missing")
        #expect(!FinderPatternScan.fitsRatio([1, 1, 2, 1, 1]), "under 7 pixels in all")
    }

    @Test("a rendered code's three finder patterns are found at their centres, with its module size")
    func finderPatternsOfARenderedCode() throws {
        let module = 5, margin = 4
        let code = try TestImages.qrImage("finder patterns", moduleSize: module, margin: margin)
        let (ox, oy) = (140, 90)
        let image = TestImages.compose(width: 640, height: 480, [(code, x: ox, y: oy)])
        let patterns = FinderPatternScan(image).patterns()
        let side = code.width / module - 2 * margin
        // A finder's centre is 3.5 modules in from the symbol's corner.
        let near = Double(margin) + 3.5, far = Double(margin + side) - 3.5
        let expected = [(near, near), (far, near), (near, far)].map { (Double(ox) + $0.0 * 5, Double(oy) + $0.1 * 5) }
        #expect(patterns.count == 3, "\(patterns)")
        for (x, y) in expected {
            let match = patterns.first { abs($0.x - x) <= 2 && abs($0.y - y) <= 2 }
            #expect(match != nil, "no pattern at (\(x), \(y)): \(patterns)")
            if let match { #expect(abs(match.module - Double(module)) < 1, "\(match)") }
        }
        // Nothing on a blank page or in noise-free gradients.
        #expect(FinderPatternScan(GrayImage(width: 400, height: 300, value: 255)).patterns().isEmpty)
        let gradient = GrayImage(width: 400, height: 300, pixels: (0..<120_000).map { UInt8(($0 % 400) * 255 / 399) })
        #expect(FinderPatternScan(gradient).patterns().isEmpty)
    }

    static func pattern(_ x: Double, _ y: Double, module: Double = 4) -> FinderPattern {
        FinderPattern(x: x, y: y, module: module, hits: 3)
    }

    @Test("three patterns at the corners of a square make one region around the code and its quiet zone")
    func threePatternsMakeARegion() throws {
        let square = [Self.pattern(100, 100), Self.pattern(300, 100), Self.pattern(100, 300)]
        let regions = QRRegionsOfInterest(patterns: square, width: 1000, height: 800).regions
        try #require(regions.count == 1)
        let region = regions[0]
        // The fourth corner (300, 300) is inside, with 3.5 modules of pattern and 4 of quiet zone beyond every centre.
        let beyond = 7.5 * 4.0
        let points: [(Double, Double)] = [(100, 100), (300, 300), (100 - beyond, 100 - beyond), (300 + beyond, 300 + beyond)]
        for (x, y) in points {
            #expect(region.contains(x: x, y: y), "(\(x), \(y)) outside \(region)")
        }
        #expect(region.module == 4)
        // Clipped to the image.
        let corner = QRRegionsOfInterest(
            patterns: [Self.pattern(20, 20), Self.pattern(220, 20), Self.pattern(20, 220)], width: 240, height: 240
        ).regions
        #expect(corner.count == 1 && corner.allSatisfy { $0.x >= 0 && $0.y >= 0 && $0.x + $0.width <= 240 && $0.y + $0.height <= 240 })
        // The code already read is left out, its patterns with it (no pair of them is read either).
        let read = QRRegionsOfInterest.Region(x: 80, y: 80, width: 240, height: 240)
        #expect(QRRegionsOfInterest(patterns: square, width: 1000, height: 800, excluding: [read]).regions.isEmpty)
        // Beside it, another code's patterns still make its region.
        let beside = square + [Self.pattern(600, 100), Self.pattern(800, 100), Self.pattern(600, 300)]
        let other = QRRegionsOfInterest(patterns: beside, width: 1000, height: 800, excluding: [read]).regions
        #expect(other.count == 1 && other.allSatisfy { $0.contains(x: 700, y: 200) && !$0.contains(x: 200, y: 200) }, "\(other)")
    }

    @Test("patterns that cannot be one code's make no three-pattern region: unlike modules, a flat angle, too far apart")
    func shapesThatAreNotACode() {
        let c = Self.pattern(100, 100)
        #expect(QRRegionsOfInterest.score(corner: c, Self.pattern(300, 100), Self.pattern(100, 300)) == 0)
        #expect(QRRegionsOfInterest.score(corner: c, Self.pattern(300, 100, module: 9), Self.pattern(100, 300)) == nil)
        #expect(QRRegionsOfInterest.score(corner: c, Self.pattern(300, 100), Self.pattern(300, 160)) == nil, "45°")
        #expect(QRRegionsOfInterest.score(corner: c, Self.pattern(300, 100), Self.pattern(100, 500)) == nil, "sides 1:2")
        #expect(QRRegionsOfInterest.score(corner: c, Self.pattern(130, 100), Self.pattern(100, 130)) == nil, "7 modules apart")
        #expect(QRRegionsOfInterest.score(corner: c, Self.pattern(900, 100), Self.pattern(100, 900)) == nil, "200 modules apart")
        // A tilted code (sides 1:1.2, 80°) still is one, scored worse than the square.
        let tilted = QRRegionsOfInterest.score(corner: c, Self.pattern(300, 100), Self.pattern(135, 335))
        #expect(tilted != nil && tilted! > 0)
    }

    @Test("two patterns a code's distance apart make a region holding either side of them (the third unreadable)")
    func twoPatternsMakeARegion() throws {
        let regions = QRRegionsOfInterest(patterns: [Self.pattern(400, 300), Self.pattern(600, 300)], width: 1000, height: 800).regions
        try #require(regions.count == 1)
        // The code is above the two or below them.
        for (x, y) in [(400.0, 100.0), (600, 500), (400, 500), (600, 100)] {
            #expect(regions[0].contains(x: x, y: y), "(\(x), \(y)) outside \(regions[0])")
        }
        // A lone pattern, and two of unlike size, make none.
        #expect(QRRegionsOfInterest(patterns: [Self.pattern(400, 300)], width: 1000, height: 800).regions.isEmpty)
        #expect(
            QRRegionsOfInterest(patterns: [Self.pattern(400, 300), Self.pattern(600, 300, module: 10)], width: 1000, height: 800).regions
                .isEmpty)
    }

    @Test("a pattern belongs to one region, and a region's count is bounded however many patterns a scene has")
    func regionsAreBounded() {
        // A grid of 20 × 20 patterns 60 pixels apart: many squares, each pattern used once.
        let grid: [FinderPattern] = (0..<400).map { i in
            let (column, row) = (i % 20, i / 20)
            return Self.pattern(Double(50 + column * 60), Double(50 + row * 60))
        }
        let regions = QRRegionsOfInterest(patterns: grid, width: 1300, height: 1300).regions
        #expect(!regions.isEmpty && regions.count <= QRRegionsOfInterest.maxRegions)
    }

    @Test("any image, of any size down to one pixel and any content, is scanned for patterns without a trap")
    func anyImageIsScanned() {
        var random = SeededRandom(seed: 33)
        for _ in 0..<300 {
            let width = 1 + Int(random.next() % 90), height = 1 + Int(random.next() % 90)
            // Noise, stripes of random widths, or a flat tone: what a hostile or broken image can be.
            let kind = random.next() % 3
            var stripe = 1 + Int(random.next() % 9)
            let pixels: [UInt8] = (0..<(width * height)).map { i in
                switch kind {
                case 0: return UInt8(truncatingIfNeeded: random.next())
                case 1:
                    if random.next() % 40 == 0 { stripe = 1 + Int(random.next() % 9) }
                    return (i % width) / stripe % 2 == 0 ? 0 : 255
                default: return 128
                }
            }
            let image = GrayImage(width: width, height: height, pixels: pixels)
            let patterns = FinderPatternScan(image).patterns()
            #expect(patterns.allSatisfy { $0.x >= 0 && $0.x < Double(width) && $0.y >= 0 && $0.y < Double(height) && $0.module > 0 })
            let regions = QRRegionsOfInterest(patterns: patterns, width: width, height: height).regions
            #expect(regions.allSatisfy { $0.x >= 0 && $0.y >= 0 && $0.x + $0.width <= width && $0.y + $0.height <= height })
            #expect(image.sharplyUpscaled(by: 1 + Int(random.next() % 4)).pixelCount <= 16 * image.pixelCount)
        }
    }

    @Test("the cubic upscale: the factor's size, even tone kept, an edge kept as a step from dark to light")
    func sharpUpscale() {
        let flat = GrayImage(width: 7, height: 5, value: 77).sharplyUpscaled(by: 3)
        #expect(flat.width == 21 && flat.height == 15 && flat.pixels.allSatisfy { $0 == 77 })
        let edge = GrayImage(width: 4, height: 2, pixels: [0, 0, 255, 255, 0, 0, 255, 255]).sharplyUpscaled(by: 4)
        #expect(edge.width == 16 && edge.height == 8)
        for y in 0..<8 {
            let row = (0..<16).map { edge[$0, y] }
            #expect(row == row.sorted(), "row \(y) not monotonic: \(row)")
            #expect(row.prefix(6).allSatisfy { $0 == 0 } && row.suffix(6).allSatisfy { $0 == 255 }, "\(row)")
        }
        let one = GrayImage(width: 3, height: 3, value: 9)
        #expect(one.sharplyUpscaled(by: 1) == one)
    }
}

extension QRRegionsOfInterestTests {
    /// A photographed scene to hide a code in: rectangles of mid tones (a street of buildings) over a gradient, and
    /// sensor noise; `codes` pasted at their origins, then JPEG at `quality`.
    static func scene(width: Int, height: Int, codes: [(GrayImage, x: Int, y: Int)], quality: Int32) throws -> GrayImage {
        var random = SeededRandom(seed: 7)
        var pixels = (0..<(width * height)).map { UInt8(90 + ($0 % width) * 60 / width) }
        for _ in 0..<120 {
            let w = 20 + Int(random.next() % 140), h = 20 + Int(random.next() % 200)
            let x0 = Int(random.next() % UInt64(width - w)), y0 = Int(random.next() % UInt64(height - h))
            let tone = UInt8(40 + random.next() % 170)
            for y in y0..<(y0 + h) { for x in x0..<(x0 + w) { pixels[y * width + x] = tone } }
        }
        for (code, ox, oy) in codes {
            for y in 0..<code.height { for x in 0..<code.width { pixels[(oy + y) * width + ox + x] = code[x, y] } }
        }
        for i in pixels.indices { pixels[i] = UInt8(max(0, min(255, Int(pixels[i]) + Int(random.next() % 17) - 8))) }
        return try ImageLoader.load(
            bytes: TestImages.jpeg(GrayImage(width: width, height: height, pixels: pixels), quality: quality), name: "scene.jpg")
    }
}

/// The regions are read by the second engine first (the ZXing-C++ shim beside the tools, which the ThreadSanitizer
/// run does not build: it skips PhotoCorpusTests).
extension PhotoCorpusTests {
    @Test("W6 a small code in a large scene that no attempt reads whole is read in its region, at a cubic ×4")
    func smallCodeInAScene() throws {
        // 1.75-pixel modules (drawn at 7, averaged down by 4), softened once: qreader's test_draw_64x64 made here.
        let code = try TestImages.qrImage("https://github.com/Eric-Canas/QReader", moduleSize: 7, margin: 2, level: "H")
            .downscaled(by: 4).smoothed()
        let image = try QRRegionsOfInterestTests.scene(width: 640, height: 900, codes: [(code, x: 115, y: 145)], quality: 80)
        #expect(image.looksPhotographic)
        let scanner = try QRScanner()
        let ladder = scanner.scan(image, regions: false)
        #expect(ladder.symbols.isEmpty, "the ladder reads it whole: the regions are not what reads it")
        let result = scanner.scan(image)
        #expect(result.symbols.map { String(decoding: $0.bytes, as: UTF8.self) } == ["https://github.com/Eric-Canas/QReader"])
        #expect(result.attempt == "regions")
        // Where it is, in the image's pixels: inside the pasted code.
        for corner in result.symbols.first?.corners ?? [] {
            #expect((110...(125 + code.width)).contains(corner.x) && (140...(155 + code.height)).contains(corner.y), "\(corner)")
        }
    }

    @Test(
        """
        W6 through the built tool, in process and in a scan helper (above 2 megapixels), a small code in a scene is \
        read in its region, and with --image-timeout 0 (the first attempt alone) it is not
        """)
    func smallCodeThroughTheTool() throws {
        let code = try TestImages.qrImage("https://github.com/Eric-Canas/QReader", moduleSize: 7, margin: 2, level: "H")
            .downscaled(by: 4).smoothed()
        let home = TemporaryDirectory("sl-qr-regions")
        for (width, height) in [(640, 900), (2000, 1200)] {
            let image = try QRRegionsOfInterestTests.scene(width: width, height: height, codes: [(code, x: 115, y: 145)], quality: 80)
            let file = home.file("scene-\(width).png")
            try Data(TestImages.png(image)).write(to: URL(fileURLWithPath: file))
            let run = try Tools.run("sl-qr", ["decode", "-j", "2", file], home: home.path)
            #expect(run.status == 0, "\(width)×\(height): \(run.stdoutText) \(run.stderrText)")
            let record = try #require(try run.jsonLines().first)
            #expect(
                record["attempt"]?.stringValue == "regions" && record["url"]?.stringValue == "https://github.com/Eric-Canas/QReader",
                "\(width)×\(height): \(run.stdoutText)")
            let first = try Tools.run("sl-qr", ["decode", "-j", "2", "--image-timeout", "0", file], home: home.path)
            #expect(first.status == 12, "\(width)×\(height): \(first.stdoutText)")
        }
    }

    @Test("W6 a second code the first attempt missed beside the one it read is read in its region, in reading order")
    func codeBesideTheOneRead() throws {
        let clean = try TestImages.qrImage("the clean one", moduleSize: 6)
        // 3-pixel modules blurred three times: ZXing-C++ reads the photograph's clean code and not this one.
        var soft = try TestImages.qrImage("http://www.prolinepetfood.com/1/", moduleSize: 12, level: "H").downscaled(by: 4)
        for _ in 0..<3 { soft = soft.smoothed() }
        let image = try QRRegionsOfInterestTests.scene(
            width: 1000, height: 700, codes: [(soft, x: 40, y: 100), (clean, x: 600, y: 150)], quality: 85)
        let zxing = try ZXingLibrary.shared.get()
        #expect(zxing.decode(image).map { String(decoding: $0.bytes, as: UTF8.self) } == ["the clean one"])
        let scanner = try QRScanner()
        #expect(scanner.scan(image, regions: false).symbols.count == 1, "the ladder stops at the attempt that read one")
        let result = scanner.scan(image)
        #expect(result.symbols.map { String(decoding: $0.bytes, as: UTF8.self) } == ["http://www.prolinepetfood.com/1/", "the clean one"])
        #expect(result.attempt == "zxing")
    }
}
