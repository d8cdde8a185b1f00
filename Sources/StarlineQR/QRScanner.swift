import CZBar
#if canImport(Glibc)
import Glibc
#endif

/// Finds and decodes QR symbols with libzbar.
///
/// Create one scanner per thread (inside the worker) and reuse it for every image: a
/// zbar image scanner is not thread-safe. Its zbar image scanner is built again for each image
/// (`scan`), though: libzbar's QR reader fits finder-pattern edges with a random generator
/// (ISAAC, seeded once when the reader is made) whose state carries over from one image to
/// the next, so a reused one read the same image with other corners — or not at all — after
/// other images, and `-j N` answered according to which worker got which file.
public final class QRScanner {
    /// Retry strategies, tried in this order until one finds at least one symbol.
    public enum Attempt: String, Sendable, CaseIterable {
        /// The image as loaded.
        case original
        /// Light-on-dark symbols: zbar only looks for dark finder patterns on light.
        case inverted
        /// The image as loaded, read by the second engine, ZXing-C++ (`ZXingLibrary`), when it is installed:
        /// it finds codes under strong perspective (tilted past ~52°), where zbar finds none, in a few
        /// milliseconds, so it comes before zbar's slower retries. Skipped without the engine.
        case zxing
        /// The second engine on copies (when installed): smoothed (noise, JPEG blocks), sharpened (blur, glare
        /// edges) and bilinear ×2 (small or rotated modules). Each reads photos no libzbar attempt reads
        /// (bench/RESULTS.md), in milliseconds, so they come before libzbar's slower retries.
        case zxingSmoothed = "zxing-smoothed"
        case zxingSharpened = "zxing-sharpened"
        case zxingUpscaled = "zxing-upscaled"
        /// The second engine on the inverted image, for light-on-dark codes in photographs (ZXing-C++ 1.4 has no
        /// inversion of its own): as many read as libzbar's `inverted` in a quarter of its time.
        case zxingInverted = "zxing-inverted"
        /// The second engine on copies stretched ×1.5 along each of `QRScanner.stretchDirections` (`DirectionalStretch`):
        /// codes photographed at a steep angle, squeezed by foreshortening. The last attempt: two reads of a copy
        /// larger than the image, for the few photographs nothing else reads.
        case zxingTilted = "zxing-tilted"

        /// Made by ZXing-C++ rather than libzbar.
        public var usesSecondEngine: Bool {
            switch self {
            case .zxing, .zxingSmoothed, .zxingSharpened, .zxingUpscaled, .zxingInverted, .zxingTilted: true
            default: false
            }
        }

        /// The pixels this attempt reads on `image` (its work, `defaultWorkBudget`); nil when it does not apply to
        /// an image of that size (a copy too large to be worth it, or too small to survive halving).
        public func pixelsRead(_ image: GrayImage) -> Int? {
            switch self {
            case .zxingUpscaled, .upscaled, .smoothUpscaled, .invertedUpscaled:
                image.pixelCount <= QRScanner.maxPixelsForUpscale ? image.pixelCount * 4 : nil
            case .zxingTilted:
                image.pixelCount <= QRScanner.maxPixelsForUpscale
                    ? QRScanner.tiltStretches(for: image).reduce(0) { $0 + $1.width * $1.height } : nil
            case .downscaled:
                min(image.width, image.height) >= QRScanner.minSideForDownscale ? (image.width / 2) * (image.height / 2) : nil
            default: image.pixelCount
            }
        }
        /// ½ scale with a box filter: averages away sensor noise and JPEG ringing in
        /// large photos, where module edges are too soft for zbar's edge detector.
        case downscaled
        /// 2× nearest-neighbour: symbols with 1-pixel modules, which zbar misses for all
        /// but the smallest versions.
        case upscaled
        /// Photos (GrayImage+Enhance): tried only when the copies above found nothing, so a clean image costs
        /// no more. The 1 % extremes clipped and the rest stretched: low contrast, glare.
        case stretched
        /// A local threshold (the mean of a window around each pixel): uneven light, shadows, gradients.
        case binarized
        /// Unsharp masking: focus and motion blur.
        case sharpened
        /// 2× bilinear: modules of 1.3–3 pixels, where nearest-neighbour keeps the sampling errors.
        case smoothUpscaled = "smooth-upscaled"
        /// Light-on-dark symbols in a photo: the local threshold and the upscale, of the inverted image.
        case invertedBinarized = "inverted-binarized"
        case invertedUpscaled = "inverted-upscaled"
    }

    /// libzbar's own attempts: every one but the second engine's. The ladder where ZXing-C++ is not installed.
    public static let zbarAttempts: [Attempt] = Attempt.allCases.filter { !$0.usesSecondEngine }

    /// The ladder where both engines are installed, for an image that is not a photograph: libzbar first (a clean
    /// code costs no second library), then the second engine's attempts, then libzbar's copies that read what
    /// neither engine reads as it is. Measured per family on two generated photo corpora (bench/qr-accuracy,
    /// 2 × 260 photographs, 2026-12-05): every attempt kept reads codes no other attempt reads; `zxing-sharpened`,
    /// `upscaled`, `stretched`, `smooth-upscaled` and `inverted-upscaled` read none that the second engine's
    /// attempts do not (0 of 520 lost without them, at half the time for a code that cannot be read).
    public static let bothEngines: [Attempt] = [
        .original, .inverted, .zxing, .zxingSmoothed, .zxingUpscaled, .downscaled, .binarized, .sharpened, .invertedBinarized,
        .zxingTilted
    ]

    /// The same attempts for a photograph (`GrayImage.looksPhotographic`), the second engine's four first: on
    /// photographs ZXing-C++ reads most codes in a quarter of libzbar's time, and reads light-on-dark ones inverted
    /// as well; libzbar's pass over a noisy photograph is the slowest of the ladder, so it comes after them (it
    /// reads 1 in 200 that they do not). The same codes are read as with `bothEngines` (0 lost of 2 × 260 generated
    /// photographs, 0 misread), a folder of them in 0.4 of the time.
    public static let bothEnginesForPhotographs: [Attempt] = [
        .zxing, .zxingInverted, .zxingSmoothed, .zxingUpscaled, .original, .downscaled, .binarized, .sharpened, .invertedBinarized,
        .zxingTilted
    ]

    /// The directions of `zxing-tilted`, in degrees clockwise from the x axis: both diagonals, a set that turns
    /// into itself at every quarter turn (a photograph rotated by 90° gets the same copies, rotated). Four
    /// directions (30°, 60°, 120°, 150°) read 3 more of 520 photographs at twice the cost: a folder of them then
    /// takes 0.95 of the time of ZXing-C++ run once per file instead of 0.86, too close to call on a busy machine.
    public static let stretchDirections = [45, 135]
    /// How much `zxing-tilted` stretches: ×1.5 reads as many as ×2 with a quarter fewer pixels to read.
    public static let tiltStretch = 1.5

    /// The copies `zxing-tilted` reads of an image of that size, one per direction (its work and its variants).
    static func tiltStretches(for image: GrayImage) -> [DirectionalStretch] {
        stretchDirections.map { DirectionalStretch(degrees: $0, factor: tiltStretch, imageWidth: image.width, imageHeight: image.height) }
    }

    /// The attempts for `image`, in order: decided by the image and the engines installed, never by the clock.
    public static func ladder(for image: GrayImage) -> [Attempt] {
        ladder(photograph: image.looksPhotographic, secondEngine: ZXingLibrary.isAvailable)
    }

    /// The ladder for a photograph or not, with the second engine installed or not. Every ladder but a photograph's
    /// with the second engine begins with libzbar's `original`: `scan` makes that attempt before it asks whether
    /// the engine is installed, so a clean code that libzbar reads at once never loads it.
    public static func ladder(photograph: Bool, secondEngine: Bool) -> [Attempt] {
        guard secondEngine else { return zbarAttempts }
        return photograph ? bothEnginesForPhotographs : bothEngines
    }

    /// The downscaled attempt is skipped below this many pixels on the short side: a
    /// version-1 symbol (21 modules) could not survive halving.
    public static let minSideForDownscale = 42
    /// The upscaled attempt is skipped above this many pixels (the copy would be 4× as
    /// big and slow to scan; large images don't have 1-pixel modules in practice).
    public static let maxPixelsForUpscale = 4_000_000

    /// The work one image's ladder may do, counted in pixels read: each attempt costs the pixels of the copy it
    /// reads (a 2× copy four times the image's, a ½ copy a quarter), and an attempt that would take the total past
    /// the budget is skipped (the first attempt always runs). 160 million: every attempt for a photo of up to ~17
    /// megapixels (a 12-megapixel one reads about 111 million), the first few for a larger one. The ladder is
    /// decided by the image alone, so a busy machine makes the same attempts as an idle one and gets the same
    /// answer; the deadline is only a safety net for passes that take far longer than their pixels say.
    public static let defaultWorkBudget = 160_000_000

    /// libzbar's image scanner, fresh for each image (`scan`: the type's doc says why).
    private var scanner: OpaquePointer
    /// Whether `scanner` has scanned since it was made.
    private var scannerUsed = false
    private let zbar: ZBarLibrary
    private let y800 = starline_zbar_fourcc(
        CChar(UInt8(ascii: "Y")), CChar(UInt8(ascii: "8")),
        CChar(UInt8(ascii: "0")), CChar(UInt8(ascii: "0")))

    /// Throws when libzbar cannot be loaded (see `ZBarLibrary`).
    public init() throws {
        let zbar = try ZBarLibrary.shared.get()
        self.zbar = zbar
        scanner = Self.imageScanner(zbar)
    }

    /// A zbar image scanner set up for QR codes alone.
    private static func imageScanner(_ zbar: ZBarLibrary) -> OpaquePointer {
        // zbar_image_scanner_create only fails when malloc does.
        guard let scanner = zbar.imageScannerCreate() else { fatalError("zbar_image_scanner_create failed: out of memory") }
        // All symbologies off, then QR only: fewer decoders to feed per scan line, and no
        // false positives from 1-D barcodes in photos.
        _ = zbar.imageScannerSetConfig(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        _ = zbar.imageScannerSetConfig(scanner, ZBAR_QRCODE, ZBAR_CFG_ENABLE, 1)
        // "don't convert binary data to text" (zbar.h). Without it zbar guesses a charset
        // for byte-mode data and converts to UTF-8: bytes that are not valid UTF-8 are
        // taken as Latin-1 or Shift-JIS and re-encoded (0xFF comes back as C3 BF), so a
        // binary payload is silently changed. With it we get the stored bytes; an ECI
        // designator is dropped, not applied (UTF-8 behind ECI 26 comes back as is).
        _ = zbar.imageScannerSetConfig(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1)
        // The inter-image result cache stays off (the default; the call also clears it):
        // "the cache filters duplicate results from consecutive images" — for a batch of
        // files that would swallow a symbol that happens to repeat the previous image's.
        zbar.imageScannerEnableCache(scanner, 0)
        // ZBAR_CFG_TEST_INVERTED is left off too: `Attempt.inverted` does the same and
        // lets us report which attempt succeeded.
        return scanner
    }

    /// Starts an image with a zbar image scanner that has scanned nothing yet, so the answer for an image does
    /// not depend on the images before it (the type's doc).
    private func freshScanner() {
        guard scannerUsed else { return }
        zbar.imageScannerDestroy(scanner)
        scanner = Self.imageScanner(zbar)
        scannerUsed = false
    }

    deinit { zbar.imageScannerDestroy(scanner) }

    /// Scans `image`, trying `attempts` in order (default: `ladder(for:)`) and stopping at the first
    /// that finds a symbol — in a photograph where more codes can hide, with those its tiles add (`QRTiling`).
    /// Symbols come in reading order with corners in `image`'s coordinates.
    ///
    /// With a `deadline` (seconds of CLOCK_MONOTONIC, see `QRScanner.now()`), no further attempt
    /// starts once it has passed: the retries are what multiply the cost of a pathological image,
    /// and a zbar pass itself cannot be interrupted, so the bound is one pass past
    /// the deadline.
    ///
    /// With `regions`, the codes' own regions (`QRRegionsOfInterest`) are read too: beside the codes an attempt read,
    /// and when no attempt read any (`"attempt":"regions"`). By default they are with the image's own ladder (no
    /// `attempts` given), and given `attempts` those alone run.
    ///
    /// `willTry` is called before each retry (not before the first attempt): progress for long decodes.
    public func scan(
        _ image: GrayImage, attempts: [Attempt]? = nil, deadline: Double? = nil,
        workBudget: Int = QRScanner.defaultWorkBudget, regions: Bool? = nil, willTry: ((Attempt) -> Void)? = nil
    ) -> ScanResult {
        guard image.width > 0, image.height > 0 else { return ScanResult(symbols: [], attempt: "none") }
        freshScanner()
        let regions = regions ?? (attempts == nil)
        // Every ladder that is not for a photograph begins with libzbar's `original`: the rest, and whether the
        // second engine is installed, are looked up only when that finds nothing.
        let photograph = attempts == nil && image.looksPhotographic
        var ladder = attempts ?? (photograph ? Self.ladder(photograph: true, secondEngine: ZXingLibrary.isAvailable) : [.original])
        var complete = attempts != nil || photograph
        var lastTried = "none"
        var tried = 0, work = 0
        var next = 0
        while true {
            if next == ladder.count {
                guard !complete else { break }
                // Both ladders begin with `original`, just tried: go on at the second attempt.
                ladder = Self.ladder(photograph: false, secondEngine: ZXingLibrary.isAvailable)
                complete = true
            }
            let attempt = ladder[next]
            next += 1
            if let deadline, lastTried != "none", Self.now() >= deadline {
                return ScanResult(symbols: [], attempt: lastTried, timedOut: true, tried: tried)
            }
            // Without the second engine its attempt is not made, and not announced either.
            var engine: ZXingLibrary? = nil
            if attempt.usesSecondEngine {
                guard case .success(let zxing) = ZXingLibrary.shared else { continue }
                engine = zxing
            }
            guard let cost = attempt.pixelsRead(image) else { continue }
            if tried > 0, work + cost > workBudget { continue }
            work += cost
            tried += 1
            if lastTried != "none" { willTry?(attempt) }
            lastTried = attempt.rawValue
            for variant in attempt.variants(of: image) {
                let copy = variant.make()
                let found = engine?.decode(copy) ?? Self.withDesignators(decode(copy), in: copy)
                guard !found.isEmpty else { continue }
                var symbols = Self.deduplicated(
                    found.map { symbol in
                        var s = symbol
                        s.corners = s.corners.map { image.clamped(variant.mapBack($0)) }
                        return s
                    })
                // Several codes in one photograph: the tiles find those the whole image's pass left (`QRTiling`).
                if let tiling = QRTiling.wanted(for: image, found: symbols), work + tiling.pixelsRead <= workBudget,
                    case .success(let zxing) = ZXingLibrary.shared
                {
                    work += tiling.pixelsRead
                    symbols = Self.deduplicated(symbols + tiling.read(image, with: zxing))
                }
                // Codes beside the ones read, found by their finder patterns (`QRRegionsOfInterest`).
                if regions, Self.roomForMore(in: image, found: symbols) {
                    symbols = Self.deduplicated(
                        symbols + readRegions(of: image, excluding: symbols, work: &work, budget: workBudget).symbols)
                }
                return ScanResult(symbols: Self.readingOrder(symbols), attempt: attempt.rawValue, tried: tried)
            }
        }
        // Nothing read as a whole: the codes' own regions, each read alone (not begun past the deadline).
        if regions, let deadline, lastTried != "none", Self.now() >= deadline {
            return ScanResult(symbols: [], attempt: lastTried, timedOut: true, tried: tried)
        }
        // Counted as one attempt when it read a region (an image without a pattern pair reads none).
        let (symbols, read) = regions ? readRegions(of: image, excluding: [], work: &work, budget: workBudget) : ([], 0)
        if !symbols.isEmpty {
            return ScanResult(symbols: Self.readingOrder(Self.deduplicated(symbols)), attempt: "regions", tried: tried + 1)
        }
        return read > 0
            ? ScanResult(symbols: [], attempt: "regions", tried: tried + 1) : ScanResult(symbols: [], attempt: lastTried, tried: tried)
    }

    /// Seconds on the monotonic clock (no Foundation or Dispatch in sl-qr).
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// One zbar pass over `image`, corners in `image`'s own coordinates, in zbar's order.
    func decode(_ image: GrayImage) -> [QRSymbol] {
        guard let zimage = zbar.imageCreate() else { return [] }
        // The image owns its results (the symbol set); destroying it releases them, so
        // every byte we keep is copied out before this runs.
        defer { zbar.imageDestroy(zimage) }
        zbar.imageSetFormat(zimage, y800)
        zbar.imageSetSize(zimage, UInt32(image.width), UInt32(image.height))

        // zbar does not copy the samples: "when image data is no longer needed by the
        // library the specific data cleanup handler will be called", and for
        // zbar_image_destroy "make no assumptions about the image or the data buffer. they
        // may not be destroyed/cleaned immediately if the library is still using them.
        // if necessary, use the cleanup handler hook". A Swift array's storage is only
        // pinned inside withUnsafeBytes, so zbar gets its own malloc'ed copy and frees it
        // with the built-in handler ("passes the image data buffer to free()") whenever
        // it is really done. The copy costs far less than the scan.
        let count = image.pixelCount
        guard let buffer = malloc(count) else { return [] }
        image.pixels.withUnsafeBytes { _ = memcpy(buffer, $0.baseAddress!, count) }
        zbar.imageSetData(zimage, buffer, UInt(count), zbar.imageFreeData)

        scannerUsed = true
        guard zbar.scanImage(scanner, zimage) > 0 else { return [] }
        var symbols: [QRSymbol] = []
        var symbol = zbar.imageFirstSymbol(zimage)
        while let s = symbol {
            defer { symbol = zbar.symbolNext(s) }
            guard zbar.symbolGetType(s) == ZBAR_QRCODE else { continue }
            let length = Int(zbar.symbolGetDataLength(s))
            let bytes = zbar.symbolGetData(s).map { [UInt8](UnsafeRawBufferPointer(start: $0, count: length)) } ?? []
            var points: [QRPoint] = []
            for i in 0..<zbar.symbolGetLocSize(s) {
                points.append(QRPoint(x: Int(zbar.symbolGetLocX(s, i)), y: Int(zbar.symbolGetLocY(s, i))))
            }
            symbols.append(
                QRSymbol(
                    bytes: bytes, corners: Self.normalizedCorners(points),
                    orientation: Self.orientation(zbar.symbolGetOrientation(s))))
        }
        return symbols
    }
}

/// One scanner per thread: zbar's image scanner keeps per-scan state and is not
/// thread-safe, so it must never be shared between concurrent tasks.
@available(*, unavailable)
extension QRScanner: Sendable {}
