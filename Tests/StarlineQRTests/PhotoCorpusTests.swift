import Foundation
import StarlineCore
import StarlineQR
import StarlineTestSupport
import Testing

/// sl-qr decode on photographed codes: one image of every family of the photo corpus (generated here by
/// `bench/qr-corpus/generate.py`, codes by segno and qrencode, never by sl-qr; `make bench` scores the whole
/// corpus), and the second engine, ZXing-C++: what it reads that libzbar cannot, and sl-qr without it.
@Suite struct PhotoCorpusTests {
    static let repository = String(#filePath).replacingOccurrences(of: "/Tests/StarlineQRTests/PhotoCorpusTests.swift", with: "")
    static let tilted = repository + "/Tests/StarlineQRTests/Photos/tilt-19.jpg"
    static let tiltedPayload = "https://chat.thestarline.cn/f/kA7xQ3F1NMSde8t1IaBYPD"
    let home = TemporaryDirectory("sl-qr-photos")

    /// Debian's python3 with python3-opencv, python3-numpy and python3-segno (scripts/bootstrap installs them).
    static let python = "/usr/bin/python3"

    @Test(
        """
        the moderate image of each of the 13 photo families decodes with the right bytes, and every image zbarimg \
        reads
        """)
    func sampleOfEveryFamilyDecodes() throws {
        let corpus = home.file("corpus")
        let generated = try Tools.shell("\(Self.python) '\(Self.repository)/bench/qr-corpus/generate.py' '\(corpus)' --sample")
        try #require(generated.status == 0, "generate.py failed (run scripts/bootstrap): \(generated.stderrText)")
        let expected = try String(contentsOfFile: corpus + "/expected.jsonl", encoding: .utf8)
            .split(separator: "\n").map { try JSON.parse(String($0)) }
        let families = Set(expected.compactMap { $0["family"]?.stringValue })
        #expect(expected.count == 13 && families.count == 13)
        let files = expected.compactMap { $0["file"]?.stringValue }.map { corpus + "/" + $0 }
        let run = try Tools.run("sl-qr", ["decode", "--jsonl", "--show-secrets", "-q"] + files, home: home.path)
        #expect(run.status == 0, "\(run.stdoutText)\(run.stderrText)")
        var read: [String: [UInt8]] = [:]
        for record in try run.jsonLines() {
            guard let file = record["file"]?.stringValue, let bytes = record["bytesBase64"]?.stringValue.flatMap(Base64.decode) else {
                continue
            }
            read[(file as NSString).lastPathComponent] = bytes
        }
        for entry in expected {
            let file = entry["file"]?.stringValue ?? "?"
            let payload = Array((entry["payload"]?.stringValue ?? "").utf8)
            #expect(read[file] == payload, "\(file) (\(entry["family"]?.stringValue ?? "?")): not read, or other bytes")
            // Never fewer than zbarimg: anything it reads, sl-qr reads (checked above for every image).
            let zbar = try Tools.shell("zbarimg --raw -q '\(corpus)/\(file)'", environment: ["DBUS_SESSION_BUS_ADDRESS": "disabled:"])
            if zbar.status == 0 { #expect(read[file] != nil, "zbarimg reads \(file), sl-qr does not") }
        }
    }

    @Test("a code tilted 72° that no libzbar attempt reads is read by the second engine, ZXing-C++")
    func secondEngineReadsWhatZbarCannot() throws {
        let zxing = try ZXingLibrary.shared.get()
        #expect(zxing.version.hasPrefix("1.") || zxing.version.hasPrefix("2."))
        let image = try ImageLoader.load(path: Self.tilted)
        let scanner = try QRScanner()
        #expect(scanner.scan(image, attempts: QRScanner.zbarAttempts).symbols.isEmpty)
        let result = scanner.scan(image)
        #expect(result.attempt == "zxing")
        let symbol = try #require(result.symbols.first)
        #expect(String(decoding: symbol.bytes, as: UTF8.self) == Self.tiltedPayload)
        // The corners are where the card is (right of centre in the 800×600 photo).
        #expect(symbol.corners.count == 4 && symbol.corners.allSatisfy { $0.x > 470 && $0.x < 630 && $0.y > 140 && $0.y < 400 })

        // Through the built tool: the record says which engine read it, and --version names both engines.
        let run = try Tools.run("sl-qr", ["decode", "--show-secrets", Self.tilted], home: home.path)
        #expect(run.status == 0, "\(run.stderrText)")
        let record = try #require(try run.jsonLines().first)
        #expect(record["attempt"]?.stringValue == "zxing" && record["url"]?.stringValue == Self.tiltedPayload)
        let version = try Tools.run("sl-qr", ["--version"], home: home.path)
        #expect(version.stdoutText.contains("\ndecoders: libzbar, then ZXing-C++ \(zxing.version) ("), "\(version.stdoutText)")
    }

    @Test(
        """
        without the second engine (not installed, or a shim others could write) sl-qr decodes with libzbar alone and \
        says so
        """)
    func withoutTheSecondEngineZbarAloneDecodes() throws {
        // The tool as installed without libStarlineZXing.so: the executable alone in a directory.
        let alone = home.file("alone")
        try FileManager.default.createDirectory(atPath: alone, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Tools.path("sl-qr"), toPath: alone + "/sl-qr")
        let clean = home.file("clean.png")
        #expect(try Tools.run("sl-qr", ["encode", "https://chat.thestarline.cn/f/AbCdEfGh1234", "-o", clean], home: home.path).status == 0)

        func version() throws -> String { try Tools.shell("'\(alone)/sl-qr' --version").stdoutText }
        #expect(try version().contains("decoders: libzbar alone (ZXing-C++ is not available: libStarlineZXing.so is not installed"))
        let decoded = try Tools.shell("'\(alone)/sl-qr' decode --raw -q '\(clean)'")
        #expect(decoded.status == 0 && decoded.stdoutText == "https://chat.thestarline.cn/f/AbCdEfGh1234\n")
        let tilted = try Tools.shell("'\(alone)/sl-qr' decode -q '\(Self.tilted)'")
        #expect(tilted.status == 12 && tilted.stdoutText.contains("\"found\":0"), "\(tilted.stdoutText)")

        // A shim that another user could have written is code we will not run: refused, said why, zbar alone.
        let shim = alone + "/" + ZXingLibrary.fileName
        try FileManager.default.copyItem(atPath: Tools.binDirectory + "/" + ZXingLibrary.fileName, toPath: shim)
        #expect(chmod(shim, 0o664) == 0)
        let refused = try version()
        #expect(
            refused.contains("libzbar alone (ZXing-C++ is not available: ")
                && refused.contains("not loaded: the library ")
                && refused.contains("/\(ZXingLibrary.fileName) is writable by others (mode 0664)") && !refused.contains("install the"),
            "\(refused)")
        // Installed properly beside the tool, the same copy is the second engine.
        #expect(chmod(shim, 0o644) == 0)
        #expect(try version().contains("decoders: libzbar, then ZXing-C++"))
        let read = try Tools.shell("'\(alone)/sl-qr' decode --raw -q '\(Self.tilted)'")
        #expect(read.status == 0 && read.stdoutText == Self.tiltedPayload + "\n")
    }
}
