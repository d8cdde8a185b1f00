import CJPEG
import CPNG
import CQREncode
import Foundation
import StarlineQR
import StarlineTestSupport
import Testing

/// Test-only image sources and writers: the real `qrencode` and `zbarimg` tools, and
/// tiny PGM/PPM, PNG (libpng simplified write) and JPEG (tjCompress2) encoders.
enum TestImages {
    struct ToolMissing: Error, CustomStringConvertible {
        let tool: String, package: String
        var description: String {
            "\(tool) not found on PATH: install the Debian package '\(package)' (the project's bootstrap installs it)"
        }
    }

    /// The full path of a required tool; a missing tool fails the test with a clear message.
    static func tool(_ name: String, package: String) throws -> String {
        let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for dir in dirs + ["/usr/bin"] {
            let path = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        let error = ToolMissing(tool: name, package: package)
        Issue.record("\(error)")
        throw error
    }

    struct RunResult { let status: Int32; let stdout: [UInt8] }

    static func run(_ executable: String, _ arguments: [String], stdin: [UInt8]? = nil) throws -> RunResult {
        // zbarimg prints D-Bus connection noise on stderr; only stdout matters.
        let run = try Tools.runInstalled(executable, arguments, stdin: stdin ?? [])
        return RunResult(status: run.status, stdout: run.stdout)
    }

    /// PNG bytes from the real `qrencode` CLI. `bytes` are passed on stdin with `-8`
    /// (8-bit mode, any bytes incl. NUL); `text` goes through argv (qrencode picks modes).
    static func qrencodePNG(
        text: String? = nil, bytes: [UInt8]? = nil, moduleSize: Int = 4, margin: Int = 4,
        level: String = "M"
    ) throws -> [UInt8] {
        let qrencode = try tool("qrencode", package: "qrencode")
        var args = ["-o", "-", "-t", "PNG", "-s", "\(moduleSize)", "-m", "\(margin)", "-l", level]
        if let bytes {
            args.append("-8")
            let r = try run(qrencode, args, stdin: bytes)
            #expect(r.status == 0)
            return r.stdout
        }
        args.append(text ?? "")
        let r = try run(qrencode, args)
        #expect(r.status == 0, "qrencode failed")
        return r.stdout
    }

    static func qrImage(_ text: String, moduleSize: Int = 4, margin: Int = 4, level: String = "M") throws -> GrayImage {
        try ImageLoader.load(
            bytes: qrencodePNG(text: text, moduleSize: moduleSize, margin: margin, level: level),
            name: "qrencode")
    }

    /// zbarimg's output for one file: nil when it found nothing (exit 4), else the raw
    /// bytes of the symbols (`-Sbinary`: no charset conversion, no trailing newline).
    static func zbarimg(_ path: String) throws -> [UInt8]? {
        let zbarimg = try tool("zbarimg", package: "zbar-tools")
        let r = try run(zbarimg, ["-q", "--raw", "-Sbinary", path])
        return r.status == 0 ? r.stdout : nil
    }

    /// A QR with a UTF-8 ECI designator (ECI 26) before a byte segment, as the suite's
    /// encoder writes non-ASCII text; `qrencode` the CLI cannot emit ECI. 4 px modules,
    /// 4-module margin.
    static func eciImage(_ text: String) throws -> GrayImage {
        let input = try #require(QRinput_new2(0, QR_ECLEVEL_M))
        defer { QRinput_free(input) }
        #expect(QRinput_appendECIheader(input, 26) == 0)
        let bytes = Array(text.utf8)
        #expect(QRinput_append(input, QR_MODE_8, Int32(bytes.count), bytes) == 0)
        let code = try #require(QRcode_encodeInput(input))
        defer { QRcode_free(code) }
        let n = Int(code.pointee.width)
        let modules = [UInt8](UnsafeBufferPointer(start: code.pointee.data, count: n * n))
        return render(modules: modules, width: n, moduleSize: 4, margin: 4)
    }

    /// Draws a module matrix (bit 0 set = dark) on white.
    static func render(modules: [UInt8], width n: Int, moduleSize s: Int, margin m: Int) -> GrayImage {
        let side = (n + 2 * m) * s
        var pixels = [UInt8](repeating: 255, count: side * side)
        for y in 0..<side {
            for x in 0..<side {
                let mx = x / s - m, my = y / s - m
                if (0..<n).contains(mx), (0..<n).contains(my), modules[my * n + mx] & 1 != 0 {
                    pixels[y * side + x] = 0
                }
            }
        }
        return GrayImage(width: side, height: side, pixels: pixels)
    }

    // MARK: Composition

    /// Pastes `images` onto a white canvas at the given top-left origins.
    static func compose(width: Int, height: Int, _ parts: [(GrayImage, x: Int, y: Int)], background: UInt8 = 255) -> GrayImage {
        var pixels = [UInt8](repeating: background, count: width * height)
        for (image, ox, oy) in parts {
            for y in 0..<image.height {
                for x in 0..<image.width {
                    pixels[(oy + y) * width + ox + x] = image[x, y]
                }
            }
        }
        return GrayImage(width: width, height: height, pixels: pixels)
    }

    /// Rotated 90° clockwise.
    static func rotatedClockwise(_ image: GrayImage) -> GrayImage {
        let w = image.height, h = image.width
        var pixels = [UInt8](repeating: 0, count: w * h)
        for y in 0..<image.height {
            for x in 0..<image.width {
                pixels[x * w + (w - 1 - y)] = image[x, y]
            }
        }
        return GrayImage(width: w, height: h, pixels: pixels)
    }

    // MARK: Netpbm writers

    /// P5 (raw) or P2 (plain) with header comments; `maxval` > 255 writes 16-bit samples.
    static func pgm(_ image: GrayImage, plain: Bool = false, maxval: Int = 255) -> [UInt8] {
        let samples = image.pixels.map { (Int($0) * maxval + 127) / 255 }
        var out = Array(
            "\(plain ? "P2" : "P5")\n# written by StarlineQRTests\n\(image.width) # width\n\(image.height)\n# maxval next\n\(maxval)\n".utf8
        )
        if plain {
            for (i, v) in samples.enumerated() {
                out += Array("\(v)".utf8)
                out.append(i % 16 == 15 ? 0x0A : 0x20)
            }
        } else if maxval > 255 {
            for v in samples { out += [UInt8(v >> 8), UInt8(v & 0xFF)] }
        } else {
            out += samples.map(UInt8.init)
        }
        return out
    }

    /// P6 (raw) or P3 (plain): dark modules in navy (0,0,128), light in cream (255,250,235).
    static func ppm(_ image: GrayImage, plain: Bool = false) -> [UInt8] {
        var out = Array("\(plain ? "P3" : "P6") \(image.width) \(image.height) 255\n".utf8)
        for p in image.pixels {
            let rgb: [UInt8] = p < 128 ? [0, 0, 128] : [255, 250, 235]
            if plain { out += Array("\(rgb[0]) \(rgb[1]) \(rgb[2])\n".utf8) } else { out += rgb }
        }
        return out
    }

    // MARK: PNG and JPEG writers

    /// 8-bit gray PNG through libpng's simplified write API.
    static func png(_ image: GrayImage) throws -> [UInt8] {
        try png(width: image.width, height: image.height, format: PNG_FORMAT_GRAY, samples: image.pixels)
    }

    /// A PNG in any simplified-API format (`samples` interleaved as the format says).
    static func png(width: Int, height: Int, format: Int32, samples: [UInt8]) throws -> [UInt8] {
        var control = png_image()
        control.version = png_uint_32(PNG_IMAGE_VERSION)
        control.width = png_uint_32(width)
        control.height = png_uint_32(height)
        control.format = png_uint_32(format)
        var size: png_alloc_size_t = 0
        guard png_image_write_to_memory(&control, nil, &size, 0, samples, 0, nil) != 0 else {
            throw PNGWriteError(message: "size query failed")
        }
        var out = [UInt8](repeating: 0, count: Int(size))
        let ok = out.withUnsafeMutableBytes { png_image_write_to_memory(&control, $0.baseAddress, &size, 0, samples, 0, nil) }
        guard ok != 0 else { throw PNGWriteError(message: "write failed") }
        return Array(out.prefix(Int(size)))
    }

    struct PNGWriteError: Error { let message: String }
    struct JPEGWriteError: Error { let message: String }

    /// Grayscale JPEG through TurboJPEG's tjCompress2.
    static func jpeg(_ image: GrayImage, quality: Int32 = 90) throws -> [UInt8] {
        guard let handle = tjInitCompress() else { throw JPEGWriteError(message: "tjInitCompress") }
        defer { tjDestroy(handle) }
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        let status = image.pixels.withUnsafeBufferPointer {
            tjCompress2(
                handle, $0.baseAddress, Int32(image.width), 0, Int32(image.height), Int32(TJPF_GRAY.rawValue),
                &buffer, &size, Int32(TJSAMP_GRAY.rawValue), quality, 0)
        }
        defer { tjFree(buffer) }
        guard status == 0, let buffer else {
            throw JPEGWriteError(message: String(cString: tjGetErrorStr2(handle)))
        }
        return [UInt8](UnsafeBufferPointer(start: buffer, count: Int(size)))
    }

    // MARK: Files

    /// A fresh temporary directory, removed by the caller with `cleanUp`.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("starline-qr-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func write(_ bytes: [UInt8], to url: URL) throws {
        try Data(bytes).write(to: url)
    }
}
