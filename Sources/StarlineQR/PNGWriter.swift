import CPNG
import StarlineCore

/// Writes 8-bit grayscale PNGs through libpng's simplified write API, which reports errors in
/// `png_image.message` instead of longjmp-ing (Swift cannot use setjmp).
///
/// The simplified API writes no tIME or text chunks, so identical pixels give identical bytes.
enum PNGWriter {
    /// PNG bytes for a `width × height` image of gray levels, row-major, no row padding.
    static func grayscale(width: Int, height: Int, pixels: [UInt8]) throws -> [UInt8] {
        precondition(width > 0 && height > 0 && pixels.count == width * height)
        guard let rowStride = Int32(exactly: width), UInt32(exactly: height) != nil else {
            throw StarlineError(.usage, "image of \(width)×\(height) pixels is too large for PNG")
        }
        return try pixels.withUnsafeBytes { raw in
            // Pass 1: "'memory' may be NULL. In this case *memory_bytes is not read however on
            // success the number of bytes which would have been written will still be stored".
            var needed: png_alloc_size_t = 0
            try write(width: width, height: height, pixels: raw.baseAddress!, rowStride: rowStride,
                      into: nil, bytes: &needed)
            // Pass 2 into a buffer of exactly that size. The docs require the same image
            // description and buffer for both calls, hence a freshly initialised png_image.
            var written = needed
            let output = try [UInt8](unsafeUninitializedCapacity: Int(needed)) { buffer, initialized in
                try write(width: width, height: height, pixels: raw.baseAddress!, rowStride: rowStride,
                          into: buffer.baseAddress, bytes: &written)
                initialized = Int(written)
            }
            return output
        }
    }

    private static func write(width: Int, height: Int, pixels: UnsafeRawPointer, rowStride: Int32,
                              into memory: UnsafeMutableRawPointer?, bytes: inout png_alloc_size_t) throws {
        // "use memset to set the whole structure to 0 then initialize fields describing your
        // image": Swift's zero initialiser does the memset; opaque stays NULL as required.
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        image.width = png_uint_32(width)
        image.height = png_uint_32(height)
        image.format = png_uint_32(PNG_FORMAT_GRAY)
        // libpng frees its internal state before returning from the write call, but
        // png_image_free "May be called at any time after the structure is initialized", so
        // call it anyway: nothing can leak whichever way the write ends.
        defer { png_image_free(&image) }
        let ok = png_image_write_to_memory(&image, memory, &bytes, 0, pixels, rowStride, nil)
        guard ok != 0, starline_png_image_failed(&image) == 0 else {
            let message = withUnsafeBytes(of: image.message) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            throw StarlineError(.internalError, "libpng could not write the image: \(message)",
                                details: .object([("width", .int(width)), ("height", .int(height))]))
        }
    }
}
