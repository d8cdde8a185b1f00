#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// Loads PNG, JPEG, PBM/PGM/PPM, BMP, GIF (its first image), WebP, TIFF (its first page), HEIC and AVIF images as
/// 8-bit luminance (WebP through libwebp, TIFF through libtiff, HEIC and AVIF through libheif, each loaded when
/// the first such file is read).
///
/// The format comes from the first bytes, never from the file name: `-` (stdin), files
/// without an extension and misnamed files all work. Every failure — missing file,
/// unknown format, corrupt or truncated data, oversized image — is a
/// `StarlineError(.unreadableImage, …)` whose message starts with the file name.
public enum ImageLoader {
    /// Images above this many pixels are refused before any pixel buffer is allocated
    /// (a 40-byte PNG header can claim 4 billion pixels). `decode --max-pixels` overrides it.
    public static let defaultMaxPixels = 100_000_000

    /// Files above this size are refused: by fstat before reading, and while reading (a pipe,
    /// or a file that grows). `decode --max-file-size` overrides it. A 100-megapixel PNG of a
    /// QR code compresses far below it; an uncompressed one would not be a scan.
    public static let defaultMaxFileBytes = 256 << 20

    public enum Format: String, Sendable, CaseIterable {
        case png = "PNG"
        case jpeg = "JPEG"
        case pnm = "PBM/PGM/PPM"
        case bmp = "BMP"
        case gif = "GIF"
        case webp = "WebP"
        case tiff = "TIFF"
        case heic = "HEIC"
        case avif = "AVIF"
    }

    /// The formats this install reads, for `sl-qr --version`: WebP only when libwebp loads (it is loaded for it).
    package static var formatsStatus: String {
        /// `read` when the library loaded, else `not <formats> (why)`.
        func status<Library>(_ loaded: Result<Library, StarlineError>, _ formats: String, _ read: (Library) -> String) -> String {
            switch loaded {
            case .success(let library): read(library)
            case .failure(let error): "not \(formats) (\(error.message))"
            }
        }
        let webp = status(WebPLibrary.shared, "WebP") { _ in "WebP (libwebp)" }
        let tiff = status(TIFFLibrary.shared, "TIFF") { _ in "TIFF (libtiff)" }
        let heif = status(HEIFLibrary.shared, "HEIC or AVIF") { "HEIC and AVIF (libheif \($0.version))" }
        return "image formats: PNG, JPEG, PBM/PGM/PPM, BMP, GIF, \(webp), \(tiff), \(heif)"
    }

    /// Reads and decodes the file at `path` (taken literally: the CLI maps `-` to
    /// `loadStandardInput()` itself).
    public static func load(
        path: String, maxPixels: Int = defaultMaxPixels, maxFileBytes: Int = defaultMaxFileBytes,
        reservation: PixelBudget.Reservation? = nil
    ) throws -> GrayImage {
        try load(bytes: readFile(path: path, maxBytes: maxFileBytes), name: path, maxPixels: maxPixels, reservation: reservation)
    }

    /// Decodes an image held in memory. `name` only labels error messages and details.
    /// With a `reservation`, the pixels are taken from its budget before any buffer is allocated
    /// (waiting while other images hold it); the caller releases them when done with the image.
    public static func load(
        bytes: [UInt8], name: String, maxPixels: Int = defaultMaxPixels,
        reservation: PixelBudget.Reservation? = nil
    ) throws -> GrayImage {
        guard !bytes.isEmpty else {
            throw StarlineError(.unreadableImage, "\(name): empty file, not an image", details: fileDetails(name))
        }
        guard let format = detectFormat(bytes) else {
            // Say what it is when the magic bytes tell, and what to do: a user holding a PDF needs the
            // conversion, not the list of formats alone.
            let kind = otherFormat(bytes)
            let formats = Format.allCases.map(\.rawValue)
            let list = formats.dropLast().joined(separator: ", ") + " or " + formats[formats.count - 1]
            throw StarlineError(
                .unreadableImage,
                "\(name): \(kind.map { "a \($0) file, " } ?? "")not a \(list) image: convert it to PNG first (ImageMagick: convert IMAGE out.png)",
                details: .object([("file", .string(name))] + (kind.map { [("format", JSON.string($0))] } ?? [])))
        }
        let limits = DecodeLimits(name: name, maxPixels: maxPixels, reservation: reservation)
        switch format {
        case .png: return try PNGReader.decode(bytes, limits: limits)
        case .jpeg: return ExifOrientation.apply(ExifOrientation.of(jpeg: bytes), to: try JPEGReader.decode(bytes, limits: limits))
        case .pnm: return try PNMReader.decode(bytes, limits: limits)
        case .bmp: return try BMPReader.decode(bytes, limits: limits)
        case .gif: return try GIFReader.decode(bytes, limits: limits)
        case .webp: return try WebPReader.decode(bytes, limits: limits)
        case .tiff: return try TIFFReader.decode(bytes, limits: limits)
        case .heic, .avif: return try HEIFReader.decode(bytes, format: format, limits: limits)
        }
    }

    /// A file sl-qr does not read, by its magic bytes (for the message); nil when unknown.
    static func otherFormat(_ bytes: [UInt8]) -> String? {
        has(bytes, "%PDF", at: 0) ? "PDF" : nil
    }

    /// The HEIF container's brands (ISO/IEC 23008-12 and the AV1 Image File Format): an `ftyp` box first, whose
    /// major brand names HEVC (`heic`, `heix`, `hevc`, `hevx`, and the multi-view `heim`/`heis`), AV1 (`avif`,
    /// `avis`) or only the container (`mif1`, `msf1`: then the compatible brands tell, and HEIC is the name
    /// phones give it).
    static func heifFormat(_ bytes: [UInt8]) -> Format? {
        guard has(bytes, "ftyp", at: 4), bytes.count >= 16 else { return nil }
        let size = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        let end = min(max(size, 16), bytes.count)
        func brand(at offset: Int) -> String { String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self) }
        // The major brand, then the compatible brands after the minor version.
        let brands = [brand(at: 8)] + stride(from: 16, to: end - 3, by: 4).map(brand(at:))
        if brands.contains(where: { $0 == "avif" || $0 == "avis" }) { return .avif }
        if brands.contains(where: { ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"].contains($0) }) { return .heic }
        return nil
    }

    /// The format announced by the magic bytes, or nil.
    public static func detectFormat(_ bytes: [UInt8]) -> Format? {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        // "P1" to "P6" followed by whitespace or a comment.
        if bytes.count >= 3, bytes[0] == UInt8(ascii: "P"), (UInt8(ascii: "1")...UInt8(ascii: "6")).contains(bytes[1]),
            PNMReader.isWhitespace(bytes[2]) || bytes[2] == UInt8(ascii: "#")
        {
            return .pnm
        }
        func at(_ offset: Int, _ text: StaticString) -> Bool { has(bytes, text, at: offset) }
        if at(0, "GIF87a") || at(0, "GIF89a") { return .gif }
        if at(0, "RIFF") && at(8, "WEBP") { return .webp }
        if at(0, "BM") && bytes.count >= 18 { return .bmp }
        if let heif = heifFormat(bytes) { return heif }
        // Little- and big-endian TIFF (42), and BigTIFF (43).
        if [[0x49, 0x49, 0x2A, 0x00], [0x4D, 0x4D, 0x00, 0x2A], [0x49, 0x49, 0x2B, 0x00], [0x4D, 0x4D, 0x00, 0x2B]].contains(where: {
            bytes.starts(with: $0)
        }) {
            return .tiff
        }
        return nil
    }

    /// True when `bytes` hold the ASCII `text` at `offset` (magic numbers).
    static func has(_ bytes: [UInt8], _ text: StaticString, at offset: Int) -> Bool {
        let n = text.utf8CodeUnitCount
        return bytes.count >= offset + n && (0..<n).allSatisfy { bytes[offset + $0] == text.utf8Start[$0] }
    }

    // MARK: Reading files without Foundation

    /// The whole content of `path`, read with open/fstat/read.
    public static func readFile(path: String, maxBytes: Int = defaultMaxFileBytes) throws -> [UInt8] {
        // O_NONBLOCK: opening a FIFO with no writer would otherwise hang here; cleared before reading.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw errnoError(path, errno) }
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return try readAll(fileDescriptor: fd, name: path, maxBytes: maxBytes)
    }

    /// Everything readable from `fd` until end of file, refused over `maxBytes`. Works for pipes and
    /// terminals too (the size from fstat is only checked and used as a capacity hint). Does not close `fd`.
    public static func readAll(fileDescriptor fd: Int32, name: String, maxBytes: Int = defaultMaxFileBytes) throws -> [UInt8] {
        let bytes = try readPrefix(fileDescriptor: fd, name: name, maxBytes: maxBytes)
        if bytes.count > maxBytes { throw tooLargeFile(name, maxBytes) }
        return bytes
    }

    /// At most `maxBytes + 1` bytes of `fd`: all of it when it holds no more than `maxBytes`, else
    /// one byte over, so the caller knows the limit was passed without the rest ever being buffered
    /// (`< /dev/zero` stops at once). A regular file's size is checked with fstat first.
    public static func readPrefix(fileDescriptor fd: Int32, name: String, maxBytes: Int) throws -> [UInt8] {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw errnoError(name, errno) }
        if (st.st_mode & S_IFMT) == S_IFDIR { throw errnoError(name, EISDIR) }
        let isRegular = (st.st_mode & S_IFMT) == S_IFREG
        if isRegular && Int(st.st_size) > maxBytes { throw tooLargeFile(name, maxBytes) }

        var result: [UInt8] = []
        if isRegular { result.reserveCapacity(min(Int(st.st_size), maxBytes) + 1) }
        let chunkSize = 1 << 16
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        while result.count <= maxBytes {
            // Never more than maxBytes + 1 in the buffer: the read that crosses the limit is cut short.
            let want = min(chunkSize, maxBytes + 1 - result.count)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, want) }
            if n < 0 {
                if errno == EINTR { continue }
                throw errnoError(name, errno)
            }
            if n == 0 { break }
            result.append(contentsOf: chunk[0..<n])
        }
        return result
    }

    // MARK: Errors

    static func fileDetails(_ name: String) -> JSON { .object([("file", .string(name))]) }

    static func errnoError(_ name: String, _ code: Int32) -> StarlineError {
        let reason = strerror(code).map { String(cString: $0) } ?? "error \(code)"
        return StarlineError(
            .unreadableImage, "\(name): \(reason)",
            details: .object([("file", .string(name)), ("errno", .int(Int(code)))]))
    }

    public static func tooLargeFile(_ name: String, _ maxBytes: Int) -> StarlineError {
        StarlineError(
            .unreadableImage, "\(name): file too large (over \(sizeText(maxBytes)); see --max-file-size)",
            details: .object([("file", .string(name)), ("maxFileBytes", .int(maxBytes))]))
    }

    static func sizeText(_ bytes: Int) -> String {
        bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }
}

/// What every format reader needs to label errors and refuse oversized images.
struct DecodeLimits {
    let name: String
    let maxPixels: Int
    var reservation: PixelBudget.Reservation? = nil

    /// Throws "too large" when `width × height` exceeds the limit. Called with the header's
    /// dimensions, before the pixel buffer is allocated.
    func check(width: Int, height: Int) throws {
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        if overflow || pixels > maxPixels {
            throw StarlineError(
                .unreadableImage,
                "\(name): image too large (\(width)×\(height) pixels; the limit is \(megapixels(maxPixels)) megapixels)",
                details: .object([
                    ("file", .string(name)), ("width", .int(width)), ("height", .int(height)),
                    ("maxPixels", .int(maxPixels))
                ]))
        }
        reservation?.acquire(pixels)
    }

    /// The library `format` is read through (loaded with dlopen when first needed), or UNREADABLE_IMAGE saying
    /// the file is in that format and why the library is not there.
    func library<Library>(_ loaded: Result<Library, StarlineError>, for format: ImageLoader.Format) throws -> Library {
        switch loaded {
        case .success(let library): return library
        case .failure(let error):
            throw StarlineError(
                .unreadableImage, "\(name): a \(format.rawValue) image, but \(error.message)",
                details: .object([("file", .string(name)), ("format", .string(format.rawValue))]))
        }
    }

    /// `<name>: corrupt <format>: <reason>`.
    func corrupt(_ format: ImageLoader.Format, _ reason: String) -> StarlineError {
        StarlineError(
            .unreadableImage, "\(name): corrupt \(format.rawValue): \(reason)",
            details: .object([("file", .string(name)), ("format", .string(format.rawValue))]))
    }

    private func megapixels(_ n: Int) -> String {
        n % 1_000_000 == 0 ? String(n / 1_000_000) : String(Double(n) / 1e6)
    }
}
