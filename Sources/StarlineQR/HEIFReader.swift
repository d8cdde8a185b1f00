import CHeif
import StarlineCore
import StarlineLoader

/// HEIC and AVIF (what phones save photos as: HEVC or AV1 images in the HEIF container) through libheif, loaded
/// with dlopen the first time such a file is read (`HEIFLibrary`): the primary image, with the container's
/// rotation and mirroring applied (HEIF's `irot`/`imir`, which take the place of an Exif orientation), alpha
/// composed over white as PNG's is. The dimensions are checked against the pixel limit before anything is decoded.
enum HEIFReader {
    static func decode(_ bytes: [UInt8], format: ImageLoader.Format, limits: DecodeLimits) throws -> GrayImage {
        let heif = try limits.library(HEIFLibrary.shared, for: format)
        return try bytes.withUnsafeBytes { data in
            // "without copy": the bytes must outlive the context, so it lives and dies inside this closure.
            guard let context = heif.contextAlloc() else { throw limits.corrupt(format, "libheif could not allocate a context") }
            defer { heif.contextFree(context) }
            // libheif's own bound on each side, before it allocates anything for a tile grid; ours on the pixel count follows.
            heif.contextSetMaximumImageSizeLimit(context, Int32(clamping: limits.maxPixels))
            try check(heif.contextReadFromMemoryWithoutCopy(context, data.baseAddress, data.count, nil), format, limits)
            var handle: OpaquePointer?
            try check(heif.contextGetPrimaryImageHandle(context, &handle), format, limits)
            guard let handle else { throw limits.corrupt(format, "no primary image") }
            defer { heif.imageHandleRelease(handle) }
            // The size after the container's transformations, as the image will be decoded.
            let width = Int(heif.imageHandleGetWidth(handle)), height = Int(heif.imageHandleGetHeight(handle))
            guard width > 0, height > 0 else { throw limits.corrupt(format, "zero width or height") }
            try limits.check(width: width, height: height)
            var image: OpaquePointer?
            // No decoding options: libheif's defaults, which apply the transformations.
            try check(heif.decodeImage(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, nil), format, limits)
            guard let image else { throw limits.corrupt(format, "libheif decoded no image") }
            defer { heif.imageRelease(image) }
            var stride: Int32 = 0
            guard let plane = heif.imageGetPlaneReadonly(image, heif_channel_interleaved, &stride), Int(stride) >= width * 4 else {
                throw limits.corrupt(format, "libheif gave no RGBA plane")
            }
            return GrayImage(
                width: width, height: height, pixels: Luminance.overWhite(rgba: plane, width: width, height: height, rowBytes: Int(stride)))
        }
    }

    /// Throws `corrupt` with libheif's message unless `error` is heif_error_Ok.
    private static func check(_ error: heif_error, _ format: ImageLoader.Format, _ limits: DecodeLimits) throws {
        guard error.code != heif_error_Ok else { return }
        // "textual error message (is always defined, you do not have to check for NULL)" (heif.h).
        let message = error.message.map { String(cString: $0) } ?? "libheif error \(error.code.rawValue)"
        throw limits.corrupt(format, "\(message) (libheif error \(error.code.rawValue).\(error.subcode.rawValue))")
    }
}

/// libheif (Debian's libheif1, with libde265 for HEVC and libdav1d/libaom for AV1), loaded with dlopen the first
/// time a HEIC or AVIF image is read, so no other start of sl-qr pays for its codecs and an install without it
/// still reads every other format.
struct HEIFLibrary: @unchecked Sendable {
    // @unchecked: immutable C function pointers, safe to share.
    // Typed by heif.h itself (CHeif's shim.h: `typedef __typeof__(&heif_…) starline_heif_…_f`).
    let contextAlloc: starline_heif_context_alloc_f
    let contextFree: starline_heif_context_free_f
    let contextSetMaximumImageSizeLimit: starline_heif_context_set_maximum_image_size_limit_f
    let contextReadFromMemoryWithoutCopy: starline_heif_context_read_from_memory_without_copy_f
    let contextGetPrimaryImageHandle: starline_heif_context_get_primary_image_handle_f
    let imageHandleGetWidth: starline_heif_image_handle_get_width_f
    let imageHandleGetHeight: starline_heif_image_handle_get_height_f
    let imageHandleRelease: starline_heif_image_handle_release_f
    let decodeImage: starline_heif_decode_image_f
    let imageGetPlaneReadonly: starline_heif_image_get_plane_readonly_f
    let imageRelease: starline_heif_image_release_f
    /// libheif's version, e.g. "1.15.1".
    private(set) var version: String

    static let shared: Result<HEIFLibrary, StarlineError> = load()

    static func load() -> Result<HEIFLibrary, StarlineError> {
        let loaded = SharedLibrary.load(["libheif.so.1"], .init("libheif", package: "libheif1")) {
            library -> (HEIFLibrary, starline_heif_init_f, starline_heif_get_version_f) in
            let initialize: starline_heif_init_f = library.function("heif_init")
            let getVersion: starline_heif_get_version_f = library.function("heif_get_version")
            return (
                HEIFLibrary(
                    contextAlloc: library.function("heif_context_alloc"), contextFree: library.function("heif_context_free"),
                    contextSetMaximumImageSizeLimit: library.function("heif_context_set_maximum_image_size_limit"),
                    contextReadFromMemoryWithoutCopy: library.function("heif_context_read_from_memory_without_copy"),
                    contextGetPrimaryImageHandle: library.function("heif_context_get_primary_image_handle"),
                    imageHandleGetWidth: library.function("heif_image_handle_get_width"),
                    imageHandleGetHeight: library.function("heif_image_handle_get_height"),
                    imageHandleRelease: library.function("heif_image_handle_release"),
                    decodeImage: library.function("heif_decode_image"),
                    imageGetPlaneReadonly: library.function("heif_image_get_plane_readonly"),
                    imageRelease: library.function("heif_image_release"), version: "?"),
                initialize, getVersion
            )
        }
        return loaded.map { heif, initialize, getVersion in
            // "You should call heif_init() when you start using libheif" (heif.h): once, for the process; the
            // functions are called only once every one of them is there.
            _ = initialize(nil)
            var heif = heif
            heif.version = getVersion().map { String(cString: $0) } ?? "?"
            return heif
        }
    }
}
