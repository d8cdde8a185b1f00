import Foundation
import StarlineCore
import StarlineQR
import StarlineTestSupport
import Testing

/// W6's batch decode in the domain, in-process: the worker pool, the order of outcomes, the records, the
/// isolation of large images (injected here; a helper process in the tool).
@Suite struct QRBatchDecoderTests {
    static let link = "https://chat.thestarline.cn/f/AbCdEfGh1234"
    static let classifier = PayloadClassifier(chatBase: try! BaseURL(validating: BaseURL.defaultChat))
    static let limits = QRBatchDecoder.Limits(maxFileBytes: 1 << 20, maxPixels: 10_000_000, pixelBudget: 50_000_000, imageTimeout: 10)

    /// A directory with QR PNGs of `texts` (`0.png`, `1.png`, …).
    static func images(_ texts: [String]) throws -> TemporaryDirectory {
        let directory = TemporaryDirectory("batch-decoder")
        for (i, text) in texts.enumerated() {
            let png = try QRRenderer.png(try QREncoder.encode(text, level: .M), moduleSize: 4, margin: 4)
            try Data(png).write(to: URL(fileURLWithPath: directory.file("\(i).png")))
        }
        return directory
    }

    @Test("W6 a batch over several workers gives each file's outcome in the order of the files, errors beside symbols")
    func w6OutcomesKeepTheOrderOfTheFiles() throws {
        let texts = (0..<12).map { "\(Self.link)n\($0)" }  // friend links of codes AbCdEfGh1234n0…
        let directory = try Self.images(texts)
        try Data("not an image".utf8).write(to: URL(fileURLWithPath: directory.file("text.png")))
        var files = texts.indices.map { directory.file("\($0).png") }
        files.insert(directory.file("missing.png"), at: 3)
        files.insert(directory.file("text.png"), at: 7)
        files.append("-")
        let stdin = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("0.png"))))

        let decoder = QRBatchDecoder(classifier: Self.classifier, expect: .url, limits: Self.limits, jobs: 4, isolation: nil)
        let outcomes = try decoder.decode(files, stdin: .success(stdin), progress: nil)
        #expect(outcomes.count == files.count)
        for (file, outcome) in zip(files, outcomes) {
            #expect(outcome.records.first?["file"]?.stringValue == file)
        }
        #expect(outcomes[3].error?.code == .unreadableImage && !outcomes[3].found)
        #expect(outcomes[7].error?.code == .unreadableImage && !outcomes[7].found)
        // Named once, in "file": the message does not repeat it.
        #expect(outcomes[7].records[0]["error"]?["message"]?.stringValue?.contains(directory.path) == false)
        let decoded = outcomes.filter(\.found).map { $0.records[0]["text"]?.stringValue }
        #expect(decoded == texts + [texts[0]])
        // A friend link is not a web URL: --expect url notes each kind it saw instead.
        #expect(outcomes.filter(\.found).allSatisfy { $0.unexpectedKinds == ["friendLink"] })
        #expect(outcomes[0].records[0]["kind"]?.stringValue == "friendLink" && outcomes[0].payloads.first?.kind == .friendLink)
    }

    /// Records what the decoder hands to its isolation.
    final class StandIn: Sendable {
        let calls = Locked<[(pixels: Int, attempts: [QRScanner.Attempt], workBudget: Int)]>([])
        func isolation(threshold: Int, failing: Bool = false) -> QRBatchDecoder.Isolation {
            QRBatchDecoder.Isolation(threshold: threshold, defaultDeadline: 10) { [self] image, attempts, workBudget, _ in
                calls.withLock { $0.append((image.pixelCount, attempts, workBudget)) }
                if failing { throw StarlineError(.internalError, "the helper was killed") }
                return ScanResult(symbols: [QRSymbol(bytes: Array("isolated".utf8), corners: [])], attempt: "original")
            }
        }
    }

    @Test(
        """
        W6 images above the threshold go to the isolation, with the image's whole ladder; below it they are scanned \
        in place
        """)
    func w6LargeImagesGoToTheIsolation() throws {
        let directory = try Self.images([Self.link])
        let standIn = StandIn()
        let file = directory.file("0.png")
        let small = QRBatchDecoder(
            classifier: Self.classifier, expect: nil, limits: Self.limits, jobs: 1, isolation: standIn.isolation(threshold: 1_000_000))
        #expect(try small.decode([file], stdin: nil, progress: nil)[0].records[0]["text"]?.stringValue == Self.link)
        #expect(standIn.calls.withLock { $0.isEmpty })

        let isolated = QRBatchDecoder(
            classifier: Self.classifier, expect: nil, limits: Self.limits, jobs: 1, isolation: standIn.isolation(threshold: 0))
        let outcome = try isolated.decode([file], stdin: nil, progress: nil)[0]
        #expect(outcome.records[0]["text"]?.stringValue == "isolated")
        #expect(
            standIn.calls.withLock {
                $0.count == 1 && $0[0].attempts == QRScanner.ladder(for: try! ImageLoader.load(path: file)) && $0[0].pixels > 0
            })
        // The work budget goes with the image: the helper makes the attempts the image's size allows, as in place.
        #expect(standIn.calls.withLock { $0[0].workBudget == QRScanner.defaultWorkBudget })

        // --image-timeout 0: the image as it is, and the record says the time ran out for the rest.
        var noTime = Self.limits
        noTime.imageTimeout = 0
        let quick = QRBatchDecoder(
            classifier: Self.classifier, expect: nil, limits: noTime, jobs: 1, isolation: standIn.isolation(threshold: 0))
        _ = try quick.decode([file], stdin: nil, progress: nil)
        #expect(standIn.calls.withLock { $0.last?.attempts == [.original] })
    }

    @Test("W6 an isolation that fails is that file's error; the other files are decoded")
    func w6AFailedIsolationIsOneFilesError() throws {
        let directory = try Self.images([Self.link, Self.link])
        let standIn = StandIn()
        let decoder = QRBatchDecoder(
            classifier: Self.classifier, expect: nil, limits: Self.limits, jobs: 2,
            isolation: standIn.isolation(threshold: 0, failing: true))
        let outcomes = try decoder.decode([directory.file("0.png"), directory.file("1.png")], stdin: nil, progress: nil)
        #expect(outcomes.map(\.found) == [false, false])
        #expect(outcomes.allSatisfy { $0.error?.message == "the helper was killed" })
        #expect(outcomes.allSatisfy { $0.records[0]["error"]?["code"]?.stringValue == "INTERNAL" })
    }
}
