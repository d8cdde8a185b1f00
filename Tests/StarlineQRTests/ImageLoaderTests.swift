import CPNG
import Foundation
import StarlineCore
import StarlineQR
import StarlineTestSupport
import Testing

@Suite("ImageLoader")
struct ImageLoaderTests {
    /// A small image with every gray level, so lossless round trips are checked exactly.
    static let gradient = GrayImage(width: 37, height: 11, pixels: (0..<(37 * 11)).map { UInt8(($0 * 7) % 256) })

    // MARK: PNG

    @Test("qrencode PNG loads as black modules on white, format from magic bytes")
    func qrencodePNG() throws {
        let bytes = try TestImages.qrencodePNG(text: "hello", moduleSize: 4, margin: 4)
        #expect(ImageLoader.detectFormat(bytes) == .png)
        let image = try ImageLoader.load(bytes: bytes, name: "hello.png")
        // Version 1 = 21 modules + 2×4 margin, 4 px each.
        #expect(image.width == 116 && image.height == 116)
        #expect(Set(image.pixels) == [0, 255])
        #expect(image[0, 0] == 255)  // quiet zone
        #expect(image[16, 16] == 0)  // outer ring of the top-left finder pattern
        #expect(image[20, 20] == 255)  // the white ring inside it
        #expect(image[24, 24] == 0)  // its 3×3 centre
    }

    @Test("gray PNG written by libpng round-trips exactly")
    func pngRoundTrip() throws {
        let bytes = try TestImages.png(Self.gradient)
        let image = try ImageLoader.load(bytes: bytes, name: "g.png")
        #expect(image == Self.gradient)
    }

    @Test("transparent PNG pixels are composited onto white")
    func pngAlphaOntoWhite() throws {
        // Gray+alpha: a black opaque pixel, a black fully transparent one, a white opaque one.
        let samples: [UInt8] = [0, 255, 0, 0, 255, 255]
        let bytes = try TestImages.png(width: 3, height: 1, format: Int32(PNG_FORMAT_GA), samples: samples)
        let image = try ImageLoader.load(bytes: bytes, name: "alpha.png")
        #expect(image.pixels == [0, 255, 255])
    }

    @Test("RGB PNG becomes luminance")
    func pngColor() throws {
        let samples: [UInt8] = [0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 0, 255]
        let bytes = try TestImages.png(width: 4, height: 1, format: Int32(PNG_FORMAT_RGB), samples: samples)
        let image = try ImageLoader.load(bytes: bytes, name: "rgb.png")
        #expect(image.pixels[0] == 0 && image.pixels[1] == 255)
        // Pure red and pure blue are darker than white, red lighter than blue.
        #expect(image.pixels[2] > image.pixels[3] && image.pixels[2] < 255 && image.pixels[3] > 0)
    }

    // MARK: JPEG

    @Test("JPEG written by tjCompress2 (quality 90) loads with the right size and close pixels")
    func jpegRoundTrip() throws {
        let qr = try TestImages.qrImage("jpeg test")
        let bytes = try TestImages.jpeg(qr, quality: 90)
        #expect(ImageLoader.detectFormat(bytes) == .jpeg)
        let image = try ImageLoader.load(bytes: bytes, name: "q.jpg")
        #expect(image.width == qr.width && image.height == qr.height)
        let meanError = zip(image.pixels, qr.pixels).map { abs(Int($0) - Int($1)) }.reduce(0, +) / qr.pixelCount
        #expect(meanError < 8)
        #expect(image[16, 16] < 64 && image[2, 2] > 192)
    }

    // MARK: PGM / PPM

    @Test("P5 8-bit with header comments round-trips exactly")
    func pgmRaw() throws {
        let bytes = TestImages.pgm(Self.gradient)
        #expect(ImageLoader.detectFormat(bytes) == .pnm)
        #expect(try ImageLoader.load(bytes: bytes, name: "g.pgm") == Self.gradient)
    }

    @Test("P2 plain with comments round-trips exactly")
    func pgmPlain() throws {
        let bytes = TestImages.pgm(Self.gradient, plain: true)
        #expect(try ImageLoader.load(bytes: bytes, name: "g.pgm") == Self.gradient)
    }

    @Test("P5 16-bit (maxval 65535) is scaled to 8 bits")
    func pgm16() throws {
        let bytes = TestImages.pgm(Self.gradient, maxval: 65535)
        #expect(try ImageLoader.load(bytes: bytes, name: "g16.pgm") == Self.gradient)
        // Big-endian samples: 0x8000 of 65535 is mid-gray.
        let mid = Array("P5 2 1 65535\n".utf8) + [0x80, 0x00, 0xFF, 0xFF]
        #expect(try ImageLoader.load(bytes: mid, name: "m.pgm").pixels == [128, 255])
    }

    @Test("small maxval is scaled to 0…255")
    func pgmSmallMaxval() throws {
        let bytes = Array("P2\n4 1\n15\n0 5 10 15\n".utf8)
        #expect(try ImageLoader.load(bytes: bytes, name: "m.pgm").pixels == [0, 85, 170, 255])
    }

    @Test("comment right after the magic and between every header field")
    func pgmCommentsEverywhere() throws {
        let bytes = Array("P5#c1\n#c2\n 3#c3\n1\t# c4\r\n255\n".utf8) + [1, 2, 3]
        #expect(try ImageLoader.load(bytes: bytes, name: "c.pgm").pixels == [1, 2, 3])
    }

    @Test("P6 and P3 become Rec. 601 luminance")
    func ppm() throws {
        let qr = try TestImages.qrImage("ppm")
        for plain in [false, true] {
            let image = try ImageLoader.load(bytes: TestImages.ppm(qr, plain: plain), name: "q.ppm")
            #expect(image.width == qr.width && image.height == qr.height)
            // navy (0,0,128) → 15, cream (255,250,235) → 250
            #expect(Set(image.pixels) == [15, 250])
            #expect(image[16, 16] == 15 && image[0, 0] == 250)
        }
        let exact = Array("P3 3 1 255 255 0 0  0 255 0  0 0 255".utf8)
        #expect(try ImageLoader.load(bytes: exact, name: "rgb.ppm").pixels == [76, 150, 29])
    }

    // MARK: Files and stdin

    @Test("load(path:) detects the format by content, not by extension")
    func misnamedFiles() throws {
        let dir = try TestImages.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let png = try TestImages.png(Self.gradient)
        let pgm = TestImages.pgm(Self.gradient)
        try TestImages.write(png, to: dir.appendingPathComponent("really-a-png.jpg"))
        try TestImages.write(pgm, to: dir.appendingPathComponent("no-extension"))
        #expect(try ImageLoader.load(path: dir.appendingPathComponent("really-a-png.jpg").path) == Self.gradient)
        #expect(try ImageLoader.load(path: dir.appendingPathComponent("no-extension").path) == Self.gradient)
    }

    @Test("readAll reads a pipe to the end (the stdin path)")
    func readPipe() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        // Bigger than a pipe buffer, so reading must loop while the writer blocks.
        let payload = TestImages.pgm(GrayImage(width: 500, height: 300, value: 7))
        let (readFD, writeFD) = (fds[0], fds[1])
        let writer = Thread {
            payload.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = write(writeFD, raw.baseAddress! + offset, raw.count - offset)
                    if n <= 0 { break }
                    offset += n
                }
            }
            close(writeFD)
        }
        writer.start()
        let bytes = try ImageLoader.readAll(fileDescriptor: readFD, name: "-")
        close(readFD)
        #expect(bytes == payload)
        let image = try ImageLoader.load(bytes: bytes, name: "-")
        #expect(image.width == 500 && image.height == 300 && image.pixels.allSatisfy { $0 == 7 })
    }

    // MARK: Errors

    private func expectUnreadable(
        _ messagePart: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> GrayImage
    ) {
        do {
            let image = try body()
            Issue.record("expected UNREADABLE_IMAGE, got a \(image.width)×\(image.height) image", sourceLocation: sourceLocation)
        } catch let error as StarlineError {
            #expect(error.code == .unreadableImage, sourceLocation: sourceLocation)
            #expect(error.code.exitStatus == .data, sourceLocation: sourceLocation)
            #expect(error.message.contains(messagePart), "message: \(error.message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected error type: \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("random bytes: not an image of a format sl-qr reads; a PDF is named with the conversion")
    func randomBytes() {
        var rng = SeededRandom(seed: 1)
        let bytes = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &rng) }
        expectUnreadable("noise.bin: not a PNG, JPEG, PBM/PGM/PPM, BMP, GIF, WebP, TIFF, HEIC or AVIF image") {
            try ImageLoader.load(bytes: bytes, name: "noise.bin")
        }
        // A format it does not read is named, with the conversion to make.
        expectUnreadable("x: a PDF file, not a PNG, JPEG, PBM/PGM/PPM, BMP, GIF, WebP, TIFF, HEIC or AVIF image: convert it to PNG first") {
            try ImageLoader.load(bytes: Array("%PDF-1.7".utf8), name: "x")
        }
        // HEIF brands: HEVC, AV1, and the container's own brand with a compatible one that tells.
        let brands: [([UInt8], String?)] = [
            (Array("\0\0\0\u{18}ftypheic\0\0\0\0mif1".utf8), "HEIC"), (Array("\0\0\0\u{1C}ftypavif\0\0\0\0mif1miaf".utf8), "AVIF"),
            (Array("\0\0\0\u{1C}ftypmif1\0\0\0\0mif1avif".utf8), "AVIF"), (Array("\0\0\0\u{18}ftypmif1\0\0\0\0heic".utf8), "HEIC"),
            (Array("\0\0\0\u{18}ftypisom\0\0\0\0mp41".utf8), nil)
        ]
        for (magic, kind) in brands {
            #expect(ImageLoader.detectFormat(magic)?.rawValue == kind, "\(magic)")
            expectUnreadable(kind.map { "x: corrupt \($0): " } ?? "x: not a PNG") { try ImageLoader.load(bytes: magic, name: "x") }
        }
        expectUnreadable("not a PNG, JPEG, PBM/PGM/PPM") { try ImageLoader.load(bytes: Array("P7 1 1 255\n".utf8), name: "x") }
        // The magic bytes of a format it reads, and nothing after them: that format, damaged.
        let magics: [([UInt8], String?)] = [
            (Array("GIF89a....".utf8), "GIF"), (Array("RIFF\0\0\0\0WEBPVP8 ".utf8), "WebP"), (Array("BM\0\0\0\0".utf8), nil),
            ([0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0], "TIFF"), ([0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8], "TIFF")
        ]
        for (magic, kind) in magics {
            expectUnreadable("x: ") { try ImageLoader.load(bytes: magic, name: "x") }
            #expect(ImageLoader.detectFormat(magic)?.rawValue == kind, "\(magic)")
        }
    }

    @Test("empty input")
    func empty() {
        expectUnreadable("empty.png: empty file") { try ImageLoader.load(bytes: [], name: "empty.png") }
    }

    @Test("empty and missing files, a directory: strerror text and errno in details")
    func fileErrors() throws {
        let dir = try TestImages.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let empty = dir.appendingPathComponent("empty.png")
        try TestImages.write([], to: empty)
        expectUnreadable("empty file") { try ImageLoader.load(path: empty.path) }

        let missing = dir.appendingPathComponent("missing.png").path
        do {
            _ = try ImageLoader.load(path: missing)
            Issue.record("missing file loaded")
        } catch let error as StarlineError {
            #expect(error.code == .unreadableImage)
            #expect(error.message == "\(missing): No such file or directory")
            #expect(error.details?["file"]?.stringValue == missing)
            #expect(error.details?["errno"]?.intValue == Int64(ENOENT))
        }
        expectUnreadable("Is a directory") { try ImageLoader.load(path: dir.path) }
    }

    @Test("truncated and corrupt PNG: the libpng message")
    func corruptPNG() throws {
        let png = try TestImages.qrencodePNG(text: "truncate me")
        expectUnreadable("t.png: corrupt PNG: ") { try ImageLoader.load(bytes: Array(png.prefix(png.count / 2)), name: "t.png") }
        expectUnreadable("corrupt PNG: ") { try ImageLoader.load(bytes: Array(png.prefix(20)), name: "t.png") }
        var flipped = png
        flipped[png.count / 2] ^= 0xFF  // breaks the IDAT CRC / zlib stream
        expectUnreadable("corrupt PNG: ") { try ImageLoader.load(bytes: flipped, name: "t.png") }
        expectUnreadable("corrupt PNG: ") {
            try ImageLoader.load(bytes: Array(png.prefix(8)) + Array(repeating: 0, count: 100), name: "t.png")
        }
    }

    @Test("truncated and corrupt JPEG: the TurboJPEG message")
    func corruptJPEG() throws {
        let jpeg = try TestImages.jpeg(try TestImages.qrImage("truncate me too"))
        expectUnreadable("t.jpg: corrupt JPEG: ") { try ImageLoader.load(bytes: Array(jpeg.prefix(jpeg.count * 2 / 3)), name: "t.jpg") }
        expectUnreadable("corrupt JPEG: ") { try ImageLoader.load(bytes: Array(jpeg.prefix(40)), name: "t.jpg") }
        expectUnreadable("corrupt JPEG: ") {
            try ImageLoader.load(bytes: [0xFF, 0xD8, 0xFF] + Array(repeating: 0x42, count: 500), name: "t.jpg")
        }
    }

    @Test("truncated and malformed PGM/PPM")
    func corruptPNM() throws {
        let pgm = TestImages.pgm(Self.gradient)
        expectUnreadable("g.pgm: corrupt PBM/PGM/PPM: truncated pixel data") {
            try ImageLoader.load(bytes: Array(pgm.dropLast(5)), name: "g.pgm")
        }
        let plain = TestImages.pgm(Self.gradient, plain: true)
        expectUnreadable("truncated pixel data") { try ImageLoader.load(bytes: Array(plain.prefix(plain.count / 2)), name: "g.pgm") }
        expectUnreadable("truncated header") { try ImageLoader.load(bytes: Array("P5 10".utf8), name: "h.pgm") }
        expectUnreadable("maxval 0") { try ImageLoader.load(bytes: Array("P5 1 1 0\n\0".utf8), name: "h.pgm") }
        expectUnreadable("maxval 70000") { try ImageLoader.load(bytes: Array("P5 1 1 70000\n\0\0".utf8), name: "h.pgm") }
        expectUnreadable("zero width") { try ImageLoader.load(bytes: Array("P5 0 1 255\n".utf8), name: "h.pgm") }
        expectUnreadable("expected a number") { try ImageLoader.load(bytes: Array("P2 2 1 255 12 x".utf8), name: "h.pgm") }
        expectUnreadable("over maxval") { try ImageLoader.load(bytes: Array("P2 2 1 15 12 16".utf8), name: "h.pgm") }
        expectUnreadable("out of range") { try ImageLoader.load(bytes: Array("P5 99999999999 1 255\n".utf8), name: "h.pgm") }
    }

    @Test("images over the pixel limit are refused before allocation")
    func tooLarge() throws {
        // The header claims 400 megapixels; no pixel data follows. "too large" must win
        // over "truncated", i.e. the limit is checked before anything is read or allocated.
        expectUnreadable("huge.pgm: image too large (20000×20000 pixels; the limit is 100 megapixels)") {
            try ImageLoader.load(bytes: Array("P5 20000 20000 255\n".utf8), name: "huge.pgm")
        }
        let qr = try TestImages.qrImage("limit")  // 116×116 = 13456 px
        let png = try TestImages.png(qr), jpeg = try TestImages.jpeg(qr), pgm = TestImages.pgm(qr)
        for (bytes, name) in [(png, "l.png"), (jpeg, "l.jpg"), (pgm, "l.pgm")] {
            expectUnreadable("\(name): image too large (116×116") { try ImageLoader.load(bytes: bytes, name: name, maxPixels: 10_000) }
            #expect(try ImageLoader.load(bytes: bytes, name: name, maxPixels: 13_456).pixelCount == 13_456)
        }
    }

    @Test("damaged files of every format either load or throw UNREADABLE_IMAGE, never crash")
    func fuzz() throws {
        let qr = try TestImages.qrImage("fuzz")
        let samples = [
            try TestImages.png(qr), try TestImages.qrencodePNG(text: "fuzz"), try TestImages.jpeg(qr),
            TestImages.pgm(qr), TestImages.pgm(qr, plain: true), TestImages.ppm(qr)
        ]
        var rng = SeededRandom(seed: 42)
        var failures = 0, loads = 0
        for original in samples {
            for round in 0..<60 {
                var bytes = original
                if round % 3 == 0 {
                    bytes = Array(bytes.prefix(Int.random(in: 1..<bytes.count, using: &rng)))
                } else {
                    // Flip a few bytes, sparing the magic so the format's decoder is exercised.
                    for _ in 0..<(1 + round % 5) {
                        bytes[Int.random(in: 3..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                    }
                }
                do {
                    let image = try ImageLoader.load(bytes: bytes, name: "fuzz")
                    #expect(image.pixels.count == image.width * image.height)
                    loads += 1
                } catch let error as StarlineError {
                    #expect(error.code == .unreadableImage)
                    failures += 1
                }
            }
        }
        #expect(failures > 0 && failures + loads == samples.count * 60)
    }
}
