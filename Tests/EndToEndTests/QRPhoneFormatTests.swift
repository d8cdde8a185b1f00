import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// HEIC and AVIF, what phones save photos as, read by the built sl-qr through libheif (loaded when the first such
/// file is read): files made by heif-enc (libheif's own encoder: x265 for HEVC, libaom for AV1), lossy, with
/// alpha, several at once on worker threads; a damaged or oversized one is UNREADABLE_IMAGE naming it, never a crash.
@Suite struct QRPhoneFormatTests {
    let home = TemporaryDirectory("sl-qr-heif")
    static let link = "https://chat.thestarline.cn/f/PhoneHeif42"

    func qr(_ arguments: [String]) throws -> ToolRun { try Tools.run("sl-qr", arguments, home: home.path) }

    /// heif-enc INPUT.png -o NAME with `options`; the path written.
    func heifEnc(_ input: String, _ name: String, _ options: [String] = []) throws -> String {
        let output = home.file(name)
        let run = try Tools.runInstalled("/usr/bin/heif-enc", options + [input, "-o", output])
        try #require(run.status == 0, "heif-enc (libheif-examples) is needed; run scripts/bootstrap: \(run.stderrText)")
        return output
    }

    @Test("HEIC and AVIF from heif-enc, lossy and with alpha, decode to the friend link, several at once")
    func heicAndAVIFDecode() throws {
        #expect(try qr(["encode", Self.link, "-o", home.file("code.png"), "-s", "6"]).status == 0)
        // heif-enc takes RGB or RGBA PNGs (libaom refuses a palette image's chroma): an RGB copy, and black modules
        // drawn only by their alpha on a transparent page, which must come out white behind them.
        let pillow = """
            import sys
            from PIL import Image
            im = Image.open(sys.argv[1]).convert('L')
            im.convert('RGB').save(sys.argv[2] + '/rgb.png')
            rgba = Image.new('RGBA', im.size, (0, 0, 0, 0))
            rgba.putalpha(im.point(lambda v: 255 - v))
            rgba.save(sys.argv[2] + '/alpha.png')
            """
        let made = try Tools.runInstalled("/usr/bin/python3", ["-c", pillow, home.file("code.png"), home.path])
        try #require(made.status == 0, "Pillow (python3-pil): \(made.stderrText)")
        let files = [
            try heifEnc(home.file("rgb.png"), "photo.heic", ["-q", "60"]),
            try heifEnc(home.file("rgb.png"), "photo.avif", ["-A", "-q", "60"]),
            try heifEnc(home.file("alpha.png"), "alpha.heic", ["-q", "80"]),
            try heifEnc(home.file("alpha.png"), "alpha.avif", ["-A", "-q", "80"]),
            // A file named for another format: the content decides.
            try heifEnc(home.file("rgb.png"), "misnamed.jpg.heic", ["-q", "60"])
        ]
        let run = try qr(["decode", "-j", "2"] + files)
        #expect(run.status == 0, "\(run.stderrText)")
        let records = try run.jsonLines()
        #expect(records.count == files.count, "\(run.stdoutText)")
        for (record, file) in zip(records, files) {
            #expect(record["file"]?.stringValue == file && record["kind"]?.stringValue == "friendLink", "\(record)")
            #expect(record["text"]?.stringValue == Self.link, "\(record)")
        }
    }

    @Test("a damaged HEIC, and one over --max-pixels, are UNREADABLE_IMAGE naming the file and libheif's reason")
    func damagedAndOversizedHEIC() throws {
        #expect(try qr(["encode", Self.link, "-o", home.file("code.png"), "-s", "40"]).status == 0)
        let made = try Tools.runInstalled(
            "/usr/bin/python3",
            [
                "-c", "import sys\nfrom PIL import Image\nImage.open(sys.argv[1]).convert('RGB').save(sys.argv[2])",
                home.file("code.png"), home.file("rgb.png")
            ])
        try #require(made.status == 0, "Pillow (python3-pil): \(made.stderrText)")
        let heic = try heifEnc(home.file("rgb.png"), "big.heic", ["-q", "50"])
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: heic)))

        // Cut in the middle of the coded image, and cut inside the container's boxes.
        for (name, length) in [("cut.heic", bytes.count / 2), ("header.heic", 40)] {
            let cut = home.write(name, Array(bytes.prefix(length)))
            let run = try qr(["decode", cut])
            #expect(run.status == 12 && run.errorCode == "UNREADABLE_IMAGE", "\(name): \(run.stderrText)")
            let record = try run.jsonLines().first
            #expect(record?["file"]?.stringValue == cut, "\(run.stdoutText)")
            #expect(record?["error"]?["message"]?.stringValue?.hasPrefix("corrupt HEIC: ") == true, "\(run.stdoutText)")
        }
        // The size in the container (over a megapixel, the least --max-pixels takes) is checked before anything is decoded.
        let side = try #require(try qr(["decode", heic]).jsonLines().first?["corners"]?[2]?[0]?.intValue)
        let tooLarge = try qr(["decode", "--max-pixels", "1", heic])
        #expect(tooLarge.status == 12 && tooLarge.errorCode == "UNREADABLE_IMAGE", "\(tooLarge.stderrText)")
        #expect(tooLarge.stderrText.contains("image too large") && side > 1000, "\(tooLarge.stderrText)")
    }
}
