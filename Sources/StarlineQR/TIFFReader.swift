import CTIFFShim
import StarlineCore
import StarlineLoader

/// TIFF (scanners and fax software write it; also BigTIFF) through libtiff, loaded with dlopen the first time a
/// TIFF file is read (`TIFFLibrary`): the first page, any compression and photometric libtiff reads, through its
/// RGBA interface (which also applies the file's orientation), alpha composed over white. The file is read
/// from memory (TIFFClientOpen over the bytes already read and size-checked), never reopened by name.
enum TIFFReader {
    static func decode(_ bytes: [UInt8], limits: DecodeLimits) throws -> GrayImage {
        let tiff = try limits.library(TIFFLibrary.shared, for: .tiff)
        return try bytes.withUnsafeBufferPointer { data in
            let file = MemoryFile(data)
            let client = Unmanaged.passRetained(file)
            defer { client.release() }
            starline_tiff_clear_error()
            // "r": read; "m": do not map the file (there is no file: the map callback declines anyway).
            guard
                let handle = tiff.clientOpen(
                    "memory", "rm", client.toOpaque(), { MemoryFile.read($0, $1, $2) }, { _, _, _ in -1 }, { MemoryFile.seek($0, $1, $2) },
                    { _ in 0 }, { UInt64(MemoryFile.file($0).bytes.count) }, { _, _, _ in 0 }, { _, _, _ in })
            else {
                throw limits.corrupt(.tiff, TIFFLibrary.lastError(or: "libtiff could not open it"))
            }
            defer { tiff.close(handle) }
            var width: UInt32 = 0, height: UInt32 = 0
            guard
                starline_tiff_get_uint32(tiff.getField, UnsafeMutableRawPointer(handle), 256 /* TIFFTAG_IMAGEWIDTH */, &width) == 1,
                starline_tiff_get_uint32(tiff.getField, UnsafeMutableRawPointer(handle), 257 /* TIFFTAG_IMAGELENGTH */, &height) == 1,
                width > 0, height > 0
            else {
                throw limits.corrupt(.tiff, "no image width or height")
            }
            try limits.check(width: Int(width), height: Int(height))
            // One uint32 a pixel (ABGR): the pixel limit, checked above, bounds it.
            var raster = [UInt32](repeating: 0, count: Int(width) * Int(height))
            let status = raster.withUnsafeMutableBufferPointer { out in
                tiff.readRGBAImageOriented(handle, width, height, out.baseAddress, 1 /* ORIENTATION_TOPLEFT */, 1 /* stop on error */)
            }
            guard status == 1 else { throw limits.corrupt(.tiff, TIFFLibrary.lastError(or: "libtiff could not read the image")) }
            var gray = [UInt8](repeating: 255, count: raster.count)
            raster.withUnsafeBufferPointer { p in
                gray.withUnsafeMutableBufferPointer { out in
                    for i in 0..<out.count {
                        let v = p[i]
                        let gray = Luminance.of(Int(v & 0xFF), Int(v >> 8 & 0xFF), Int(v >> 16 & 0xFF))
                        out[i] = Luminance.overWhite(gray, alpha: Int(v >> 24))
                    }
                }
            }
            return GrayImage(width: Int(width), height: Int(height), pixels: gray)
        }
    }

    /// The bytes libtiff reads through its client callbacks: a cursor over memory the caller keeps alive.
    final class MemoryFile {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        static func file(_ handle: UnsafeMutableRawPointer?) -> MemoryFile {
            Unmanaged<MemoryFile>.fromOpaque(handle!).takeUnretainedValue()
        }

        static func read(_ handle: UnsafeMutableRawPointer?, _ buffer: UnsafeMutableRawPointer?, _ size: Int) -> Int {
            let file = MemoryFile.file(handle)
            guard size > 0, let buffer, file.position < file.bytes.count, let base = file.bytes.baseAddress else { return 0 }
            let n = min(size, file.bytes.count - file.position)
            buffer.copyMemory(from: base + file.position, byteCount: n)
            file.position += n
            return n
        }

        /// SEEK_SET 0, SEEK_CUR 1, SEEK_END 2; a position before the start (or overflowing) is refused with
        /// (toff_t)-1, as lseek's error.
        static func seek(_ handle: UnsafeMutableRawPointer?, _ offset: UInt64, _ whence: Int32) -> UInt64 {
            let file = MemoryFile.file(handle)
            let base: Int
            switch whence {
            case 0: base = 0
            case 1: base = file.position
            case 2: base = file.bytes.count
            default: return UInt64.max
            }
            // toff_t is unsigned: a seek back from the current position or the end arrives wrapped around.
            let (target, overflow) = base.addingReportingOverflow(Int(truncatingIfNeeded: offset))
            guard !overflow, target >= 0 else { return UInt64.max }
            file.position = target
            return UInt64(target)
        }
    }
}

/// libtiff (Debian's libtiff6), loaded with dlopen the first time a TIFF image is read.
struct TIFFLibrary: @unchecked Sendable {
    // @unchecked: immutable C function pointers, safe to share.
    typealias ReadWrite = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int) -> Int
    typealias Seek = @convention(c) (UnsafeMutableRawPointer?, UInt64, Int32) -> UInt64
    typealias Close = @convention(c) (UnsafeMutableRawPointer?) -> Int32
    typealias Size = @convention(c) (UnsafeMutableRawPointer?) -> UInt64
    typealias Map =
        @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?, UnsafeMutablePointer<UInt64>?) -> Int32
    typealias Unmap = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UInt64) -> Void

    /// `TIFF* TIFFClientOpen(const char*, const char*, thandle_t, TIFFReadWriteProc, TIFFReadWriteProc,
    /// TIFFSeekProc, TIFFCloseProc, TIFFSizeProc, TIFFMapFileProc, TIFFUnmapFileProc)`.
    let clientOpen:
        @convention(c) (
            UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeMutableRawPointer?, ReadWrite, ReadWrite, Seek, Close, Size, Map, Unmap
        ) -> OpaquePointer?
    let close: @convention(c) (OpaquePointer?) -> Void
    /// `int TIFFReadRGBAImageOriented(TIFF*, uint32_t, uint32_t, uint32_t* raster, int orientation, int stopOnError)`.
    let readRGBAImageOriented: @convention(c) (OpaquePointer?, UInt32, UInt32, UnsafeMutablePointer<UInt32>?, Int32, Int32) -> Int32
    /// `TIFFGetField`, variadic: called through `starline_tiff_get_uint32`.
    let getField: UnsafeMutableRawPointer

    static let shared: Result<TIFFLibrary, StarlineError> = load()

    static func load() -> Result<TIFFLibrary, StarlineError> {
        let loaded = SharedLibrary.load(["libtiff.so.6"], .init("libtiff", package: "libtiff6")) { library in
            (
                TIFFLibrary(
                    clientOpen: library.function("TIFFClientOpen"), close: library.function("TIFFClose"),
                    readRGBAImageOriented: library.function("TIFFReadRGBAImageOriented"), getField: library.address("TIFFGetField")),
                handlers: (library.address("TIFFSetErrorHandler"), library.address("TIFFSetWarningHandler"))
            )
        }
        return loaded.map { tiff, handlers in
            starline_tiff_install_handlers(handlers.0, handlers.1)
            return tiff
        }
    }

    /// libtiff's last error on this thread, or `fallback`.
    static func lastError(or fallback: String) -> String {
        let text = String(cString: starline_tiff_last_error())
        return text.isEmpty ? fallback : text
    }
}
