import Foundation
import StarlineCore
import StarlineQR
import StarlineTestSupport
import Testing

/// BMP, GIF, WebP and TIFF: files from real encoders (Pillow, cwebp) load with exactly the pixels of the PNG they were
/// made from; hand-made BMPs cover the header and pixel layouts Pillow does not write; damaged files of every
/// format are UNREADABLE_IMAGE naming the file, never a crash.
private func loadError(_ bytes: [UInt8], _ name: String) -> StarlineError? {
    do {
        _ = try ImageLoader.load(bytes: bytes, name: name)
        return nil
    } catch {
        return error as? StarlineError
    }
}

@Suite("Image formats: BMP, GIF, WebP, TIFF, HEIC, AVIF")
struct ImageFormatTests {
    /// Every gray level, and a size that is not a multiple of 4 or 8 (row padding, interlace passes).
    static let gradient = GrayImage(width: 37, height: 23, pixels: (0..<(37 * 23)).map { UInt8(($0 * 7) % 256) })

    /// Runs a Python program with Pillow on `input` (a PGM): the file it wrote, and OUTPUT.pgm when it wrote one
    /// beside it.
    static func pillowFiles(_ image: GrayImage, _ program: String, suffix: String) throws -> (file: [UInt8], sidecar: [UInt8]?) {
        let dir = try TestImages.temporaryDirectory()
        let input = dir.appendingPathComponent("in.pgm"), output = dir.appendingPathComponent("out." + suffix)
        try TestImages.write(TestImages.pgm(image), to: input)
        let script = "import sys\nfrom PIL import Image\nim = Image.open(sys.argv[1])\n" + program + "\n"
        // Debian's python3, where python3-pil installs Pillow (a python3 earlier on PATH may lack it).
        let run = try Tools.runInstalled("/usr/bin/python3", ["-c", script, input.path, output.path])
        try #require(run.status == 0, "Pillow: \(run.stderrText)")
        let sidecar = try? Data(contentsOf: URL(fileURLWithPath: output.path + ".pgm"))
        return (Array(try Data(contentsOf: output)), sidecar.map(Array.init))
    }

    static func pillow(_ image: GrayImage, _ program: String, suffix: String) throws -> [UInt8] {
        try pillowFiles(image, program, suffix: suffix).file
    }

    static func cwebp(_ image: GrayImage, _ options: [String]) throws -> [UInt8] {
        let dir = try TestImages.temporaryDirectory()
        let input = dir.appendingPathComponent("in.png"), output = dir.appendingPathComponent("out.webp")
        try TestImages.write(try TestImages.png(image), to: input)
        let run = try Tools.runInstalled(
            try TestImages.tool("cwebp", package: "webp"), ["-quiet"] + options + [input.path, "-o", output.path])
        try #require(run.status == 0, "cwebp: \(run.stderrText)")
        return Array(try Data(contentsOf: output))
    }

    @Test(
        "lossless files from Pillow and cwebp load with exactly the pixels they were made from",
        arguments: [
            ("bmp", "im.save(sys.argv[2])"),  // 8-bit palette
            ("bmp", "im.convert('RGB').save(sys.argv[2])"),  // 24-bit
            ("gif", "im.save(sys.argv[2])"),
            ("gif", "im.save(sys.argv[2], interlace=True)"),
            ("gif", "im.convert('RGB').quantize(256).save(sys.argv[2], interlace=False)"),
            ("tiff", "im.save(sys.argv[2])"),
            ("tiff", "im.save(sys.argv[2], compression='tiff_lzw')"),
            ("tiff", "im.convert('RGB').save(sys.argv[2], compression='tiff_adobe_deflate')"),
            ("tiff", "im.convert('RGBA').save(sys.argv[2], compression='packbits')")
        ])
    func pillowFilesLoadExactly(suffix: String, program: String) throws {
        let bytes = try Self.pillow(Self.gradient, program, suffix: suffix)
        #expect(ImageLoader.detectFormat(bytes)?.rawValue == ["bmp": "BMP", "gif": "GIF", "tiff": "TIFF"][suffix])
        let image = try ImageLoader.load(bytes: bytes, name: "x.\(suffix)")
        #expect(image == Self.gradient)
    }

    @Test(
        """
        HEIC and AVIF from heif-enc (lossy) load at their size, odd sides too, with the pixels they were made from, \
        nearly
        """)
    func heifFilesLoadNearly() throws {
        let dir = try TestImages.temporaryDirectory()
        let input = dir.appendingPathComponent("in.png")
        // heif-enc reads RGB PNGs: the gradient as RGB, through Pillow.
        let pgm = dir.appendingPathComponent("in.pgm")
        try TestImages.write(TestImages.pgm(Self.gradient), to: pgm)
        let rgb = try Tools.runInstalled(
            "/usr/bin/python3",
            ["-c", "import sys\nfrom PIL import Image\nImage.open(sys.argv[1]).convert('RGB').save(sys.argv[2])", pgm.path, input.path])
        try #require(rgb.status == 0, "Pillow: \(rgb.stderrText)")
        for (suffix, options) in [("heic", ["-q", "95"]), ("avif", ["-A", "-q", "95"])] {
            let output = dir.appendingPathComponent("out." + suffix)
            let run = try Tools.runInstalled(
                try TestImages.tool("heif-enc", package: "libheif-examples"), options + [input.path, "-o", output.path])
            try #require(run.status == 0, "heif-enc: \(run.stderrText)")
            let bytes = Array(try Data(contentsOf: output))
            #expect(ImageLoader.detectFormat(bytes)?.rawValue == suffix.uppercased())
            let image = try ImageLoader.load(bytes: bytes, name: "x." + suffix)
            #expect(image.width == Self.gradient.width && image.height == Self.gradient.height, "\(suffix)")
            // Lossy and through YCbCr: close, not exact (a gradient of every level, 7 apart from pixel to pixel).
            let difference = zip(image.pixels, Self.gradient.pixels).map { abs(Int($0) - Int($1)) }.reduce(0, +) / image.pixels.count
            #expect(difference <= 12, "\(suffix): mean difference \(difference)")
        }
    }

    @Test("a GIF whose LZW table fills and clears many times (256 levels of noise, 320×240) loads exactly")
    func gifLZWTableFillsAndClears() throws {
        var random = SeededRandom(seed: 33)
        let noise = GrayImage(width: 320, height: 240, pixels: (0..<(320 * 240)).map { _ in UInt8(random.next() & 0xFF) })
        let bytes = try Self.pillow(noise, "im.save(sys.argv[2])", suffix: "gif")
        #expect(try ImageLoader.load(bytes: bytes, name: "noise.gif") == noise)
    }

    @Test("a GIF's transparent colour shows white, and the first frame of an animation is read")
    func gifTransparencyAndFirstFrame() throws {
        // Palette index 1 (gray) is the first frame's transparent colour; the second frame is all black.
        let program = """
            pal = [0, 0, 0, 128, 128, 128] + [0] * 762
            clear = Image.new('P', (8, 4), 1)
            clear.putpalette(pal)
            clear.paste(0, (0, 0, 4, 4))
            black = Image.new('P', (8, 4), 0)
            black.putpalette(pal)
            clear.save(sys.argv[2], save_all=True, append_images=[black], transparency=1, duration=100, loop=0, optimize=False)
            """
        let bytes = try Self.pillow(Self.gradient, program, suffix: "gif")
        let image = try ImageLoader.load(bytes: bytes, name: "anim.gif")
        #expect(image.width == 8 && image.height == 4)
        #expect(image[1, 1] == 0 && image[6, 1] == 255, "\(image.pixels)")
    }

    @Test("WebP: lossless loads exactly; lossy and with alpha (over white) load close to the image")
    func webp() throws {
        let lossless = try Self.cwebp(Self.gradient, ["-lossless"])
        #expect(ImageLoader.detectFormat(lossless)?.rawValue == "WebP")
        #expect(try ImageLoader.load(bytes: lossless, name: "x.webp") == Self.gradient)
        let lossy = try ImageLoader.load(bytes: try Self.cwebp(Self.gradient, ["-q", "95"]), name: "y.webp")
        #expect(lossy.width == 37 && lossy.height == 23)
        let error = zip(lossy.pixels, Self.gradient.pixels).map { abs(Int($0) - Int($1)) }.reduce(0, +) / lossy.pixelCount
        #expect(error < 24, "mean error \(error)")
        // Black at alpha 0 is white; black opaque stays black.
        let alpha = try Self.pillow(
            Self.gradient, "a = Image.new('LA', (2, 1)); a.putdata([(0, 0), (0, 255)]); a.save(sys.argv[2], lossless=True)",
            suffix: "webp")
        #expect(try ImageLoader.load(bytes: alpha, name: "a.webp").pixels == [255, 0])
    }

    @Test("a JPEG's Exif orientation (1–8) is applied: the pixels come out as Pillow's exif_transpose shows them", arguments: 1...8)
    func jpegExifOrientation(orientation: Int) throws {
        // A gray 37×23 picture with a distinct top-left corner, as a JPEG carrying the orientation tag; Pillow
        // decodes it (libjpeg), turns it as the tag says and writes the result losslessly for comparison.
        let program = """
            from PIL import ImageOps
            exif = Image.Exif()
            exif[0x0112] = \(orientation)
            im.save(sys.argv[2], quality=95, exif=exif.tobytes())
            shown = ImageOps.exif_transpose(Image.open(sys.argv[2]))
            shown.save(sys.argv[2] + '.pgm')
            """
        var corner = Self.gradient.pixels
        for y in 0..<4 { for x in 0..<6 { corner[y * 37 + x] = 0 } }
        let (jpeg, sidecar) = try Self.pillowFiles(GrayImage(width: 37, height: 23, pixels: corner), program, suffix: "jpg")
        #expect(ExifOrientation.of(jpeg: jpeg) == orientation)
        let image = try ImageLoader.load(bytes: jpeg, name: "o.jpg")
        #expect((image.width, image.height) == (orientation >= 5 ? (23, 37) : (37, 23)))
        let shown = try ImageLoader.load(bytes: try #require(sidecar), name: "shown.pgm")
        let difference = zip(image.pixels, shown.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 255
        #expect(shown.width == image.width && shown.height == image.height && difference <= 1, "orientation \(orientation): \(difference)")
    }

    // MARK: BMP layouts Pillow does not write

    /// A BMP of `width`×`height` whose rows (top first, unpadded) come from `row`.
    static func bmp(
        width: Int, height: Int, bitCount: Int, headerSize: Int = 40, topDown: Bool = false, compression: UInt32 = 0,
        masks: [UInt32] = [], palette: [[UInt8]] = [], row: (Int) -> [UInt8]
    ) -> [UInt8] {
        func le(_ v: Int, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        let rowBytes = (width * bitCount + 31) / 32 * 4
        let paletteBytes = palette.flatMap { headerSize == 12 ? Array($0.prefix(3)) : $0 }
        let extraMasks = headerSize == 40 ? masks.flatMap { le(Int($0), 4) } : []
        var header: [UInt8]
        if headerSize == 12 {
            header = le(12, 4) + le(width, 2) + le(height, 2) + le(1, 2) + le(bitCount, 2)
        } else {
            header = le(headerSize, 4) + le(width, 4) + le(topDown ? -height : height, 4) + le(1, 2) + le(bitCount, 2)
            header += le(Int(compression), 4) + le(rowBytes * height, 4) + le(2835, 4) + le(2835, 4) + le(palette.count, 4) + le(0, 4)
            if headerSize > 40 { header += masks.flatMap { le(Int($0), 4) } }
            header += [UInt8](repeating: 0, count: headerSize - header.count)
        }
        let offset = 14 + header.count + extraMasks.count + paletteBytes.count
        var file = Array("BM".utf8) + le(offset + rowBytes * height, 4) + le(0, 4) + le(offset, 4) + header + extraMasks + paletteBytes
        for i in 0..<height {
            let y = topDown ? i : height - 1 - i
            let bytes = row(y)
            file += bytes + [UInt8](repeating: 0, count: rowBytes - bytes.count)
        }
        return file
    }

    @Test("BMP: top-down rows, 1- and 4-bit palettes, the OS/2 core header, 16-bit 5-6-5 and 32-bit alpha bitfields")
    func bmpLayouts() throws {
        let levels: [UInt8] = [0, 85, 170, 255]
        let expected = GrayImage(width: 5, height: 3, pixels: (0..<15).map { levels[($0 % 5 + $0 / 5) % 4] })
        func index(_ x: Int, _ y: Int) -> Int { (x + y) % 4 }
        let grayPalette = levels.map { [$0, $0, $0, 0] }
        let four = Self.bmp(width: 5, height: 3, bitCount: 4, topDown: true, palette: grayPalette) { y in
            stride(from: 0, to: 5, by: 2).map { x in UInt8(index(x, y) << 4 | (x + 1 < 5 ? index(x + 1, y) : 0)) }
        }
        #expect(try ImageLoader.load(bytes: four, name: "4.bmp") == expected)
        let core = Self.bmp(width: 5, height: 3, bitCount: 8, headerSize: 12, palette: grayPalette) { y in
            (0..<5).map { UInt8(index($0, y)) }
        }
        #expect(try ImageLoader.load(bytes: core, name: "core.bmp") == expected)
        let bits = Self.bmp(width: 9, height: 2, bitCount: 1, palette: [[0, 0, 0, 0], [255, 255, 255, 0]]) { y in
            y == 0 ? [0b1010_1010, 0b1000_0000] : [0b0101_0101, 0]
        }
        #expect(
            try ImageLoader.load(bytes: bits, name: "1.bmp").pixels == [
                255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0
            ])
        // 5-6-5: white, pure green (luminance 150), black.
        let rgb565 = Self.bmp(width: 3, height: 1, bitCount: 16, compression: 3, masks: [0xF800, 0x07E0, 0x001F]) { _ in
            [0xFF, 0xFF, 0xE0, 0x07, 0x00, 0x00]
        }
        #expect(try ImageLoader.load(bytes: rgb565, name: "565.bmp").pixels == [255, 150, 0])
        // BGRA with an alpha mask (a V5 header): opaque black, transparent black (white), half-transparent black.
        let bgra = Self.bmp(
            width: 3, height: 1, bitCount: 32, headerSize: 124, compression: 3,
            masks: [0x00FF_0000, 0x0000_FF00, 0x0000_00FF, 0xFF00_0000]
        ) { _ in [0, 0, 0, 255, 0, 0, 0, 0, 0, 0, 0, 128] }
        #expect(try ImageLoader.load(bytes: bgra, name: "v5.bmp").pixels == [0, 255, 127])
    }

    @Test(
        """
        BMP and GIF refusals: run-length BMPs with a conversion hint, an index past the palette, absurd sizes and \
        frames
        """)
    func refusals() throws {
        let rle = Self.bmp(width: 2, height: 1, bitCount: 8, compression: 1, palette: [[0, 0, 0, 0]]) { _ in [0, 0] }
        let rleError = try #require(loadError(rle, "rle.bmp"))
        #expect(rleError.code == .unreadableImage && rleError.message.contains("convert it to PNG"), "\(rleError.message)")
        let pastPalette = Self.bmp(width: 2, height: 1, bitCount: 8, palette: [[0, 0, 0, 0]]) { _ in [0, 7] }
        #expect(loadError(pastPalette, "p.bmp")?.code == .unreadableImage)
        var huge = Self.bmp(width: 1, height: 1, bitCount: 24) { _ in [0, 0, 0] }
        huge.replaceSubrange(18..<26, with: [0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0x7F])
        let tooLarge = loadError(huge, "huge.bmp")
        #expect(tooLarge?.message.contains("image too large") == true, "\(tooLarge?.message ?? "")")
        // A 1×1 screen with a 60000×60000 frame: refused before the frame's indices are decoded.
        let frame: [UInt8] =
            Array("GIF89a".utf8) + [1, 0, 1, 0, 0x80, 0, 0] + [0, 0, 0, 255, 255, 255]
            + [0x2C, 0, 0, 0, 0, 0x60, 0xEA, 0x60, 0xEA, 0, 2, 0, 0x3B]
        let bigFrame = loadError(frame, "frame.gif")
        #expect(bigFrame?.message.contains("over the limit") == true, "\(bigFrame?.message ?? "")")
    }

    @Test(
        """
        every prefix of a BMP, a GIF, a WebP and a TIFF is UNREADABLE_IMAGE naming the file (or, cut where nothing \
        was lost, whole)
        """)
    func truncatedFiles() throws {
        let files = [
            ("t.bmp", try Self.pillow(Self.gradient, "im.save(sys.argv[2])", suffix: "bmp")),
            ("t.gif", try Self.pillow(Self.gradient, "im.save(sys.argv[2])", suffix: "gif")),
            ("t.webp", try Self.cwebp(Self.gradient, ["-lossless"])),
            ("t.tiff", try Self.pillow(Self.gradient, "im.save(sys.argv[2], compression='tiff_lzw')", suffix: "tiff"))
        ]
        for (name, bytes) in files {
            for length in stride(from: 1, to: bytes.count - 1, by: max(1, bytes.count / 97)) {
                let prefix = Array(bytes.prefix(length))
                do {
                    let image = try ImageLoader.load(bytes: prefix, name: name)
                    // A GIF cut inside its image data shows what arrived (as browsers do), at the full size; any
                    // other file cut where only bytes nobody reads were lost (LZW's end code, padding) is whole.
                    if name == "t.gif" {
                        #expect(image.width == 37 && image.height == 23, "\(name) cut at \(length)")
                    } else {
                        #expect(image == Self.gradient, "\(name) cut at \(length) of \(bytes.count) loaded with other pixels")
                    }
                } catch let error as StarlineError {
                    #expect(error.code == .unreadableImage && error.message.hasPrefix(name), "\(name) at \(length): \(error.message)")
                }
            }
        }
    }
}
