import Foundation
import StarlineQR
import StarlineTestSupport
import Testing

/// The ladder's order, decided by the image (`QRScanner.ladder(for:)`): a photograph goes to the second engine,
/// ZXing-C++, first, and a code a program rendered to libzbar first, without loading the second engine at all.
@Suite struct PhotographLadderTests {
    static let photos = String(#filePath).replacingOccurrences(of: "PhotographLadderTests.swift", with: "Photos/")
    /// Light on dark, from bench/qr-corpus (family light-on-dark, severity 0.74): libzbar's inverted pass misses it.
    static let lightOnDark = photos + "light-on-dark-14.jpg"
    static let lightOnDarkPayload = "https://chat.thestarline.cn/f/XYN9-USeSH"
    /// Tilted past what ZXing-C++ 1.4 reads (family tilt, severity 0.89; ZXing-C++ 3.1 reads it).
    static let steep = photos + "tilt-17.jpg"
    static let steepPayload = "Sam: add me on Starline https://chat.thestarline.cn/f/NlKkOj5Y9gnILqgd"

    @Test("W6 a rendered code does not look like a photograph, and every photograph of the corpus does")
    func renderedCodesAndPhotographs() throws {
        #expect(!(try TestImages.qrImage("rendered by qrencode")).looksPhotographic)
        #expect(!(try TestImages.qrImage("rendered by qrencode")).inverted().looksPhotographic)
        #expect(!GrayImage(width: 300, height: 200, value: 255).looksPhotographic)
        #expect(!GrayImage(width: 0, height: 0).looksPhotographic)
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.photos).filter { $0.hasSuffix(".jpg") }
        #expect(files.count >= 5)
        for file in files {
            #expect(try ImageLoader.load(path: Self.photos + file).looksPhotographic, "\(file)")
        }
        // Sampled, not read whole, past 250,000 pixels: a 3000×2000 photograph-like gradient is still one.
        let gradient = GrayImage(width: 3000, height: 2000, pixels: (0..<6_000_000).map { UInt8(($0 % 3000) * 255 / 2999) })
        #expect(gradient.looksPhotographic)
    }

    @Test(
        """
        W6 with both engines a photograph's ladder begins with ZXing-C++ and a rendered code's with libzbar; without \
        it both get libzbar's
        """)
    func orderDecidedByTheImage() {
        let photograph = QRScanner.ladder(photograph: true, secondEngine: true)
        let rendered = QRScanner.ladder(photograph: false, secondEngine: true)
        #expect(photograph.first == .zxing && rendered.first == .original)
        // The same kinds of attempt: libzbar's inverted pass becomes the second engine's for a photograph.
        #expect(Set(photograph.map { $0 == .zxingInverted ? .inverted : $0 }) == Set(rendered))
        #expect(QRScanner.ladder(photograph: true, secondEngine: false) == QRScanner.zbarAttempts)
        #expect(QRScanner.ladder(photograph: false, secondEngine: false) == QRScanner.zbarAttempts)
    }

    @Test("a directional stretch: ×factor along its direction, unchanged across it, and mapBack undoes map")
    func directionalStretch() {
        // Along the x axis: twice as wide, as high as before, and a pixel keeps its value where it lands.
        let ramp = GrayImage(width: 100, height: 10, pixels: (0..<1000).map { UInt8(($0 % 100) * 2) })
        let along = DirectionalStretch(degrees: 0, factor: 2, imageWidth: 100, imageHeight: 10)
        #expect(along.width == 200 && along.height == 10)
        let wide = along.apply(ramp)
        #expect(wide[100, 5] >= 98 && wide[100, 5] <= 102, "the middle of the ramp stays the middle")
        // A diagonal: the copy's area is factor × the image's and more (its bounding box), and points go there and back.
        let diagonal = DirectionalStretch(degrees: 45, factor: 1.5, imageWidth: 800, imageHeight: 600)
        #expect(diagonal.width * diagonal.height >= 720_000)
        for point in [QRPoint(x: 0, y: 0), QRPoint(x: 799, y: 0), QRPoint(x: 400, y: 300), QRPoint(x: 0, y: 599)] {
            let back = diagonal.mapBack(diagonal.map(point))
            #expect(abs(back.x - point.x) <= 1 && abs(back.y - point.y) <= 1, "\(point) → \(back)")
        }
        // Outside the image the copy is white; a degenerate image gives a white copy of the right size.
        #expect(diagonal.apply(GrayImage(width: 800, height: 600, value: 0))[0, 0] == 255)
        #expect(
            DirectionalStretch(degrees: 45, factor: 1.5, imageWidth: 1, imageHeight: 1).apply(GrayImage(width: 1, height: 1, value: 0))
                .pixels.allSatisfy { $0 == 255 })
    }

}

/// The attempts that need the second engine (the ZXing-C++ shim beside the tools, which the ThreadSanitizer run does
/// not build: it skips PhotoCorpusTests), on photographs from the corpus that only they read.
extension PhotoCorpusTests {
    @Test("a light-on-dark photograph that libzbar's inverted pass misses is read by ZXing-C++ inverted (zxing-inverted)")
    func zxingInvertedReadsWhatZbarInvertedMisses() throws {
        _ = try ZXingLibrary.shared.get()
        let image = try ImageLoader.load(path: PhotographLadderTests.lightOnDark)
        let scanner = try QRScanner()
        #expect(scanner.scan(image, attempts: [.original, .inverted, .zxing, .zxingSmoothed]).symbols.isEmpty)
        let result = scanner.scan(image)
        #expect(result.attempt == "zxing-inverted")
        #expect(result.symbols.map { String(decoding: $0.bytes, as: UTF8.self) } == [PhotographLadderTests.lightOnDarkPayload])
    }

    @Test(
        """
        a code photographed at a steep angle that no other attempt reads is read by ZXing-C++ on a stretched copy \
        (zxing-tilted)
        """)
    func zxingTiltedReadsACodeTiltedTooFar() throws {
        _ = try ZXingLibrary.shared.get()
        let image = try ImageLoader.load(path: PhotographLadderTests.steep)
        let scanner = try QRScanner()
        let others = QRScanner.bothEnginesForPhotographs.filter { $0 != .zxingTilted } + QRScanner.zbarAttempts
        #expect(scanner.scan(image, attempts: others).symbols.isEmpty)
        let result = scanner.scan(image)
        #expect(result.attempt == "zxing-tilted")
        let symbol = try #require(result.symbols.first)
        #expect(String(decoding: symbol.bytes, as: UTF8.self) == PhotographLadderTests.steepPayload)
        // The corners are mapped back into the photograph: inside it, around the card (left of centre).
        #expect(
            symbol.corners.count == 4 && symbol.corners.allSatisfy { $0.x >= 0 && $0.x < image.width && $0.y >= 0 && $0.y < image.height })
    }

    @Test("sl-qr decode loads ZXing-C++ for a photograph, and not for a rendered code that libzbar reads")
    func secondEngineLoadedOnlyWhenTheLadderNeedsIt() throws {
        let rendered = home.file("rendered.png")
        #expect(
            try Tools.run("sl-qr", ["encode", "-o", rendered, "https://chat.thestarline.cn/f/AbCdEfGh1234"], home: home.path).status == 0)
        // The dynamic loader names every library it opens (ld.so(8), LD_DEBUG=files): sl-qr opens libzbar and the
        // shim through checked descriptors (/proc/self/fd/N), and the shim's own dependency, libZXing, by name.
        let clean = try Tools.run("sl-qr", ["decode", rendered], home: home.path, environment: ["LD_DEBUG": "files"])
        #expect(clean.status == 0, "\(clean.stdoutText)")
        #expect(try clean.jsonLines().first?["attempt"]?.stringValue == "original")
        #expect(clean.stderrText.contains("file=/proc/self/fd/") && !clean.stderrText.contains("libZXing"))
        let photo = try Tools.run(
            "sl-qr", ["decode", PhotographLadderTests.photos + "tilt-19.jpg"], home: home.path, environment: ["LD_DEBUG": "files"])
        #expect(photo.status == 0, "\(photo.stdoutText)")
        #expect(try photo.jsonLines().first?["attempt"]?.stringValue == "zxing")
        #expect(photo.stderrText.contains("libZXing"))
    }
}
