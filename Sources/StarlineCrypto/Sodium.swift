import CSodium
import Glibc
import StarlineCore

/// libsodium set-up and small helpers. Every wrapper in this module calls `initialize()` first, so callers
/// never have to.
public enum Sodium {
    /// The result of the one `sodium_init()` call. A `static let` is initialised exactly once, thread-safely
    /// (Swift uses `swift_once`), which is the "call it once" rule without a lock of our own.
    private static let initResult: Int32 = sodium_init()

    /// Initialises libsodium. Idempotent and thread-safe.
    ///
    /// "sodium_init() returns 0 on success, -1 on failure, and 1 if the library had already been
    /// initialized." On failure (no usable randomness source) nothing in this module would be safe to run,
    /// so the process stops here rather than hand out predictable keys.
    public static func initialize() {
        if initResult < 0 {
            fatalError("sodium_init() failed: libsodium cannot be used (no randomness source?)")
        }
    }

    /// `count` bytes from the kernel CSPRNG (`randombytes_buf`).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "negative byte count")
        initialize()
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            if count > 0 { randombytes_buf(buffer.baseAddress!, count) }
            initialized = count
        }
    }

    /// Compares two byte strings in time that depends only on their length, not on their contents
    /// (`sodium_memcmp`). Different lengths compare unequal at once: lengths are not secret here.
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        initialize()
        return a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in sodium_memcmp(pa.baseAddress!, pb.baseAddress!, pa.count) == 0 }
        }
    }

    /// Zeroes `buffer` in place with `sodium_memzero`, which "tries to effectively zero len bytes ... even if
    /// optimizations are being applied to the code" — unlike a plain loop the compiler may drop as a dead
    /// store. The array keeps its count.
    ///
    /// Only this array's storage is wiped: copies that Swift made earlier (copy-on-write after a mutation
    /// elsewhere, a `String` the bytes came from) are not. Keep long-lived secrets in `SecretBytes`.
    public static func wipe(_ buffer: inout [UInt8]) {
        initialize()
        buffer.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { sodium_memzero(base, raw.count) }
        }
    }

    /// `wipe` for memory the caller allocated (sodium_memzero, which the compiler cannot drop as a dead store).
    public static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        initialize()
        if let base = buffer.baseAddress { sodium_memzero(base, buffer.count) }
    }
}

/// BLAKE2b (`crypto_generichash`): a fast keyed or unkeyed hash, e.g. to derive a device key that mixes in
/// `/etc/machine-id`. Not for passwords (use `Argon2id`).
public enum GenericHash {
    public static var minimumLength: Int { crypto_generichash_bytes_min() }
    public static var maximumLength: Int { crypto_generichash_bytes_max() }
    public static var minimumKeyLength: Int { crypto_generichash_keybytes_min() }
    public static var maximumKeyLength: Int { crypto_generichash_keybytes_max() }

    /// The `length`-byte (16…64) BLAKE2b hash of `data`, keyed when `key` (16…64 bytes) is given.
    /// Out-of-range lengths are programming errors.
    public static func hash(_ data: [UInt8], key: [UInt8]? = nil, length: Int = 32) -> [UInt8] {
        precondition((minimumLength...maximumLength).contains(length), "BLAKE2b output length must be 16...64")
        Sodium.initialize()
        return [UInt8](unsafeUninitializedCapacity: length) { out, initialized in
            hash(into: out.baseAddress!, length: length, data: data, key: key)
            initialized = length
        }
    }

    /// Keyed hash with a secret key and a secret result, kept in protected memory throughout.
    public static func deriveSecret(_ data: [UInt8], key: SecretBytes, length: Int = 32) -> SecretBytes {
        precondition((minimumLength...maximumLength).contains(length), "BLAKE2b output length must be 16...64")
        precondition((minimumKeyLength...maximumKeyLength).contains(key.count), "BLAKE2b key must be 16...64 bytes")
        Sodium.initialize()
        return SecretBytes(count: length) { (out: UnsafeMutableRawBufferPointer) in
            key.withUnsafeUInt8Pointer { k in
                withNonNullBytes(data) { d, dlen in
                    _ = crypto_generichash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), length, d, UInt64(dlen), k, key.count)
                }
            }
        }
    }

    /// Keyed hash with a secret key and a result that is not secret (a MAC, a key check, a blind search token: each
    /// is stored beside the data). The result in ordinary memory: `deriveSecret` would guard it in `SecretBytes`,
    /// an mmap, three mprotects, an mlock and their undoing for every call — most of the kernel time of adding a
    /// note, which derives one search token per word (W2).
    public static func mac(_ data: [UInt8], key: SecretBytes, length: Int = 32) -> [UInt8] {
        precondition((minimumLength...maximumLength).contains(length), "BLAKE2b output length must be 16...64")
        precondition((minimumKeyLength...maximumKeyLength).contains(key.count), "BLAKE2b key must be 16...64 bytes")
        Sodium.initialize()
        return [UInt8](unsafeUninitializedCapacity: length) { out, initialized in
            key.withUnsafeUInt8Pointer { k in
                withNonNullBytes(data) { d, dlen in
                    _ = crypto_generichash(out.baseAddress!, length, d, UInt64(dlen), k, key.count)
                }
            }
            initialized = length
        }
    }

    private static func hash(into out: UnsafeMutablePointer<UInt8>, length: Int, data: [UInt8], key: [UInt8]?) {
        withNonNullBytes(data) { d, dlen in
            if let key {
                precondition((minimumKeyLength...maximumKeyLength).contains(key.count), "BLAKE2b key must be 16...64 bytes")
                _ = key.withUnsafeBufferPointer { k in crypto_generichash(out, length, d, UInt64(dlen), k.baseAddress!, key.count) }
            } else {
                // "The key can be NULL and keylen can be 0" for an unkeyed hash.
                _ = crypto_generichash(out, length, d, UInt64(dlen), nil, 0)
            }
        }
    }
}

/// Calls `body` with a pointer to `bytes` that is never NULL, even for an empty array. libsodium accepts
/// NULL with a zero length in most places, but not all of them document it; a valid dummy byte is safer.
@inline(__always)
func withNonNullBytes<R, E: Error>(_ bytes: [UInt8], _ body: (UnsafePointer<UInt8>, Int) throws(E) -> R) throws(E) -> R {
    var dummy: UInt8 = 0
    let result: Result<R, E> = bytes.withUnsafeBufferPointer { buffer in
        if let base = buffer.baseAddress, buffer.count > 0 {
            return Result { () throws(E) -> R in try body(base, buffer.count) }
        }
        return withUnsafePointer(to: &dummy) { pointer in Result { () throws(E) -> R in try body(pointer, 0) } }
    }
    return try result.get()
}

/// `withNonNullBytes` for raw memory: libsodium is given a valid pointer even for an empty buffer.
func withNonNullBytes<R, E: Error>(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafePointer<UInt8>, Int) throws(E) -> R) throws(E) -> R {
    if let base = bytes.baseAddress, bytes.count > 0 {
        return try body(base.assumingMemoryBound(to: UInt8.self), bytes.count)
    }
    var dummy: UInt8 = 0
    let result: Result<R, E> = withUnsafePointer(to: &dummy) { pointer in Result { () throws(E) -> R in try body(pointer, 0) } }
    return try result.get()
}

/// SHA-256 (`crypto_hash_sha256`), for protocols that name it: PKCE S256 (RFC 7636).
public enum SHA256 {
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        Sodium.initialize()
        return [UInt8](unsafeUninitializedCapacity: 32) { out, initialized in
            _ = data.withUnsafeBufferPointer { crypto_hash_sha256(out.baseAddress!, $0.baseAddress, UInt64($0.count)) }
            initialized = 32
        }
    }
}
