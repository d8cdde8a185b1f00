import CSodium
import StarlineCore

/// HMAC-SHA-256 (RFC 2104) through libsodium's `crypto_auth_hmacsha256_*`, with keys of any length:
/// "crypto_auth_hmacsha256_init() ... key can be of any length" (libsodium docs, HMAC-SHA-2).
///
/// One-shot `authenticate` for whole messages, and the incremental `HMACSHA256` state for input that
/// arrives in pieces. The state holds the key-derived pads, so it lives in `sodium_malloc` memory and is
/// zeroed when freed. Noncopyable for the reason `SecretStreamEncryptor` is: one state, one owner.
public struct HMACSHA256: ~Copyable, @unchecked Sendable {
    // @unchecked: the state is uniquely owned (noncopyable) and `update`/`finalize` need exclusive access, so
    // moving it to another thread moves the only handle to it.
    /// The tag length: 32 bytes.
    public static var tagBytes: Int { crypto_auth_hmacsha256_bytes() }

    private let state: UnsafeMutablePointer<crypto_auth_hmacsha256_state>
    private var finished = false

    /// Starts a MAC under `key` (any length; keys longer than the SHA-256 block are hashed first, as RFC 2104 says).
    public init(key: SecretBytes) {
        state = Self.allocateState()
        key.withUnsafeUInt8Pointer { k in
            // Returns 0; it has no failure case.
            _ = crypto_auth_hmacsha256_init(state, k, key.count)
        }
    }

    /// For keys that are not secrets (an HKDF salt).
    init(publicKey key: [UInt8]) {
        state = Self.allocateState()
        withNonNullBytes(key) { k, klen in _ = crypto_auth_hmacsha256_init(state, k, klen) }
    }

    deinit {
        sodium_free(state)
    }

    private static func allocateState() -> UnsafeMutablePointer<crypto_auth_hmacsha256_state> {
        Sodium.initialize()
        // "sodium_malloc() can be used to allocate any libsodium data structure"; the state is two SHA-256
        // states (64-bit words), and sodium_malloc returns memory aligned for them unless the size is odd.
        guard let raw = sodium_malloc(crypto_auth_hmacsha256_statebytes()) else {
            fatalError("sodium_malloc failed: out of memory")
        }
        return raw.bindMemory(to: crypto_auth_hmacsha256_state.self, capacity: 1)
    }

    /// Adds `bytes` to the message.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        precondition(!finished, "HMACSHA256.update after finalize")
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = crypto_auth_hmacsha256_update(state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The 32-byte tag. The state cannot be used afterwards.
    public mutating func finalize() -> [UInt8] {
        precondition(!finished, "HMACSHA256.finalize called twice")
        finished = true
        let state = self.state
        return [UInt8](unsafeUninitializedCapacity: Self.tagBytes) { out, initialized in
            _ = crypto_auth_hmacsha256_final(state, out.baseAddress!)
            initialized = Self.tagBytes
        }
    }

    /// The tag of a secret result (an HKDF block) in protected memory.
    mutating func finalizeSecret() -> SecretBytes {
        precondition(!finished, "HMACSHA256.finalize called twice")
        finished = true
        let state = self.state
        return SecretBytes(count: Self.tagBytes) { (out: UnsafeMutableRawBufferPointer) in
            _ = crypto_auth_hmacsha256_final(state, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
    }

    /// The HMAC-SHA-256 tag of `message` under `key`.
    public static func authenticate(_ message: [UInt8], key: SecretBytes) -> [UInt8] {
        var mac = HMACSHA256(key: key)
        mac.update(message)
        return mac.finalize()
    }

    /// Whether `tag` is the tag of `message` under `key`, compared in constant time.
    public static func verify(_ tag: [UInt8], for message: [UInt8], key: SecretBytes) -> Bool {
        Sodium.constantTimeEquals(authenticate(message, key: key), tag)
    }
}
