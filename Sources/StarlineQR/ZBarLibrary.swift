#if canImport(Glibc)
import Glibc
#endif
import CZBar
import StarlineCore
import StarlineLoader

/// libzbar, loaded with dlopen the first time an image is scanned.
///
/// Linking libzbar makes every start of sl-qr pay for its dependencies (D-Bus, X11, V4L,
/// systemd, libgcrypt): about 3 ms of dynamic loading, more than the rest of start-up, even
/// for `--help` or `encode`. So CZBar only supplies the header's types and constants, and the
/// functions are looked up here.
package struct ZBarLibrary: @unchecked Sendable {
    // @unchecked: immutable C function pointers, safe to share.
    // Typed by zbar.h itself (CZBar's shim.h: `typedef __typeof__(&zbar_…) starline_zbar_…_f`).
    let imageScannerCreate: starline_zbar_image_scanner_create_f
    let imageScannerDestroy: starline_zbar_image_scanner_destroy_f
    let imageScannerSetConfig: starline_zbar_image_scanner_set_config_f
    let imageScannerEnableCache: starline_zbar_image_scanner_enable_cache_f
    let scanImage: starline_zbar_scan_image_f
    let imageCreate: starline_zbar_image_create_f
    let imageDestroy: starline_zbar_image_destroy_f
    let imageSetFormat: starline_zbar_image_set_format_f
    let imageSetSize: starline_zbar_image_set_size_f
    let imageSetData: starline_zbar_image_set_data_f
    let imageFreeData: starline_zbar_image_free_data_f
    let imageFirstSymbol: starline_zbar_image_first_symbol_f
    let symbolNext: starline_zbar_symbol_next_f
    let symbolGetType: starline_zbar_symbol_get_type_f
    let symbolGetData: starline_zbar_symbol_get_data_f
    let symbolGetDataLength: starline_zbar_symbol_get_data_length_f
    let symbolGetLocSize: starline_zbar_symbol_get_loc_size_f
    let symbolGetLocX: starline_zbar_symbol_get_loc_x_f
    let symbolGetLocY: starline_zbar_symbol_get_loc_y_f
    let symbolGetOrientation: starline_zbar_symbol_get_orientation_f

    /// The library, or why it could not be loaded. Loaded once per process (Swift globals are lazy and thread-safe).
    package static let shared: Result<ZBarLibrary, StarlineError> = load()

    static func load() -> Result<ZBarLibrary, StarlineError> {
        // The soname of Debian's libzbar0; the unversioned name exists only with libzbar-dev.
        SharedLibrary.load(["libzbar.so.0", "libzbar.so"], .init("libzbar", package: "libzbar0", remedy: "zbar 0.23 or newer is needed")) {
            library in
            ZBarLibrary(
                imageScannerCreate: library.function("zbar_image_scanner_create"),
                imageScannerDestroy: library.function("zbar_image_scanner_destroy"),
                imageScannerSetConfig: library.function("zbar_image_scanner_set_config"),
                imageScannerEnableCache: library.function("zbar_image_scanner_enable_cache"),
                scanImage: library.function("zbar_scan_image"),
                imageCreate: library.function("zbar_image_create"),
                imageDestroy: library.function("zbar_image_destroy"),
                imageSetFormat: library.function("zbar_image_set_format"),
                imageSetSize: library.function("zbar_image_set_size"),
                imageSetData: library.function("zbar_image_set_data"),
                imageFreeData: library.function("zbar_image_free_data"),
                imageFirstSymbol: library.function("zbar_image_first_symbol"),
                symbolNext: library.function("zbar_symbol_next"),
                symbolGetType: library.function("zbar_symbol_get_type"),
                symbolGetData: library.function("zbar_symbol_get_data"),
                symbolGetDataLength: library.function("zbar_symbol_get_data_length"),
                symbolGetLocSize: library.function("zbar_symbol_get_loc_size"),
                symbolGetLocX: library.function("zbar_symbol_get_loc_x"),
                symbolGetLocY: library.function("zbar_symbol_get_loc_y"),
                symbolGetOrientation: library.function("zbar_symbol_get_orientation"))
        }
    }
}
