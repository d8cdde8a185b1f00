import CJPEG
#if canImport(Glibc)
import Glibc
#endif

/// JPEG through the TurboJPEG API only. Classic libjpeg's default error handler calls
/// exit() on bad input and the alternative is setjmp/longjmp, which Swift cannot use;
/// TurboJPEG does the longjmp inside C and returns -1 with a message from tjGetErrorStr2.
enum JPEGReader {
    static func decode(_ bytes: [UInt8], limits: DecodeLimits) throws -> GrayImage {
        guard let decompressor = TurboJPEGDecompressor() else {
            throw limits.corrupt(.jpeg, "cannot create a TurboJPEG decompressor: \(TurboJPEGDecompressor.globalError)")
        }
        return try bytes.withUnsafeBufferPointer { jpeg in
            var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
            guard
                tjDecompressHeader3(
                    decompressor.handle, jpeg.baseAddress, UInt(jpeg.count),
                    &width, &height, &subsampling, &colorspace) == 0
            else {
                throw limits.corrupt(.jpeg, decompressor.errorMessage)
            }
            // A tables-only datastream, or one cut off before its frame header, "succeeds"
            // with the width and height left untouched.
            guard width > 0, height > 0 else { throw limits.corrupt(.jpeg, "no frame header (truncated or tables-only data)") }
            try limits.check(width: Int(width), height: Int(height))

            // TurboJPEG cannot take CMYK/YCCK to gray ("Unsupported color conversion request"): those
            // are decoded as CMYK and reduced to luminance here (zbarimg reads them through ImageMagick).
            if colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue) {
                return try decodeCMYK(jpeg, decompressor, width: width, height: height, limits: limits)
            }
            var pixels = [UInt8](repeating: 0, count: Int(width) * Int(height))
            // TJPF_GRAY takes the luminance (Y) channel straight from YCbCr JPEGs — no
            // colour conversion. TJFLAG_LIMITSCANS refuses progressive JPEGs with an absurd
            // number of scans (a known CPU-exhaustion trick) instead of grinding on them.
            let status = pixels.withUnsafeMutableBufferPointer { out in
                tjDecompress2(
                    decompressor.handle, jpeg.baseAddress, UInt(jpeg.count), out.baseAddress,
                    width, 0 /* pitch = width */, height, Int32(TJPF_GRAY.rawValue), TJFLAG_LIMITSCANS)
            }
            try check(status, decompressor, limits)
            return GrayImage(width: Int(width), height: Int(height), pixels: pixels)
        }
    }

    /// A CMYK JPEG as luminance. Nearly every CMYK JPEG is written the Adobe way, with the samples
    /// inverted (255 = no ink), which is what libjpeg hands back untouched; so R = C'·K'/255 and so on,
    /// then Rec. 601 luminance. A file written the other way comes out light-on-dark, which the
    /// inverted scan attempt reads anyway.
    static func decodeCMYK(
        _ jpeg: UnsafeBufferPointer<UInt8>, _ decompressor: TurboJPEGDecompressor,
        width: Int32, height: Int32, limits: DecodeLimits
    ) throws -> GrayImage {
        let count = Int(width) * Int(height)
        // 4 bytes a pixel: the pixel limit already bounds this (it is checked before the call).
        var cmyk = [UInt8](repeating: 0, count: count * 4)
        let status = cmyk.withUnsafeMutableBufferPointer { out in
            tjDecompress2(
                decompressor.handle, jpeg.baseAddress, UInt(jpeg.count), out.baseAddress,
                width, 0, height, Int32(TJPF_CMYK.rawValue), TJFLAG_LIMITSCANS)
        }
        try check(status, decompressor, limits)
        var gray = [UInt8](repeating: 0, count: count)
        cmyk.withUnsafeBufferPointer { src in
            gray.withUnsafeMutableBufferPointer { out in
                for i in 0..<count {
                    let k = Int(src[4 * i + 3])
                    let r = Int(src[4 * i]) * k, g = Int(src[4 * i + 1]) * k, b = Int(src[4 * i + 2]) * k
                    out[i] = UInt8((299 * r + 587 * g + 114 * b + 127_500) / 255_000)
                }
            }
        }
        return GrayImage(width: Int(width), height: Int(height), pixels: gray)
    }

    /// A failed tjDecompress2 is fatal unless it is a harmless warning (see below).
    static func check(_ status: Int32, _ decompressor: TurboJPEGDecompressor, _ limits: DecodeLimits) throws {
        guard status != 0 else { return }
        let message = decompressor.errorMessage
        // -1 also comes back for *warnings* (TJERR_WARNING), after the whole image was
        // decoded. Most warnings ("Corrupt JPEG data: N extraneous bytes before
        // marker …") are harmless and common in camera files, so the image is used.
        // Truncation is a warning too ("Premature end of JPEG file", libjpeg's
        // JWRN_JPEG_EOF; "…premature end of data segment"), but then the rest of the
        // picture is invented gray: that is an unreadable image, not a photo.
        let fatal =
            tjGetErrorCode(decompressor.handle) != Int32(TJERR_WARNING.rawValue)
            || message.lowercased().contains("premature end")
        if fatal { throw limits.corrupt(.jpeg, message) }
    }
}

/// Owns a TurboJPEG decompressor handle (`tjInitDecompress` / `tjDestroy`).
///
/// One handle per decode: handles are not thread-safe and creating one is cheap next to
/// decoding, so there is nothing to share.
final class TurboJPEGDecompressor {
    let handle: tjhandle

    init?() {
        guard let handle = tjInitDecompress() else { return nil }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// "a descriptive error message explaining why the last command failed" (turbojpeg.h).
    var errorMessage: String {
        tjGetErrorStr2(handle).map { String(cString: $0) } ?? "unknown TurboJPEG error"
    }

    /// The error of a failed global call such as tjInitDecompress (handle NULL).
    static var globalError: String {
        tjGetErrorStr2(nil).map { String(cString: $0) } ?? "unknown TurboJPEG error"
    }
}
