// swift-tools-version:6.0
import PackageDescription

/// A system-library target for a Debian C library, found through pkg-config.
func cLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, path: "Sources/\(name)", pkgConfig: pkgConfig, providers: [.apt([apt])])
}

/// A system-library target whose library is linked from its static archive (Debian's -dev packages
/// ship them): every shared object costs dynamic-loader time on each start of every tool, and
/// start-up is part of the product. The module map has no `link` line and no pkg-config is
/// consulted, so no `-lname` pulls in the shared object; the targets that use the module link
/// `staticArchive(...)` instead.
func cHeaders(_ name: String, apt: String) -> Target {
    .systemLibrary(name: name, path: "Sources/\(name)", providers: [.apt([apt])])
}

/// `-l:libname.a`: the linker searches its library path for exactly this file.
func staticArchive(_ name: String) -> LinkerSetting { .linkedLibrary(":lib\(name).a") }

/// Linker flags of the dynamically linked tools: libstdc++ (the Swift runtime's C++ dependency) from its
/// static archive, through the linker script in `linker/` — with lld, because gold cannot follow that script.
/// Start-up of `sl-qr --version`: 4.3 → 2.8 ms median (bench/RESULTS.md).
let staticLibstdcxx: LinkerSetting = .unsafeFlags(["-use-ld=lld", "-L", Context.packageDirectory + "/linker"])

let package = Package(
    name: "Starline",
    products: [
        .library(name: "StarlineKit", targets: ["StarlineCore", "StarlineQR", "StarlineWorkspace", "StarlineDevServer", "StarlinePlatform"]),
        .executable(name: "sl-qr", targets: ["sl-qr"]),
        .executable(name: "sl-tasks", targets: ["sl-tasks"]),
        .executable(name: "sl-devserver", targets: ["sl-devserver"]),
        .executable(name: "sl-login", targets: ["sl-login"]),
        .executable(name: "sl-restore", targets: ["sl-restore"]),
    ],
    targets: [
        cHeaders("CSQLite", apt: "libsqlite3-dev"),
        cHeaders("CSodium", apt: "libsodium-dev"),
        cLibrary("CQREncode", pkgConfig: "libqrencode", apt: "libqrencode-dev"),
        // No pkg-config (it would add -lzbar): libzbar is loaded with dlopen, see ZBarLibrary.
        .systemLibrary(name: "CZBar", path: "Sources/CZBar", providers: [.apt(["libzbar-dev"])]),
        cHeaders("CPNG", apt: "libpng-dev"),
        cHeaders("CJPEG", apt: "libturbojpeg0-dev"),
        cLibrary("CMicroHTTPD", pkgConfig: "libmicrohttpd", apt: "libmicrohttpd-dev"),
        // No pkg-config (it would add -lcurl): libcurl is loaded with dlopen on the first request, see CurlLibrary.
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        .target(name: "StarlineCore", dependencies: ["CSQLite", "CSodium"],
                linkerSettings: [staticArchive("sqlite3"), staticArchive("sodium"), .linkedLibrary("m")]),
        .target(name: "StarlineQR", dependencies: ["StarlineCore", "CQREncode", "CZBar", "CPNG", "CJPEG"],
                linkerSettings: [staticArchive("png16"), staticArchive("turbojpeg"), staticArchive("z")]),
        .executableTarget(name: "sl-qr", dependencies: ["StarlineQR"], linkerSettings: [staticLibstdcxx]),
        // The workbench (W1): tasks, sites and recents in workspace.json. No networking, no Foundation.
        .target(name: "StarlineWorkspace", dependencies: ["StarlineCore"]),
        // Fully static (no dynamic loader at all: ~1 ms instead of ~4 ms to start). Only for tools that
        // never dlopen: a static glibc cannot safely load shared libraries (sl-qr loads libzbar).
        .executableTarget(name: "sl-tasks", dependencies: ["StarlineWorkspace"],
                          linkerSettings: [.unsafeFlags(["-static-executable"])]),
        .target(name: "StarlineDevServer", dependencies: ["StarlineCore", "CMicroHTTPD"]),
        .executableTarget(name: "sl-devserver", dependencies: ["StarlineDevServer"], linkerSettings: [staticLibstdcxx]),
        .target(name: "StarlinePlatform", dependencies: ["StarlineCore", "StarlineQR", "CCurl"]),
        .executableTarget(name: "sl-login", dependencies: ["StarlinePlatform"], linkerSettings: [staticLibstdcxx]),
        .executableTarget(name: "sl-restore", dependencies: ["StarlinePlatform"], linkerSettings: [staticLibstdcxx]),

        .target(name: "StarlineTestSupport", dependencies: ["StarlineCore"], path: "Tests/StarlineTestSupport"),
        .testTarget(name: "StarlineCoreTests", dependencies: ["StarlineCore", "StarlineTestSupport"]),
        // CPNG/CJPEG/CQREncode: the tests write their own PNG, JPEG and ECI-tagged QR images.
        .testTarget(name: "StarlineQRTests", dependencies: ["StarlineQR", "StarlineTestSupport", "CPNG", "CJPEG", "CQREncode"]),
        .testTarget(name: "StarlinePlatformTests", dependencies: ["StarlinePlatform", "StarlineTestSupport"]),
        .testTarget(name: "StarlineWorkspaceTests", dependencies: ["StarlineWorkspace", "StarlineTestSupport"]),
        .testTarget(name: "EndToEndTests", dependencies: ["StarlineCore", "StarlineWorkspace", "StarlineTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
