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
    typealias Scanner = OpaquePointer
    typealias Image = OpaquePointer
    typealias Symbol = OpaquePointer

    let imageScannerCreate: @convention(c) () -> Scanner?
    let imageScannerDestroy: @convention(c) (Scanner?) -> Void
    let imageScannerSetConfig: @convention(c) (Scanner?, zbar_symbol_type_t, zbar_config_t, Int32) -> Int32
    let imageScannerEnableCache: @convention(c) (Scanner?, Int32) -> Void
    let scanImage: @convention(c) (Scanner?, Image?) -> Int32
    let imageCreate: @convention(c) () -> Image?
    let imageDestroy: @convention(c) (Image?) -> Void
    let imageSetFormat: @convention(c) (Image?, UInt) -> Void
    let imageSetSize: @convention(c) (Image?, UInt32, UInt32) -> Void
    let imageSetData: @convention(c) (Image?, UnsafeRawPointer?, UInt, (@convention(c) (Image?) -> Void)?) -> Void
    let imageFreeData: @convention(c) (Image?) -> Void
    let imageFirstSymbol: @convention(c) (Image?) -> Symbol?
    let symbolNext: @convention(c) (Symbol?) -> Symbol?
    let symbolGetType: @convention(c) (Symbol?) -> zbar_symbol_type_t
    let symbolGetData: @convention(c) (Symbol?) -> UnsafePointer<CChar>?
    let symbolGetDataLength: @convention(c) (Symbol?) -> UInt32
    let symbolGetLocSize: @convention(c) (Symbol?) -> UInt32
    let symbolGetLocX: @convention(c) (Symbol?, UInt32) -> Int32
    let symbolGetLocY: @convention(c) (Symbol?, UInt32) -> Int32
    let symbolGetOrientation: @convention(c) (Symbol?) -> zbar_orientation_t

    /// The library, or why it could not be loaded. Loaded once per process (Swift globals are lazy and thread-safe).
    package static let shared: Result<ZBarLibrary, StarlineError> = load()

    static func load() -> Result<ZBarLibrary, StarlineError> {
        // The soname of Debian's libzbar0; the unversioned name exists only with libzbar-dev.
        var library: SharedLibrary
        switch SharedLibrary.open(["libzbar.so.0", "libzbar.so"]) {
        case .success(let opened): library = opened
        case .failure(let error):
            return .failure(StarlineError(.internalError, "cannot load libzbar (install the libzbar0 package): \(error.reason)"))
        }
        func symbol<T>(_ name: String, as type: T.Type) -> T { library.function(name, as: type) }
        let zbar = ZBarLibrary(
            imageScannerCreate: symbol("zbar_image_scanner_create", as: (@convention(c) () -> Scanner?).self),
            imageScannerDestroy: symbol("zbar_image_scanner_destroy", as: (@convention(c) (Scanner?) -> Void).self),
            imageScannerSetConfig: symbol(
                "zbar_image_scanner_set_config", as: (@convention(c) (Scanner?, zbar_symbol_type_t, zbar_config_t, Int32) -> Int32).self),
            imageScannerEnableCache: symbol("zbar_image_scanner_enable_cache", as: (@convention(c) (Scanner?, Int32) -> Void).self),
            scanImage: symbol("zbar_scan_image", as: (@convention(c) (Scanner?, Image?) -> Int32).self),
            imageCreate: symbol("zbar_image_create", as: (@convention(c) () -> Image?).self),
            imageDestroy: symbol("zbar_image_destroy", as: (@convention(c) (Image?) -> Void).self),
            imageSetFormat: symbol("zbar_image_set_format", as: (@convention(c) (Image?, UInt) -> Void).self),
            imageSetSize: symbol("zbar_image_set_size", as: (@convention(c) (Image?, UInt32, UInt32) -> Void).self),
            imageSetData: symbol(
                "zbar_image_set_data",
                as: (@convention(c) (Image?, UnsafeRawPointer?, UInt, (@convention(c) (Image?) -> Void)?) -> Void).self),
            imageFreeData: symbol("zbar_image_free_data", as: (@convention(c) (Image?) -> Void).self),
            imageFirstSymbol: symbol("zbar_image_first_symbol", as: (@convention(c) (Image?) -> Symbol?).self),
            symbolNext: symbol("zbar_symbol_next", as: (@convention(c) (Symbol?) -> Symbol?).self),
            symbolGetType: symbol("zbar_symbol_get_type", as: (@convention(c) (Symbol?) -> zbar_symbol_type_t).self),
            symbolGetData: symbol("zbar_symbol_get_data", as: (@convention(c) (Symbol?) -> UnsafePointer<CChar>?).self),
            symbolGetDataLength: symbol("zbar_symbol_get_data_length", as: (@convention(c) (Symbol?) -> UInt32).self),
            symbolGetLocSize: symbol("zbar_symbol_get_loc_size", as: (@convention(c) (Symbol?) -> UInt32).self),
            symbolGetLocX: symbol("zbar_symbol_get_loc_x", as: (@convention(c) (Symbol?, UInt32) -> Int32).self),
            symbolGetLocY: symbol("zbar_symbol_get_loc_y", as: (@convention(c) (Symbol?, UInt32) -> Int32).self),
            symbolGetOrientation: symbol("zbar_symbol_get_orientation", as: (@convention(c) (Symbol?) -> zbar_orientation_t).self))
        guard library.missing.isEmpty else {
            return .failure(
                StarlineError(.internalError, "libzbar lacks \(library.missing.joined(separator: ", ")): zbar 0.23 or newer is needed"))
        }
        return .success(zbar)
    }
}
