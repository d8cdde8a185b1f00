import StarlineLoader

/// OpenSSL's libcrypto 3 as SHA256Stream and SecretStreamAccelerator load it, each on first use and each binding
/// only what it calls (the second dlopen hands back the same library).
enum LibCrypto {
    static let sonames = ["libcrypto.so.3"]
    static let requirement = SharedLibrary.Requirement("libcrypto", package: "libssl3")
}
