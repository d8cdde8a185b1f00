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
/// Start-up of `sl-qr --version`: 4.3 → 2.8 ms median (bench/RESULTS.md). `-z pack-relative-relocs` (DT_RELR,
/// glibc ≥ 2.36): the ~20,000 relative relocations of a PIE Swift binary as a 3.8 KB bitmap instead of 495 KB of
/// RELA entries the loader reads and walks at every start (sl-qr; the .deb's libc6 dependency follows).
let staticLibstdcxx: LinkerSetting = .unsafeFlags([
    "-use-ld=lld", "-L", Context.packageDirectory + "/linker", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"
])

/// lld's --symbol-ordering-file for a tool's release build: the functions its common commands run, listed by
/// `scripts/symbol-order` (callgrind) in `linker/TOOL.order`, are placed together, so a start touches fewer
/// 64 KiB windows of text — each a page fault (`sl-qr encode`: 42 → 28, perf, 2026-12-04). A name lld does not
/// find (the list gone stale) is skipped without a warning.
func symbolOrder(_ tool: String) -> LinkerSetting {
    .unsafeFlags(
        ["-Xlinker", "--symbol-ordering-file=" + Context.packageDirectory + "/linker/\(tool).order", "-Xlinker", "--no-warn-symbol-ordering"],
        .when(configuration: .release))
}

/// The tools, declared once: each is an executable product `sl-NAME` whose thin entry point
/// (`Sources/sl-NAME/main.swift`) calls its front-end target, which holds the command specs and run functions.
/// The Makefile and the generated-docs test read this list (`swift package dump-package`), so a new tool
/// is added here and nowhere else.
struct Tool {
    var name: String
    var frontEnd: String
    var linkerSettings: [LinkerSetting]
}

let tools: [Tool] = [
    Tool(name: "sl-qr", frontEnd: "QRCommands", linkerSettings: [staticLibstdcxx, symbolOrder("sl-qr")]),
    // Fully static (no dynamic loader at all: ~1 ms instead of ~4 ms to start). Only for tools that never
    // dlopen: a static glibc cannot safely load shared libraries (sl-qr loads libzbar). lld as for the others.
    Tool(name: "sl-tasks", frontEnd: "TasksCommands", linkerSettings: [.unsafeFlags(["-static-executable", "-use-ld=lld"])]),
    Tool(name: "sl-devserver", frontEnd: "DevServerCommands", linkerSettings: [staticLibstdcxx]),
    Tool(name: "sl-login", frontEnd: "LoginCommands", linkerSettings: [staticLibstdcxx, symbolOrder("sl-login")]),
    Tool(name: "sl-restore", frontEnd: "RestoreCommands", linkerSettings: [staticLibstdcxx, symbolOrder("sl-restore")]),
    Tool(name: "sl-sessions", frontEnd: "SessionsCommands", linkerSettings: [staticLibstdcxx]),
    // Dynamically linked: unlock --keyring loads libsecret with dlopen (a static glibc cannot).
    Tool(name: "sl-memory", frontEnd: "MemoryCommands", linkerSettings: [staticLibstdcxx]),
    Tool(name: "sl-chat", frontEnd: "ChatCommands", linkerSettings: [staticLibstdcxx, symbolOrder("sl-chat")]),
]

let package = Package(
    name: "Starline",
    products: [
        // What other programs may reuse. Not the dev server (fixture passwords, libmicrohttpd, the OpenAPI
        // text) and no tool front-end.
        .library(name: "StarlineKit", targets: ["StarlineCore", "StarlineSQLite", "StarlineCrypto", "StarlineLoader",
                                                "StarlineQR", "StarlineWorkspace", "StarlineMemory", "StarlineHTTP", "StarlineBulk", "StarlinePlatform", "StarlineKeyring", "StarlineChat"]),
    ] + tools.map { .executable(name: $0.name, targets: [$0.name]) },
    targets: [
        cHeaders("CSQLite", apt: "libsqlite3-dev"),
        cHeaders("CSodium", apt: "libsodium-dev"),
        cLibrary("CQREncode", pkgConfig: "libqrencode", apt: "libqrencode-dev"),
        // No pkg-config (it would add -lzbar): libzbar is loaded with dlopen, see ZBarLibrary.
        .systemLibrary(name: "CZBar", path: "Sources/CZBar", providers: [.apt(["libzbar-dev"])]),
        // Header only too: libheif is dlopened by StarlineQR's HEIFLibrary when a HEIC or AVIF image is read.
        .systemLibrary(name: "CHeif", path: "Sources/CHeif", providers: [.apt(["libheif-dev"])]),
        cHeaders("CPNG", apt: "libpng-dev"),
        cHeaders("CJPEG", apt: "libturbojpeg0-dev"),
        cLibrary("CMicroHTTPD", pkgConfig: "libmicrohttpd", apt: "libmicrohttpd-dev"),
        // No pkg-config (it would add -lcurl): libcurl is loaded with dlopen on the first request, see CurlLibrary.
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // The CLI kit, output, errors, files, locks, clock: no C library beyond libc, so every tool can link it.
        // The async-signal-safe half of the signal handling (Interrupts.swift): C, part of every tool.
        .target(name: "CSignals"),
        // STARLINE_TEST_HOOKS: the test hooks (TestHooks.swift) exist in debug builds only, never in a release.
        .target(name: "StarlineCore", dependencies: ["CSignals"],
                swiftSettings: [.define("STARLINE_TEST_HOOKS", .when(configuration: .debug))], linkerSettings: [.linkedLibrary("m")]),
        // Process hardening and socket credentials for sl-memory's unlock agent: prctl is variadic, struct ucred
        // and accept4 are GNU extensions; C, so only the tools that link StarlineMemory carry it.
        .target(name: "CProcess"),
        // Split from Core so that a tool links SQLite, libsodium or the dlopen code only when it uses them
        // (every object file of a library target is linked into each tool that depends on it).
        .target(name: "StarlineSQLite", dependencies: ["StarlineCore", "CSQLite"], linkerSettings: [staticArchive("sqlite3")]),
        // CCrypto: OpenSSL 3's declarations only (libcrypto is dlopened for its SHA-256 and ChaCha20/Poly1305 code).
        .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", providers: [.apt(["libssl-dev"])]),
        .target(
            name: "StarlineCrypto", dependencies: ["StarlineCore", "StarlineLoader", "CSodium", "CCrypto"],
            linkerSettings: [staticArchive("sodium")]),
        .target(name: "StarlineLoader", dependencies: ["StarlineCore"]),
        // The Secret Service keyring: libsecret and GLib loaded with dlopen (no link-time dependency, so a tool
        // that links this pays for GLib only when it opens the keyring). No C module: the few functions are
        // declared in Swift.
        .target(name: "StarlineKeyring", dependencies: ["StarlineCore", "StarlineLoader", "StarlineCrypto"]),

        // Domain libraries: domain logic only, no command front-ends.
        // CTIFFShim: libtiff's variadic TIFFGetField and va_list error handlers (libtiff itself is dlopened).
        .target(name: "CTIFFShim"),
        .target(name: "StarlineQR", dependencies: ["StarlineCore", "StarlineLoader", "CQREncode", "CZBar", "CHeif", "CPNG", "CJPEG", "CTIFFShim"],
                linkerSettings: [staticArchive("png16"), staticArchive("turbojpeg"), staticArchive("z")]),
        // The workbench (W1): tasks, sites and recents in workspace.json. No networking, no Foundation.
        .target(name: "StarlineWorkspace", dependencies: ["StarlineCore"]),
        // The encrypted memory vault (W2): notes, attachments, index, key policy. Local only: no networking.
        // CProcess: prctl, SO_PEERCRED, accept4 and POSIX_SPAWN_SETSID for the unlock agent (Swift cannot call them).
        .target(name: "StarlineMemory", dependencies: ["StarlineCore", "StarlineSQLite", "StarlineCrypto", "CProcess"]),
        .target(name: "StarlineDevServer", dependencies: ["StarlineCore", "StarlineSQLite", "StarlineCrypto", "CMicroHTTPD"]),
        // The platform in three parts (docs/architecture.md): HTTP (exchange, transport, curl, TLS trust, retries,
        // reply limits, the contract's error mapping), bulk execution (run, engine, rate gate, outage watch,
        // journal and audit, item index, shards), and the session client (StarlinePlatform: client, store,
        // custody, platform API, loopback listener). StarlineChat needs the first two only.
        .target(name: "StarlineHTTP", dependencies: ["StarlineCore", "StarlineLoader", "CCurl"]),
        .target(name: "StarlineBulk", dependencies: ["StarlineCore", "StarlineSQLite", "StarlineCrypto", "StarlineHTTP"]),
        .target(
            name: "StarlinePlatform",
            dependencies: ["StarlineCore", "StarlineSQLite", "StarlineCrypto", "StarlineLoader", "StarlineKeyring", "StarlineHTTP", "StarlineBulk"]),
        // The chat client (W4–W8): the chat routes, the cache and the durable outbox in chat.db, sync and tail.
        .target(name: "StarlineChat", dependencies: ["StarlineCore", "StarlineSQLite", "StarlineCrypto", "StarlineHTTP", "StarlineBulk"]),

        // Tool front-ends: the command specs, typed options and run functions of each tool.
        .target(name: "QRCommands", dependencies: ["StarlineQR"]),
        .target(name: "TasksCommands", dependencies: ["StarlineWorkspace"]),
        .target(name: "DevServerCommands", dependencies: ["StarlineDevServer"]),
        // What sl-login, sl-restore (and sl-sessions) share: options, the client built from them, the async runner.
        .target(name: "PlatformCommands", dependencies: ["StarlinePlatform"]),
        // The device-code QR is drawn here, so StarlinePlatform does not depend on StarlineQR.
        .target(name: "LoginCommands", dependencies: ["PlatformCommands", "StarlineQR"]),
        .target(name: "RestoreCommands", dependencies: ["PlatformCommands"]),
        .target(name: "SessionsCommands", dependencies: ["PlatformCommands"]),
        // Local only: the vault, and the keyring for unlock --keyring — never the networking stack.
        .target(name: "MemoryCommands", dependencies: ["StarlineMemory", "StarlineKeyring"]),
        .target(name: "ChatCommands", dependencies: ["PlatformCommands", "StarlineChat"]),

        // StarlinePlatform: the scripted transport (ScriptedTransport) that in-process tool runs are given.
        // CTestExecutor: the test binary's global executor, wider than one thread per core (most tests wait on a
        // process); linked into the test binary only.
        .target(name: "CTestExecutor", path: "Tests/CTestExecutor"),
        .target(name: "StarlineTestSupport", dependencies: ["StarlineCore", "StarlineCrypto", "StarlinePlatform", "CProcess", "CTestExecutor"], path: "Tests/StarlineTestSupport"),
        .testTarget(name: "StarlineCoreTests", dependencies: ["StarlineCore", "StarlineLoader", "StarlineSQLite", "StarlineCrypto", "StarlineTestSupport"]),
        // CPNG/CJPEG/CQREncode: the tests write their own PNG, JPEG and ECI-tagged QR images.
        .testTarget(name: "StarlineQRTests", dependencies: ["StarlineQR", "QRCommands", "StarlineTestSupport", "CPNG", "CJPEG", "CQREncode"],
                    exclude: ["Photos"]),
        .testTarget(name: "StarlinePlatformTests", dependencies: ["StarlineHTTP", "StarlineBulk", "StarlineMemory", "StarlinePlatform", "PlatformCommands", "LoginCommands", "RestoreCommands", "SessionsCommands", "StarlineTestSupport"]),
        .testTarget(name: "StarlineWorkspaceTests", dependencies: ["StarlineWorkspace", "TasksCommands", "StarlineTestSupport"]),
        .testTarget(name: "StarlineKeyringTests", dependencies: ["StarlineKeyring", "StarlineTestSupport"]),
        .testTarget(name: "StarlineMemoryTests", dependencies: ["StarlineMemory", "StarlineSQLite", "StarlineCrypto", "StarlineTestSupport", "CProcess"]),
        // The age format (StarlineCrypto's AgeEncryptor/AgeDecryptor) against the C2SP test vectors and the age
        // binary. The vectors are files, not resources: the tests find them by #filePath. CZlib inflates the
        // vectors the testkit ships zlib-compressed.
        .systemLibrary(name: "CZlib", path: "Tests/CZlib", providers: [.apt(["zlib1g-dev"])]),
        .testTarget(name: "StarlineCryptoTests", dependencies: ["StarlineCrypto", "StarlineTestSupport", "CZlib"],
                    exclude: ["age-testkit", "agepty.py"], linkerSettings: [staticArchive("z")]),
        // The front-ends for their specs only (OptionCoverageTests walks every command tree); the tools run as
        // the built executables.
        .testTarget(name: "EndToEndTests", dependencies: ["StarlineCore", "StarlineSQLite", "StarlineWorkspace", "StarlineHTTP", "StarlineBulk", "StarlineTestSupport",
                                                          "QRCommands", "TasksCommands", "DevServerCommands", "LoginCommands",
                                                          "RestoreCommands", "SessionsCommands", "MemoryCommands", "ChatCommands"]),
    ] + tools.map { .executableTarget(name: $0.name, dependencies: [.target(name: $0.frontEnd)], linkerSettings: $0.linkerSettings) },
    swiftLanguageModes: [.v6]
)

/// The debug build (`make test`, `make generated`, single-test runs; not `make tsan`, see the Makefile) is optimised: `-O` after SwiftPM's
/// `-Onone`, keeping `DEBUG`, the test hooks (STARLINE_TEST_HOOKS), `-enable-testing` and `-g`. The suite spends its
/// time running the tools, the dev server and the QR and crypto code: unoptimised Swift took 296 s of user CPU over a
/// full run, optimised 175 s (README, Development). `STARLINE_ONONE=1` builds as SwiftPM would, for a debugger that
/// should see every variable; it is a different set of flags, so the first build after switching recompiles all.
if Context.environment["STARLINE_ONONE"] != "1" {
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-O"], .when(configuration: .debug))]
    }
}
