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
            // One pass into a buffer of PNG_IMAGE_PNG_SIZE_MAX bytes, "a safe upper bound": the
            // two-pass form (size query with a NULL buffer, then the write) compresses twice.
            var image = describe(width: width, height: height)
            var capacity = starline_png_image_png_size_max(&image)
            return try [UInt8](unsafeUninitializedCapacity: Int(capacity)) { buffer, initialized in
                try write(width: width, height: height, pixels: raw.baseAddress!, rowStride: rowStride,
                          into: buffer.baseAddress, bytes: &capacity)
                initialized = Int(capacity)
            }
        }
    }

    /// "use memset to set the whole structure to 0 then initialize fields describing your
    /// image": Swift's zero initialiser does the memset; opaque stays NULL as required.
    private static func describe(width: Int, height: Int) -> png_image {
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        image.width = png_uint_32(width)
        image.height = png_uint_32(height)
        image.format = png_uint_32(PNG_FORMAT_GRAY)
        // PNG_IMAGE_FLAG_FAST: "set to make writing faster, this may produce larger output
        // files" — libpng skips its adaptive filter search, which took most of the time for
        // QR images (flat runs of 0 and 255 compress well without filtering).
        image.flags = png_uint_32(PNG_IMAGE_FLAG_FAST)
        return image
    }

    private static func write(width: Int, height: Int, pixels: UnsafeRawPointer, rowStride: Int32,
                              into memory: UnsafeMutableRawPointer?, bytes: inout png_alloc_size_t) throws {
        var image = describe(width: width, height: height)
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
