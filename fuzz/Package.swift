// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for Starline's parsers of untrusted input. A package of its own, so the main
// package, `make test` and CI never see the sanitizer flags: `make fuzz` (scripts/fuzz) builds it with
//   swift build --package-path fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing
// (one `-sanitize=` list: a second `-sanitize=` replaces the first, and coverage is lost without `fuzzer`).
// `-enable-testing` lets a target `@testable import` an internal parser instead of widening Sources.
//
// The main package is a path dependency; its identity is the name of the checkout's directory.
let parent = Context.packageDirectory.split(separator: "/").dropLast().last.map(String.init) ?? "Starline"

/// One executable per fuzz target: `Sources/fuzz-NAME/main.swift` calls `Fuzz.run`.
let names = ["json", "baseurl", "qr-payload", "workspace", "taskwarrior", "netscape", "image", "vault", "age", "http", "dbus"]

let package = Package(
    name: "StarlineFuzz",
    dependencies: [.package(path: "..")],
    targets: [
        // LLVMFuzzerRunDriver's declaration (libFuzzer's own main is not used: SwiftPM names the entry point).
        .target(name: "CFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzer", .product(name: "StarlineKit", package: parent)]),
    ] + names.map {
        .executableTarget(name: "fuzz-\($0)", dependencies: ["FuzzSupport", .product(name: "StarlineKit", package: parent)])
    },
    swiftLanguageModes: [.v6]
)
