import CPNG
#if canImport(Glibc)
import Glibc
#endif

/// PNG through libpng's *simplified* API only. The classic API reports errors by
/// longjmp-ing out of a callback, which Swift cannot survive; the simplified API catches
/// that inside libpng and returns 0 with a message in `png_image.message` instead.
enum PNGReader {
    static func decode(_ bytes: [UInt8], limits: DecodeLimits) throws -> GrayImage {
        let image = PNGImage()
        return try bytes.withUnsafeBytes { memory in
            // libpng keeps `memory` (not a copy) between begin_read and finish_read, so both
            // calls happen inside this one closure, while the buffer is pinned.
            guard png_image_begin_read_from_memory(image.pointer, memory.baseAddress, memory.count) != 0 else {
                throw limits.corrupt(.png, image.message)
            }
            let width = Int(image.pointer.pointee.width), height = Int(image.pointer.pointee.height)
            try limits.check(width: width, height: height)

            // Any colour type, bit depth, palette, tRNS or interlacing is converted by libpng
            // to 8-bit sRGB gray. Alpha is composited onto white: "background … The value is
            // an sRGB color to use for the background, for grayscale output the green channel
            // is used" (png.h) — a QR drawn on a transparent canvas stays dark on light.
            image.pointer.pointee.format = png_uint_32(PNG_FORMAT_GRAY)
            var white = png_color(red: 255, green: 255, blue: 255)
            let stride = Int(starline_png_image_row_stride(image.pointer))
            precondition(stride == width, "8-bit gray rows are width bytes")
            var pixels = [UInt8](repeating: 0, count: width * height)
            let ok = pixels.withUnsafeMutableBytes { out in
                png_image_finish_read(image.pointer, &white, out.baseAddress, png_int_32(stride), nil)
            }
            guard ok != 0, starline_png_image_failed(image.pointer) == 0 else {
                throw limits.corrupt(.png, image.message)
            }
            return GrayImage(width: width, height: height, pixels: pixels)
        }
    }
}

/// Owns one `png_image` control structure.
///
/// It lives in its own allocation rather than in a Swift variable because libpng keeps
/// its address: the control data in `opaque` points back to the `png_image` (its error
/// handler writes `message` through that pointer), so it must not move between
/// `begin_read` and `finish_read`. png.h: "Declare a 'png_image' structure …, set the
/// version field to PNG_IMAGE_VERSION and the 'opaque' pointer to NULL (this is
/// REQUIRED, your program may crash if you don't do it.)"
final class PNGImage {
    let pointer: UnsafeMutablePointer<png_image>

    init() {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: png_image())  // all zero: opaque = NULL
        pointer.pointee.version = png_uint_32(PNG_IMAGE_VERSION)
    }

    deinit {
        // "Free any data allocated by libpng in image->opaque, setting the pointer to NULL.
        // May be called at any time after the structure is initialized." finish_read and a
        // failed begin_read already free it; a second call is then a no-op.
        png_image_free(pointer)
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }

    /// libpng's last error or warning (a NUL-terminated char[64]).
    var message: String {
        let text = withUnsafeBytes(of: &pointer.pointee.message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return text.isEmpty ? "unknown libpng error" : text
    }
}
