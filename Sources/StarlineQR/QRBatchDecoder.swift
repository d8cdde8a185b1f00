#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import Synchronization

/// `sl-qr decode` of many files at once (W6): a pool of workers, each with a zbar scanner of its own (zbar's are
/// not thread-safe), taking the next file from a shared counter; one pixel budget over all the images in memory
/// at once; each file's symbols classified into records, or its error. Outcomes come back in the order of the
/// files whatever order the workers finish in.
///
/// A large image is scanned through `isolation` when one is given — in the tool, a helper process killed at the
/// image's deadline (a zbar pass cannot be interrupted); in tests, nothing or a stand-in.
public struct QRBatchDecoder: Sendable {
    /// The bounds on one run's reads and work: hostile images never cost unbounded memory or time.
    public struct Limits: Sendable {
        public var maxFileBytes: Int
        public var maxPixels: Int
        public var pixelBudget: Int
        /// Seconds one image may take, a safety net; 0: only the image as it is, within `isolatedDeadline`.
        public var imageTimeout: Double
        /// The pixels one image's attempts may read (`QRScanner.defaultWorkBudget`): what decides the ladder.
        public var workBudget: Int

        public init(
            maxFileBytes: Int, maxPixels: Int, pixelBudget: Int, imageTimeout: Double, workBudget: Int = QRScanner.defaultWorkBudget
        ) {
            self.maxFileBytes = maxFileBytes
            self.maxPixels = maxPixels
            self.pixelBudget = pixelBudget
            self.imageTimeout = imageTimeout
            self.workBudget = workBudget
        }
    }

    /// Where images above `threshold` pixels are scanned, and the deadline when `--image-timeout 0` gives none.
    public struct Isolation: Sendable {
        public let threshold: Int
        public let defaultDeadline: Double
        public let scan:
            @Sendable (_ image: GrayImage, _ attempts: [QRScanner.Attempt], _ workBudget: Int, _ deadline: Double) throws -> ScanResult

        public init(
            threshold: Int, defaultDeadline: Double,
            scan: @escaping @Sendable (GrayImage, [QRScanner.Attempt], Int, Double) throws -> ScanResult
        ) {
            self.threshold = threshold
            self.defaultDeadline = defaultDeadline
            self.scan = scan
        }
    }

    /// What a run tells its watcher as it goes (a progress line on a terminal).
    public protocol Progress: Sendable {
        /// An image that has taken `seconds` so far, about to be tried another way.
        func retrying(_ file: String, _ attempt: QRScanner.Attempt, after seconds: Double)
        func finished(_ file: String, found: Bool)
    }

    public let classifier: PayloadClassifier
    /// Symbols of another kind are noted in `unexpectedKinds` (`--expect`).
    public let expect: PayloadKind?
    public let limits: Limits
    public let jobs: Int
    public let isolation: Isolation?

    public init(classifier: PayloadClassifier, expect: PayloadKind?, limits: Limits, jobs: Int, isolation: Isolation?) {
        self.classifier = classifier
        self.expect = expect
        self.limits = limits
        self.jobs = jobs
        self.isolation = isolation
    }

    /// Each file's outcome, in the order of `files`. `stdin` holds the bytes of "-" (read once, up front, so
    /// workers never touch the caller's streams); a failed read is that file's error. Throws only when libzbar
    /// cannot be loaded — once, before any file.
    public func decode(_ files: [String], stdin: Result<[UInt8], any Error>?, progress: (any Progress)?) throws -> [QRFileOutcome] {
        _ = try ZBarLibrary.shared.get()
        let budget = PixelBudget(total: limits.pixelBudget)
        func decode(_ file: String, _ scanner: QRScanner) -> QRFileOutcome {
            let outcome = decodeFile(file, stdin: stdin, scanner: scanner, budget: budget, progress: progress)
            progress?.finished(file, found: outcome.found)
            return outcome
        }
        if jobs <= 1 {
            let scanner = try QRScanner()
            return files.map { decode($0, scanner) }
        }
        let next = Atomic<Int>(0)
        let results = Locked<[QRFileOutcome?]>(Array(repeating: nil, count: files.count))
        WorkerThreads.run(count: min(jobs, files.count)) { _ in
            guard let scanner = try? QRScanner() else { return }  // cannot fail: the library is loaded
            while true {
                let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard i < files.count else { return }
                let outcome = decode(files[i], scanner)
                results.withLock { $0[i] = outcome }
            }
        }
        return results.withLock { $0 }.enumerated().map { i, outcome in
            outcome ?? .failed(files[i], StarlineError(.internalError, "no worker thread decoded \(files[i])"))
        }
    }

    func decodeFile(
        _ file: String, stdin: Result<[UInt8], any Error>?, scanner: QRScanner, budget: PixelBudget, progress: (any Progress)?
    ) -> QRFileOutcome {
        let image: GrayImage
        // The image's pixels come out of the shared budget from its header on, and go back once it is scanned.
        let reservation = PixelBudget.Reservation(budget)
        defer { reservation.release() }
        do {
            image =
                file == "-"
                ? try ImageLoader.load(
                    bytes: try (stdin ?? .success([])).get(), name: "-", maxPixels: limits.maxPixels, reservation: reservation)
                : try ImageLoader.load(path: file, maxPixels: limits.maxPixels, maxFileBytes: limits.maxFileBytes, reservation: reservation)
        } catch {
            return .failed(file, (error as? StarlineError) ?? StarlineError(.unreadableImage, "\(file): \(error)"))
        }
        let start = QRScanner.now()
        let result: ScanResult
        if let isolation, image.pixelCount > isolation.threshold {
            // With --image-timeout 0 only the ladder's first attempt is made (the image as it is), within the
            // default deadline.
            let ladder = QRScanner.ladder(for: image)
            let attempts = limits.imageTimeout > 0 ? ladder : Array(ladder.prefix(1))
            let bound = limits.imageTimeout > 0 ? limits.imageTimeout : isolation.defaultDeadline
            do {
                var isolated = try isolation.scan(image, attempts, limits.workBudget, start + bound)
                if limits.imageTimeout == 0 { isolated.timedOut = true }
                result = isolated
            } catch {
                return .failed(file, (error as? StarlineError) ?? StarlineError(.internalError, "\(error)"))
            }
        } else {
            result = scanner.scan(image, deadline: start + limits.imageTimeout, workBudget: limits.workBudget) { attempt in
                progress?.retrying(file, attempt, after: QRScanner.now() - start)
            }
        }
        return outcome(file, result)
    }

    /// The records of one scanned file: one per symbol, or `{"file","found":0}`. A file whose only symbols are
    /// parts of an incomplete structured-append sequence has their records, but counts as giving no code.
    func outcome(_ file: String, _ result: ScanResult) -> QRFileOutcome {
        guard !result.symbols.isEmpty else {
            // How many ways it was read: the same on any machine (the work budget decides), unless the deadline, a
            // safety net, stopped it.
            let record: [(String, JSON)] =
                [("file", .string(file)), ("found", .int(0)), ("tried", .int(result.tried))]
                + (result.timedOut ? [("timedOut", .bool(true))] : [])
            return QRFileOutcome(
                records: [.object(record)], found: false, error: StarlineError(.noSymbol, "no QR code found in \(file)"),
                unexpectedKinds: [])
        }
        var records: [JSON] = []
        var payloads: [(kind: PayloadKind, bytes: [UInt8])] = []
        var unexpected: [String] = []
        for (index, symbol) in result.symbols.enumerated() {
            let payload =
                symbol.sequencePart.map { classifier.part(symbol.bytes, designators: symbol.designators, $0) }
                ?? classifier.classify(symbol.bytes, designators: symbol.designators)
            // --raw prints the text in UTF-8 as zbarimg --raw does (a Shift_JIS payload as the characters it
            // holds, a redacted code redacted), and binary payloads as they are; never a fragment (zbarimg
            // prints no part of an incomplete sequence either).
            if payload.kind != .part { payloads.append((payload.kind, payload.text.map { Array($0.utf8) } ?? symbol.bytes)) }
            if let expect, payload.kind != expect { unexpected.append(payload.kind.rawValue) }
            var fields: [(String, JSON)] = [
                ("file", .string(file)), ("index", .int(index)), ("kind", .string(payload.kind.rawValue)),
                ("text", .optional(payload.text)), ("charset", .optional(payload.charset))
            ]
            if payload.includesBytes { fields.append(("bytesBase64", .string(Base64.encode(symbol.bytes)))) }
            fields.append(("corners", .array(symbol.corners.map { .array([.int($0.x), .int($0.y)]) })))
            fields.append(("attempt", .string(result.attempt)))
            fields += payload.fields
            records.append(.object(fields))
        }
        guard payloads.isEmpty else {
            return QRFileOutcome(records: records, payloads: payloads, found: true, error: nil, unexpectedKinds: unexpected)
        }
        let parts = result.symbols.compactMap(\.sequencePart)
        let count = parts.map(\.count).max() ?? 0
        return QRFileOutcome(
            records: records, found: false,
            error: StarlineError(
                .noSymbol,
                "only \(parts.count) of the \(count) symbols of a structured-append sequence in \(file): scan them in one image",
                details: .object([("file", .string(file)), ("parts", .int(parts.count)), ("count", .int(count))])),
            unexpectedKinds: unexpected)
    }
}

/// What decoding one file gave: its records (one per symbol, or the file's error), what `--raw` prints.
public struct QRFileOutcome: Sendable {
    public var records: [JSON]
    /// Each symbol's kind and what `--raw` prints of it (its bytes, or its redacted text).
    public var payloads: [(kind: PayloadKind, bytes: [UInt8])] = []
    public var found: Bool
    public var error: StarlineError?
    public var unexpectedKinds: [String]

    /// A file that could not be decoded: `{"file","error":{…}}`. The record names the file once, in "file": its
    /// error's message and details do not repeat it.
    public static func failed(_ file: String, _ failure: StarlineError) -> QRFileOutcome {
        var shown = failure
        let prefix = file + ": "
        if shown.message.hasPrefix(prefix) { shown.message = String(shown.message.dropFirst(prefix.count)) }
        if let members = shown.details?.objectValue {
            let rest = members.filter { $0.0 != "file" }
            shown.details = rest.isEmpty ? nil : .object(rest)
        }
        return QRFileOutcome(
            records: [.object([("file", .string(file)), ("error", shown.json["error"] ?? .null)])], found: false, error: failure,
            unexpectedKinds: [])
    }
}
