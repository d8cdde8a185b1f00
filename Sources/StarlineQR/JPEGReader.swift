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
            guard tjDecompressHeader3(decompressor.handle, jpeg.baseAddress, UInt(jpeg.count),
                                      &width, &height, &subsampling, &colorspace) == 0 else {
                throw limits.corrupt(.jpeg, decompressor.errorMessage)
            }
            // A tables-only datastream, or one cut off before its frame header, "succeeds"
            // with the width and height left untouched.
            guard width > 0, height > 0 else { throw limits.corrupt(.jpeg, "no frame header (truncated or tables-only data)") }
            try limits.check(width: Int(width), height: Int(height))

            var pixels = [UInt8](repeating: 0, count: Int(width) * Int(height))
            // TJPF_GRAY takes the luminance (Y) channel straight from YCbCr JPEGs — no
            // colour conversion. TJFLAG_LIMITSCANS refuses progressive JPEGs with an absurd
            // number of scans (a known CPU-exhaustion trick) instead of grinding on them.
            let status = pixels.withUnsafeMutableBufferPointer { out in
                tjDecompress2(decompressor.handle, jpeg.baseAddress, UInt(jpeg.count), out.baseAddress,
                              width, 0 /* pitch = width */, height, Int32(TJPF_GRAY.rawValue), TJFLAG_LIMITSCANS)
            }
            if status != 0 {
                let message = decompressor.errorMessage
                // -1 also comes back for *warnings* (TJERR_WARNING), after the whole image was
                // decoded. Most warnings ("Corrupt JPEG data: N extraneous bytes before
                // marker …") are harmless and common in camera files, so the image is used.
                // Truncation is a warning too ("Premature end of JPEG file", libjpeg's
                // JWRN_JPEG_EOF; "…premature end of data segment"), but then the rest of the
                // picture is invented gray: that is an unreadable image, not a photo.
                let fatal = tjGetErrorCode(decompressor.handle) != Int32(TJERR_WARNING.rawValue)
                    || message.lowercased().contains("premature end")
                if fatal { throw limits.corrupt(.jpeg, message) }
            }
            return GrayImage(width: Int(width), height: Int(height), pixels: pixels)
        }
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
