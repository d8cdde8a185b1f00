import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// The time one image may take is bounded for real. A zbar pass cannot be interrupted and costs
/// more than linearly on tiled finder patterns (15 s for one pass at 16 megapixels here), so images over 2
/// megapixels are scanned by a helper process that is killed at `--image-timeout`.
@Suite struct DecodeDeadlineTests {
    let home = TemporaryDirectory("decode-deadline")

    func tiledFinders(tiles: Int) throws -> String { try Self.tiledFinders(tiles: tiles, in: home) }

    /// A PGM of `tiles`×`tiles` QR finder patterns (7 modules and a light separator, 2 pixels a module).
    static func tiledFinders(tiles: Int, in home: TemporaryDirectory) throws -> String {
        let module = 2, tile = 8
        func dark(_ y: Int, _ x: Int) -> Bool {
            if y == 7 || x == 7 { return false }
            if y == 0 || y == 6 || x == 0 || x == 6 { return true }
            if y == 1 || y == 5 || x == 1 || x == 5 { return false }
            return true
        }
        let side = tiles * tile * module
        var rows: [[UInt8]] = []
        for y in 0..<tile {
            var row: [UInt8] = []
            for x in 0..<tile { row += [UInt8](repeating: dark(y, x) ? 0 : 255, count: module) }
            rows.append(Array([[UInt8]](repeating: row, count: tiles).joined()))
        }
        var pgm = Array("P5 \(side) \(side) 255\n".utf8)
        pgm.reserveCapacity(pgm.count + side * side)
        for y in 0..<(tiles * tile) { for _ in 0..<module { pgm += rows[y % tile] } }
        let path = home.file("finders-\(tiles).pgm")
        try Data(pgm).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func w6APathologicalImageStopsAtTheDeadline() throws {
        let path = try tiledFinders(tiles: 250)  // 4000×4000: one zbar pass takes ~15 s
        // Without the helper the one pass runs to its end, ~15 s; killed by the guard at 12 s, the run fails.
        let run = try Tools.spawn("sl-qr", ["decode", "--image-timeout", "1500", path], home: home.path).waitOrKill(seconds: 12)
        #expect(run.killedBy == nil, "the deadline was not enforced: the run was still going after 12 s")
        #expect(run.status == 12, "\(run.stderrText)")
        let record = try #require(try run.jsonLines().first)
        #expect(record["found"]?.intValue == 0 && record["timedOut"] == .bool(true), "\(record)")
    }

    /// The helper dies with its parent: sl-qr killed by SIGKILL mid-scan leaves no process scanning on.
    @Test func w6TheScanHelperDoesNotOutliveSlQr() throws {
        let path = try tiledFinders(tiles: 250)
        let decode = try Tools.spawn("sl-qr", ["decode", "--image-timeout", "60000", path], home: home.path)
        var helper: Int32?
        let deadline = Date().addingTimeInterval(10)
        // A child is the helper once it has exec'd: between posix_spawn's clone and its exec, /proc/PID/cmdline
        // is still sl-qr's own (seen on a loaded machine).
        while helper == nil, Date() < deadline {
            let children = (try? String(contentsOfFile: "/proc/\(decode.pid)/task/\(decode.pid)/children", encoding: .utf8)) ?? ""
            helper = children.split(separator: " ").compactMap { Int32($0) }.first { pid in
                (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8))?.contains("--internal-scan-helper") == true
            }
            if helper == nil { usleep(50_000) }
        }
        let child = try #require(helper, "sl-qr started a helper (--internal-scan-helper) for a 16-megapixel image")
        decode.signal(SIGKILL)
        _ = decode.wait()
        var gone = false
        for _ in 0..<100 where !gone {
            // A zombie (state Z) is gone as far as work goes; the test runner is not its parent, init reaps it.
            let stat = (try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8)) ?? ""
            gone = stat.isEmpty || stat.contains(") Z ")
            if !gone { usleep(50_000) }
        }
        #expect(gone, "the helper \(child) is still scanning after its parent was killed")
    }

    /// A large real code still decodes through the helper, with its corners.
    @Test func w6ALargeImageDecodesThroughTheHelper() throws {
        let png = home.file("big.png")
        let encode = try Tools.run("sl-qr", ["encode", "-s", "40", "-o", png, "https://chat.thestarline.cn/f/Big"], home: home.path)
        let made = try encode.json()
        #expect(encode.status == 0 && made["pixels"]?.intValue == 1480, "1480² pixels: over the 2-megapixel threshold")
        let run = try Tools.run("sl-qr", ["decode", png], home: home.path)
        #expect(run.status == 0, "\(run.stderrText)")
        let record = try #require(try run.jsonLines().first)
        #expect(record["text"]?.stringValue == "https://chat.thestarline.cn/f/Big" && record["attempt"]?.stringValue == "original")
        #expect(
            record["corners"]
                == .array([
                    .array([.int(157), .int(157)]), .array([.int(1322), .int(157)]),
                    .array([.int(1322), .int(1322)]), .array([.int(157), .int(1322)])
                ]))
    }
}
