import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// The same answer whatever the load (W6): which attempts sl-qr decode makes is decided by the image (its size and
/// the work budget), so a folder of photographs gives the same records on an idle machine and on one whose both
/// cores are busy. The deadline is a safety net that does not fire for them.
@Suite struct QRDeterminismTests {
    let home = TemporaryDirectory("sl-qr-determinism")
    static let photos = String(#filePath).replacingOccurrences(
        of: "/Tests/EndToEndTests/QRDeterminismTests.swift", with: "/Tests/StarlineQRTests/Photos")

    @Test(
        """
        W6: the photo corpus and a 3-megapixel photo without a code give the same records idle and with both cores \
        busy
        """)
    func w6SameRecordsOnABusyMachine() throws {
        // A 3-megapixel photograph-like image with no code (smooth light and sensor noise): the whole ladder reads
        // it (about 28 million pixels), seconds of work in the debug build that a wall-clock bound would cut short
        // on a busy machine. (A 12-megapixel one, 111 million, costs four times as much and shows nothing more.)
        let script = """
            import sys
            import numpy as np
            from PIL import Image
            rng = np.random.default_rng(20)
            h, w = 1500, 2000
            y, x = np.mgrid[0:h, 0:w]
            light = 128 + 60 * np.sin(x / 90.0) * np.cos(y / 115.0) + rng.normal(0, 12, (h, w))
            Image.fromarray(light.clip(0, 255).astype(np.uint8)).save(sys.argv[1], quality=90)
            """
        let large = home.file("large-no-code.jpg")
        let made = try Tools.runInstalled("/usr/bin/python3", ["-c", script, large])
        try #require(made.status == 0, "python3-numpy and Pillow are needed; run scripts/bootstrap: \(made.stderrText)")
        let photos = try FileManager.default.contentsOfDirectory(atPath: Self.photos).sorted().map { Self.photos + "/" + $0 }
        try #require(photos.count >= 5)
        let files = photos + [large]
        func decode() throws -> [JSON] {
            // The safety deadline raised: with both cores busy the ladder takes several times as long, and the
            // deadline must not be what this test measures.
            let run = try Tools.run("sl-qr", ["decode", "--jsonl", "-j", "1", "--image-timeout", "120000"] + files, home: home.path)
            #expect(run.status == 8, "\(run.stderrText)")  // the large image has no code
            return try run.jsonLines()
        }
        let idle = try decode()
        try #require(idle.count >= files.count, "\(idle)")
        let last = try #require(idle.last)
        #expect(last["found"]?.intValue == 0 && last["timedOut"] == nil && (last["tried"]?.intValue ?? 0) >= 5, "\(last)")

        let spinners = try (0..<2).map { _ in try Tools.spawn("/bin/sh", ["-c", "while :; do :; done"], home: home.path) }
        let busy = try decode()
        for spinner in spinners {
            spinner.signal(SIGKILL)
            _ = spinner.wait()
        }
        #expect(busy == idle, "idle: \(idle)\nbusy: \(busy)")
    }
}
