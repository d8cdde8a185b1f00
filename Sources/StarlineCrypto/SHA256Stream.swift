#if canImport(Glibc)
import Glibc
#endif
import CSodium
import StarlineCore
import CCrypto
import StarlineLoader

/// SHA-256 of a stream of bytes: OpenSSL's libcrypto 3 (loaded with dlopen on first use) where it loads,
/// libsodium's `crypto_hash_sha256` otherwise. The digest is the same either way (FIPS 180-4).
///
/// Why libcrypto: it runs SHA-256 on the CPU's SHA extensions (SHA-NI), 256 MiB in ~0.15 s on the
/// development machine against ~0.26 s for libsodium's BLAKE2b and ~0.8 s for its portable SHA-256. An
/// attachment's digest is the slowest stage of `sl-memory attach` (W2), so this is what takes it past
/// `age -r` (`bench/RESULTS.md`).
public struct SHA256Stream: ~Copyable {
    public static let digestBytes = 32

    private enum Engine {
        /// An `EVP_MD_CTX *` of `Library`, freed (and cleansed) in `deinit`.
        case libcrypto(Library, OpaquePointer)
        case sodium(UnsafeMutablePointer<crypto_hash_sha256_state>)
    }

    private let engine: Engine
    private var finished = false

    /// `libcrypto: false` keeps to libsodium (the tests compare both engines).
    public init(libcrypto: Bool = true) {
        Sodium.initialize()
        if libcrypto, let lib = Self.library, let context = lib.contextNew() {
            if lib.digestInit(context, lib.sha256, nil) == 1 {
                engine = .libcrypto(lib, context)
                return
            }
            lib.contextFree(context)
        }
        let state = UnsafeMutablePointer<crypto_hash_sha256_state>.allocate(capacity: 1)
        _ = crypto_hash_sha256_init(state)
        engine = .sodium(state)
    }

    deinit {
        switch engine {
        case .libcrypto(let lib, let context): lib.contextFree(context)
        case .sodium(let state):
            sodium_memzero(state, MemoryLayout<crypto_hash_sha256_state>.size)
            state.deallocate()
        }
    }

    /// True when libcrypto does the work.
    public var isAccelerated: Bool {
        if case .libcrypto = engine { return true }
        return false
    }

    /// Adds `bytes` to the digest.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        precondition(!finished, "SHA256Stream.update after finalize")
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        switch engine {
        case .libcrypto(let lib, let context):
            // "EVP_DigestUpdate() hashes cnt bytes of data at d into the digest context ctx" and returns 1 for
            // success: with a context that initialized, SHA-256 cannot fail.
            let ok = lib.digestUpdate(context, base, bytes.count)
            precondition(ok == 1, "EVP_DigestUpdate failed")
        case .sodium(let state):
            _ = crypto_hash_sha256_update(state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
        }
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest of everything added. Call once.
    public mutating func finalize() -> [UInt8] {
        precondition(!finished, "SHA256Stream.finalize called twice")
        finished = true
        let engine = self.engine
        return [UInt8](unsafeUninitializedCapacity: Self.digestBytes) { out, initialized in
            switch engine {
            case .libcrypto(let lib, let context):
                var length: UInt32 = 0
                let ok = lib.digestFinal(context, out.baseAddress!, &length)
                precondition(ok == 1 && length == UInt32(Self.digestBytes), "EVP_DigestFinal_ex failed")
            case .sodium(let state):
                _ = crypto_hash_sha256_final(state, out.baseAddress!)
            }
            initialized = Self.digestBytes
        }
    }

    /// The SHA-256 of `bytes`.
    public static func hash(_ bytes: [UInt8], libcrypto: Bool = true) -> [UInt8] {
        var stream = SHA256Stream(libcrypto: libcrypto)
        stream.update(bytes)
        return stream.finalize()
    }

    /// libcrypto's digest functions and its SHA-256, fetched once per process.
    struct Library: @unchecked Sendable {
        // @unchecked: C function pointers and one fetched algorithm object, which OpenSSL documents as
        // shareable between threads once fetched (each stream has a context of its own).
        // Typed by OpenSSL's own declarations (CCrypto's shim.h: `typedef __typeof__(&EVP_…) starline_EVP_…_f`).
        let contextNew: starline_EVP_MD_CTX_new_f
        /// `void EVP_MD_CTX_free(EVP_MD_CTX *ctx)`: "cleans up digest context ctx and frees up the space
        /// allocated to it".
        let contextFree: starline_EVP_MD_CTX_free_f
        let digestInit: starline_EVP_DigestInit_ex_f
        let digestUpdate: starline_EVP_DigestUpdate_f
        let digestFinal: starline_EVP_DigestFinal_ex_f
        let fetch: starline_EVP_MD_fetch_f
        /// SHA2-256, fetched once every function is there (a stub is never called).
        var sha256: OpaquePointer? = nil
    }

    /// libcrypto 3, or nil when it cannot be loaded or lacks SHA-256 (libsodium then does the work).
    static let library: Library? = {
        let loaded = SharedLibrary.load(LibCrypto.sonames, LibCrypto.requirement) { lib in
            Library(
                contextNew: lib.function("EVP_MD_CTX_new"), contextFree: lib.function("EVP_MD_CTX_free"),
                digestInit: lib.function("EVP_DigestInit_ex"), digestUpdate: lib.function("EVP_DigestUpdate"),
                digestFinal: lib.function("EVP_DigestFinal_ex"), fetch: lib.function("EVP_MD_fetch"))
        }
        guard case .success(var library) = loaded, let sha256 = library.fetch(nil, "SHA2-256", nil) else { return nil }
        library.sha256 = sha256
        return library
    }()
}
