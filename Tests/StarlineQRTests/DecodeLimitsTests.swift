import CJPEG
import Foundation
import StarlineCore
import Synchronization
import Testing
@testable import StarlineQR

/// Decoding's bounds and inputs on the library side: reads bounded before they are buffered, a pixel budget
/// shared by workers, a deadline on the retry attempts, and the PBM and CMYK JPEG inputs zbarimg reads.
@Suite struct DecodeLimitsTests {
    func message(_ body: () throws -> Any) -> String? {
        do { _ = try body(); return nil } catch { return (error as? StarlineError)?.message ?? "\(error)" }
    }

    @Test func aFileOverTheLimitIsRefusedByItsSize() throws {
        let dir = try TestImages.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("big.pgm")
        try TestImages.write(TestImages.pgm(GrayImage(width: 100, height: 100, value: 9)), to: url)
        #expect(message { try ImageLoader.load(path: url.path, maxFileBytes: 4096) }?.contains("file too large (over 4096 bytes") == true)
        #expect(try ImageLoader.load(path: url.path, maxFileBytes: 1 << 20).width == 100)
    }

    @Test("a pipe is read no further than one byte past the limit")
    func aPipeStopsAtTheLimit() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let chunk = [UInt8](repeating: 0x41, count: 1000)
        _ = chunk.withUnsafeBytes { write(fds[1], $0.baseAddress, 1000) }
        close(fds[1])
        let prefix = try ImageLoader.readPrefix(fileDescriptor: fds[0], name: "-", maxBytes: 100)
        #expect(prefix.count == 101)
        // The rest was never read (so never buffered): it is still in the pipe.
        var rest = [UInt8](repeating: 0, count: 2000)
        let left = rest.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, 2000) }
        close(fds[0])
        #expect(left == 899)
        #expect(
            message { try ImageLoader.readAll(fileDescriptor: open("/dev/zero", O_RDONLY), name: "zero", maxBytes: 1 << 20) }?
                .contains("file too large") == true)
    }

    @Test func thePixelBudgetIsSharedAndWaitsUntilReleased() throws {
        let budget = PixelBudget(total: 1000)
        let first = PixelBudget.Reservation(budget)
        first.acquire(800)
        #expect(budget.inUse == 800)
        let secondDone = Atomic<Bool>(false)
        let thread = Thread {
            let second = PixelBudget.Reservation(budget)
            second.acquire(500)  // waits: 800 + 500 > 1000
            secondDone.store(true, ordering: .sequentiallyConsistent)
            second.release()
        }
        thread.start()
        usleep(100_000)
        let doneWhileHeld = secondDone.load(ordering: .sequentiallyConsistent)
        #expect(!doneWhileHeld)
        first.release()
        for _ in 0..<200 where !secondDone.load(ordering: .sequentiallyConsistent) { usleep(10_000) }
        let doneAfterRelease = secondDone.load(ordering: .sequentiallyConsistent)
        #expect(doneAfterRelease)
        // An image over the whole budget still decodes, alone: its claim is capped.
        let big = PixelBudget.Reservation(budget)
        big.acquire(5000)
        #expect(budget.inUse == 1000)
        big.release()
        #expect(budget.inUse == 0)
    }

    @Test func theLoaderTakesPixelsFromTheBudgetBeforeAllocating() throws {
        let budget = PixelBudget(total: 1_000_000)
        let reservation = PixelBudget.Reservation(budget)
        _ = try ImageLoader.load(bytes: TestImages.pgm(GrayImage(width: 300, height: 200)), name: "x", reservation: reservation)
        #expect(budget.inUse == 60_000)
        reservation.release()
        #expect(budget.inUse == 0)
    }

    @Test("the retry attempts stop at the deadline")
    func retriesStopAtTheDeadline() throws {
        let blank = GrayImage(width: 400, height: 400)
        let late = try QRScanner().scan(blank, deadline: QRScanner.now() - 1)
        #expect(late.symbols.isEmpty && late.timedOut && late.attempt == "original")
        var retries: [QRScanner.Attempt] = []
        let inTime = try QRScanner().scan(blank, deadline: QRScanner.now() + 60) { retries.append($0) }
        // The progress hook sees every retry of the ladder (decode --progress reports the slow ones): libzbar's own
        // where the second engine is not installed, both engines' where it is.
        let ladder = ZXingLibrary.isAvailable ? QRScanner.bothEngines : QRScanner.zbarAttempts
        #expect(!inTime.timedOut && inTime.attempt == ladder.last?.rawValue)
        #expect(retries == Array(ladder.dropFirst()))
    }

    @Test("W6: the work budget decides the ladder: the attempts whose pixels fit, the same whatever the machine's load")
    func w6TheWorkBudgetDecidesTheLadder() throws {
        let zxingInstalled = (try? ZXingLibrary.shared.get()) != nil
        // 3000×2000 (6 megapixels, too large for the 2× copies): with a budget of 30 million pixels read, the image
        // and its inverse (12 million), then the second engine's two full-size reads (24 million) when it is
        // there, the ½ copy (25.5 million), and no full-size copy after it (31.5 million); without the engine, the
        // ½ copy and the full-size photo copies up to 25.5 million.
        let image = GrayImage(width: 3000, height: 2000)
        let expected: [QRScanner.Attempt] =
            zxingInstalled
            ? [.original, .inverted, .zxing, .zxingSmoothed, .downscaled]
            : [.original, .inverted, .downscaled, .stretched, .binarized]
        func ladder() throws -> (attempts: [QRScanner.Attempt], result: ScanResult) {
            var attempts: [QRScanner.Attempt] = [.original]
            let result = try QRScanner().scan(image, deadline: QRScanner.now() + 600, workBudget: 30_000_000) { attempts.append($0) }
            return (attempts, result)
        }
        let idle = try ladder()
        #expect(idle.attempts == expected && idle.result.tried == expected.count && !idle.result.timedOut, "\(idle.attempts)")
        // Both cores busy: the same attempts (a wall-clock bound would have made fewer).
        let spinning = Atomic<Bool>(true)
        let spinners = (0..<2).map { _ in WorkerThreads.detach { while spinning.load(ordering: .relaxed) {} } }
        let busy = try ladder()
        spinning.store(false, ordering: .relaxed)
        #expect(spinners.allSatisfy { $0 })
        #expect(busy.attempts == idle.attempts && busy.result.tried == idle.result.tried && !busy.result.timedOut)
        // The first attempt runs whatever the budget; an attempt that does not apply costs nothing.
        #expect(try QRScanner().scan(image, workBudget: 1).tried == 1)
        #expect(QRScanner.Attempt.upscaled.pixelsRead(image) == nil && QRScanner.Attempt.downscaled.pixelsRead(image) == 1_500_000)
        #expect(QRScanner.Attempt.smoothUpscaled.pixelsRead(GrayImage(width: 100, height: 100)) == 40_000)
    }

    // MARK: PBM and CMYK JPEG (what zbarimg reads)

    @Test func rawAndPlainPBM() throws {
        // 10×2: row 0 alternates black/white, row 1 is all black; raw rows are padded to 2 bytes.
        let raw = Array("P4\n# comment\n10 2\n".utf8) + [0b1010_1010, 0b1000_0000, 0xFF, 0xC0]
        let image = try ImageLoader.load(bytes: raw, name: "b.pbm")
        #expect(image.width == 10 && image.height == 2)
        #expect((0..<10).map { image[$0, 0] } == [0, 255, 0, 255, 0, 255, 0, 255, 0, 255])
        #expect((0..<10).allSatisfy { image[$0, 1] == 0 })
        let plain = try ImageLoader.load(bytes: Array("P1 3 2\n1 0 1\n011".utf8), name: "p.pbm")
        #expect(plain.pixels == [0, 255, 0, 255, 0, 0])
        #expect(message { try ImageLoader.load(bytes: Array("P4 16 2\n".utf8) + [0xFF], name: "t.pbm") }?.contains("truncated") == true)
    }

    @Test func aQRCodeInPBMDecodes() throws {
        let qr = try TestImages.qrImage("pbm code")
        var bits: [UInt8] = []
        let rowBytes = (qr.width + 7) / 8
        for y in 0..<qr.height {
            var row = [UInt8](repeating: 0, count: rowBytes)
            for x in 0..<qr.width where qr[x, y] < 128 { row[x / 8] |= 0x80 >> UInt8(x % 8) }
            bits += row
        }
        let pbm = Array("P4 \(qr.width) \(qr.height)\n".utf8) + bits
        let result = try QRScanner().scan(try ImageLoader.load(bytes: pbm, name: "qr.pbm"))
        #expect(result.symbols.first?.bytes == Array("pbm code".utf8))
        try expectZbarimgReads(pbm, "pbm code", ext: "pbm")
    }

    @Test func aCMYKJPEGDecodes() throws {
        let qr = try TestImages.qrImage("cmyk jpeg")
        // Adobe-style inverted CMYK (255 = no ink): no colour ink, K' carrying the gray level.
        var cmyk: [UInt8] = []
        for v in qr.pixels { cmyk += [255, 255, 255, v] }
        guard let handle = tjInitCompress() else { Issue.record("tjInitCompress"); return }
        defer { tjDestroy(handle) }
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        let status = cmyk.withUnsafeBufferPointer {
            tjCompress2(
                handle, $0.baseAddress, Int32(qr.width), 0, Int32(qr.height), Int32(TJPF_CMYK.rawValue),
                &buffer, &size, Int32(TJSAMP_444.rawValue), 95, 0)
        }
        defer { tjFree(buffer) }
        try #require(status == 0 && buffer != nil)
        let jpeg = [UInt8](UnsafeBufferPointer(start: buffer, count: Int(size)))
        let image = try ImageLoader.load(bytes: jpeg, name: "cmyk.jpg")
        #expect(image.width == qr.width && image.height == qr.height)
        let result = try QRScanner().scan(image)
        #expect(result.symbols.first?.bytes == Array("cmyk jpeg".utf8))
        #expect(result.attempt == "original")
    }

    /// The reference: what we decode, zbarimg decodes too.
    func expectZbarimgReads(_ bytes: [UInt8], _ text: String, ext: String) throws {
        let dir = try TestImages.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("image.\(ext)")
        try TestImages.write(bytes, to: url)
        #expect(try TestImages.zbarimg(url.path) == Array(text.utf8))
    }
}
