import StarlineCore
import StarlineLoader

/// WebP (what browsers save images as) through libwebp, loaded with dlopen the first time a WebP file is read
/// (`WebPLibrary`): lossy and lossless, with or without alpha (composed over white, as PNG's is). An animated
/// WebP is refused with a conversion hint: the simple decoding API reads still images only.
enum WebPReader {
    static func decode(_ bytes: [UInt8], limits: DecodeLimits) throws -> GrayImage {
        let webp = try limits.library(WebPLibrary.shared, for: .webp)
        return try bytes.withUnsafeBufferPointer { data in
            // struct WebPBitstreamFeatures { int width, height, has_alpha, has_animation, format; uint32_t pad[5]; }
            var features = [Int32](repeating: 0, count: 10)
            let status = features.withUnsafeMutableBytes {
                webp.getFeatures(data.baseAddress, UInt(data.count), $0.baseAddress, WebPLibrary.decoderABIVersion)
            }
            // VP8StatusCode: 0 OK, 3 BITSTREAM_ERROR, 4 UNSUPPORTED_FEATURE, 7 NOT_ENOUGH_DATA, …
            guard status == 0 else { throw limits.corrupt(.webp, WebPLibrary.statusText(status)) }
            let width = Int(features[0]), height = Int(features[1])
            guard features[3] == 0 else {
                throw limits.corrupt(
                    .webp, "an animated WebP: convert its first frame to PNG first (ImageMagick: convert 'IMAGE[0]' out.png)")
            }
            guard width > 0, height > 0 else { throw limits.corrupt(.webp, "zero width or height") }
            try limits.check(width: width, height: height)
            // Four bytes a pixel: the pixel limit, checked above, bounds it.
            var rgba = [UInt8](repeating: 0, count: width * height * 4)
            let decoded = rgba.withUnsafeMutableBufferPointer { out in
                webp.decodeRGBAInto(data.baseAddress, UInt(data.count), out.baseAddress, UInt(out.count), Int32(width * 4))
            }
            guard decoded != nil else { throw limits.corrupt(.webp, "libwebp could not decode it (damaged or truncated)") }
            let gray = rgba.withUnsafeBufferPointer {
                Luminance.overWhite(rgba: $0.baseAddress!, width: width, height: height, rowBytes: width * 4)
            }
            return GrayImage(width: width, height: height, pixels: gray)
        }
    }
}

/// libwebp (Debian's libwebp7), loaded with dlopen the first time a WebP image is read, so no other start of
/// sl-qr pays for it and an install without it still reads every other format.
struct WebPLibrary: @unchecked Sendable {
    // @unchecked: immutable C function pointers, safe to share.

    /// `WEBP_DECODER_ABI_VERSION` of the webp/decode.h this was written against (libwebp 1.2): the inline
    /// `WebPGetFeatures` passes it to `WebPGetFeaturesInternal`, which refuses a major version it does not know.
    static let decoderABIVersion: Int32 = 0x0209

    /// `VP8StatusCode WebPGetFeaturesInternal(const uint8_t*, size_t, WebPBitstreamFeatures*, int)`.
    let getFeatures: @convention(c) (UnsafePointer<UInt8>?, UInt, UnsafeMutableRawPointer?, Int32) -> Int32
    /// `uint8_t* WebPDecodeRGBAInto(const uint8_t* data, size_t data_size, uint8_t* output_buffer,
    /// size_t output_buffer_size, int output_stride)`: NULL on error.
    let decodeRGBAInto:
        @convention(c) (UnsafePointer<UInt8>?, UInt, UnsafeMutablePointer<UInt8>?, UInt, Int32) -> UnsafeMutablePointer<UInt8>?

    static let shared: Result<WebPLibrary, StarlineError> = load()

    static func load() -> Result<WebPLibrary, StarlineError> {
        SharedLibrary.load(["libwebp.so.7"], .init("libwebp", package: "libwebp7")) { library in
            WebPLibrary(getFeatures: library.function("WebPGetFeaturesInternal"), decodeRGBAInto: library.function("WebPDecodeRGBAInto"))
        }
    }

    static func statusText(_ status: Int32) -> String {
        switch status {
        case 1: "out of memory"
        case 2: "invalid parameter"
        case 3: "damaged data (bitstream error)"
        case 4: "a WebP feature libwebp does not support"
        case 7: "truncated data"
        default: "libwebp status \(status)"
        }
    }
}
