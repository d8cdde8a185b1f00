// swift-tools-version:6.0
import PackageDescription

/// A system-library target for a Debian C library, found through pkg-config.
func cLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, path: "Sources/\(name)", pkgConfig: pkgConfig, providers: [.apt([apt])])
}

let package = Package(
    name: "Starline",
    products: [
        .library(name: "StarlineKit", targets: ["StarlineCore", "StarlineQR"]),
        .executable(name: "sl-qr", targets: ["sl-qr"]),
    ],
    targets: [
        cLibrary("CSQLite", pkgConfig: "sqlite3", apt: "libsqlite3-dev"),
        cLibrary("CSodium", pkgConfig: "libsodium", apt: "libsodium-dev"),
        cLibrary("CQREncode", pkgConfig: "libqrencode", apt: "libqrencode-dev"),
        // No pkg-config (it would add -lzbar): libzbar is loaded with dlopen, see ZBarLibrary.
        .systemLibrary(name: "CZBar", path: "Sources/CZBar", providers: [.apt(["libzbar-dev"])]),
        cLibrary("CPNG", pkgConfig: "libpng", apt: "libpng-dev"),
        cLibrary("CJPEG", pkgConfig: "libturbojpeg", apt: "libturbojpeg0-dev"),
        cLibrary("CMicroHTTPD", pkgConfig: "libmicrohttpd", apt: "libmicrohttpd-dev"),

        .target(name: "StarlineCore", dependencies: ["CSQLite", "CSodium"]),
        .target(name: "StarlineQR", dependencies: ["StarlineCore", "CQREncode", "CZBar", "CPNG", "CJPEG"]),
        .executableTarget(name: "sl-qr", dependencies: ["StarlineQR"]),

        .target(name: "StarlineTestSupport", dependencies: ["StarlineCore"], path: "Tests/StarlineTestSupport"),
        .testTarget(name: "StarlineCoreTests", dependencies: ["StarlineCore", "StarlineTestSupport"]),
        // CPNG/CJPEG/CQREncode: the tests write their own PNG, JPEG and ECI-tagged QR images.
        .testTarget(name: "StarlineQRTests", dependencies: ["StarlineQR", "StarlineTestSupport", "CPNG", "CJPEG", "CQREncode"]),
        .testTarget(name: "EndToEndTests", dependencies: ["StarlineCore", "StarlineTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
