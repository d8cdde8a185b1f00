#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineLoader

/// sl-qr decode's second engine: ZXing-C++ (Debian's libzxing2) behind the C interface of
/// `native/zxing/starline_zxing.h`, built as `libStarlineZXing.so` and loaded with dlopen the first time
/// libzbar finds nothing in an image (`QRScanner.Attempt.zxing`).
///
/// Why a second engine: libzbar stays the first (the product's choice, and the faster one on clean images),
/// but it reads nothing past ~52° of tilt, where ZXing-C++ still finds the finder patterns under perspective
/// (bench/RESULTS.md). Why dlopen: ZXing and the C++ runtime it needs would cost every start of sl-qr, and
/// `encode` never uses them. Without the shim or libzxing2 sl-qr decodes with libzbar alone and says so in
/// `sl-qr --version` (`ZXingLibrary.status`).
package struct ZXingLibrary: @unchecked Sendable {
    // @unchecked: immutable C function pointers, safe to share.
    typealias Results = OpaquePointer

    let read: @convention(c) (UnsafePointer<UInt8>?, Int32, Int32) -> Results?
    let count: @convention(c) (Results?) -> Int32
    let bytes: @convention(c) (Results?, Int32, UnsafeMutablePointer<Int>?) -> UnsafePointer<UInt8>?
    let bytesECI: @convention(c) (Results?, Int32, UnsafeMutablePointer<Int>?) -> UnsafePointer<UInt8>?
    let sequence: @convention(c) (Results?, Int32, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?) -> Void
    let corners: @convention(c) (Results?, Int32, UnsafeMutablePointer<Int32>?) -> Void
    let orientation: @convention(c) (Results?, Int32) -> Int32
    let free: @convention(c) (Results?) -> Void
    /// The ZXing-C++ version the shim was built against.
    package private(set) var version: String
    /// Where the shim was loaded from.
    package let path: String

    /// The file name `make build` gives the shim, next to the tools; `make install` puts it in
    /// `PREFIX/lib/starline/`.
    package static let fileName = "libStarlineZXing.so"

    /// The library, or why it is not there. Loaded once per process.
    package static let shared: Result<ZXingLibrary, StarlineError> = load()

    /// Whether the second engine is installed (loads it, once).
    package static var isAvailable: Bool {
        if case .success = shared { return true }
        return false
    }

    /// One line for `sl-qr --version`: which engines decode. libzbar is the first engine and decode cannot
    /// run without it (ZXing-C++ is only its fallback), so without libzbar the line says that alone.
    package static var status: String {
        if case .failure(let zbar) = ZBarLibrary.shared {
            let fallback =
                switch shared {
                case .success(let zxing): "ZXing-C++ \(zxing.version) (\(zxing.path)) is there as its fallback"
                case .failure(let error): "ZXing-C++, its fallback, is not available either (\(error.message))"
                }
            return "decoders: none, sl-qr decode cannot run without libzbar (\(zbar.message)); \(fallback)"
        }
        return switch shared {
        case .success(let zxing): "decoders: libzbar, then ZXing-C++ \(zxing.version) (\(zxing.path))"
        case .failure(let error): "decoders: libzbar alone (ZXing-C++ is not available: \(error.message))"
        }
    }

    /// The shim's candidate paths, relative to the running executable (resolved through /proc/self/exe, so
    /// a symlink to the tool finds the shim of the real install): beside it (the build directory), then
    /// `../lib/starline/` (the install layout). Never a search path or an environment variable: a library
    /// is code, and only the install's own directory decides which runs.
    static func candidates() -> [String] {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return [] }
        let executable = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = executable.utf8.lastIndex(of: UInt8(ascii: "/")) else { return [] }
        let directory = executable[..<slash]
        let parent = directory.utf8.lastIndex(of: UInt8(ascii: "/")).map { directory[..<$0] } ?? ""
        return ["\(directory)/\(fileName)", "\(parent)/lib/starline/\(fileName)"]
    }

    static func load() -> Result<ZXingLibrary, StarlineError> {
        let paths = candidates()
        guard let path = paths.first(where: { access($0, F_OK) == 0 }) else {
            return .failure(StarlineError(.internalError, "\(fileName) is not installed (looked in \(paths.joined(separator: ", ")))"))
        }
        // A library decides what code runs: SharedLibrary.open(path:) loads it from the descriptor it checked
        // (FileTrust.trustDeciding: regular, owned by root or by us, writable by nobody else).
        let requirement = SharedLibrary.Requirement(
            path, package: "libzxing2", remedy: "rebuild it with this sl-qr (scripts/build-zxing)")
        let loaded = SharedLibrary.load(path: path, requirement) { library in
            (
                ZXingLibrary(
                    read: library.function("starline_zxing_read"), count: library.function("starline_zxing_count"),
                    bytes: library.function("starline_zxing_bytes"), bytesECI: library.function("starline_zxing_bytes_eci"),
                    sequence: library.function("starline_zxing_sequence"), corners: library.function("starline_zxing_corners"),
                    orientation: library.function("starline_zxing_orientation"), free: library.function("starline_zxing_free"),
                    version: "?",
                    path: path),
                versionFunction: library.function("starline_zxing_version") as @convention(c) () -> UnsafePointer<CChar>?
            )
        }
        // The version is asked for only once every function is there (a stub is never called).
        return loaded.map { zxing, versionFunction in
            var zxing = zxing
            zxing.version = versionFunction().map { String(cString: $0) } ?? "?"
            return zxing
        }
    }

    /// The QR symbols ZXing-C++ finds in `image`, corners in its coordinates; empty when none (or when ZXing
    /// failed: the shim catches every exception and returns no results).
    func decode(_ image: GrayImage) -> [QRSymbol] {
        guard image.width > 0, image.height > 0, image.width <= Int(Int32.max), image.height <= Int(Int32.max) else { return [] }
        let results = image.pixels.withUnsafeBufferPointer { read($0.baseAddress, Int32(image.width), Int32(image.height)) }
        guard let results else { return [] }
        defer { free(results) }
        var symbols: [QRSymbol] = []
        for index in 0..<max(0, count(results)) {
            var length = 0
            guard let start = bytes(results, index, &length) else { continue }
            let payload = Array(UnsafeBufferPointer(start: start, count: length))
            var xy = [Int32](repeating: 0, count: 8)
            corners(results, index, &xy)
            let points = (0..<4).map { QRPoint(x: Int(xy[2 * $0]), y: Int(xy[2 * $0 + 1])) }
            var eciLength = 0
            let protocolBytes = bytesECI(results, index, &eciLength).map { Array(UnsafeBufferPointer(start: $0, count: eciLength)) }
            var position: Int32 = -1, total: Int32 = -1
            sequence(results, index, &position, &total)
            symbols.append(
                QRSymbol(
                    bytes: payload, corners: points, orientation: Self.orientation(degrees: orientation(results, index)),
                    designators: protocolBytes.flatMap { Self.designators(eciProtocol: $0, payload: payload) } ?? [],
                    sequencePart: position >= 0 && total > position ? .init(index: Int(position), count: Int(total)) : nil))
        }
        return symbols
    }

    /// The ECI designators of a payload given in the ECI protocol (ZXing's `bytesECI()`: `]Q` and a digit, then the
    /// bytes with each backslash doubled and each designator written as a backslash and six digits), as offsets
    /// into `payload`. Nil when the protocol text does not spell out exactly `payload` (then nothing is claimed
    /// about its charset): the shim's output is checked, not trusted.
    static func designators(eciProtocol: [UInt8], payload: [UInt8]) -> [QRSymbol.ECIDesignator]? {
        let backslash = UInt8(ascii: "\\")
        var i = eciProtocol.starts(with: Array("]Q".utf8)) && eciProtocol.count >= 3 ? 3 : 0
        var plain: [UInt8] = []
        plain.reserveCapacity(payload.count)
        var found: [QRSymbol.ECIDesignator] = []
        while i < eciProtocol.count {
            let byte = eciProtocol[i]
            guard byte == backslash else {
                plain.append(byte)
                i += 1
                continue
            }
            if i + 1 < eciProtocol.count, eciProtocol[i + 1] == backslash {
                plain.append(backslash)
                i += 2
                continue
            }
            guard i + 7 <= eciProtocol.count else { return nil }
            var assignment = 0
            for digit in eciProtocol[(i + 1)..<(i + 7)] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
                assignment = assignment * 10 + Int(digit - UInt8(ascii: "0"))
            }
            found.append(QRSymbol.ECIDesignator(offset: plain.count, assignment: assignment))
            i += 7
        }
        return plain == payload ? found : nil
    }

    /// ZXing's clockwise rotation in degrees, to the nearest quarter turn.
    static func orientation(degrees: Int32) -> QROrientation {
        switch ((Int(degrees) % 360 + 360 + 45) % 360) / 90 {
        case 0: .up
        case 1: .right
        case 2: .down
        default: .left
        }
    }
}
