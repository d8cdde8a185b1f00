import CSodium
import StarlineCore

/// XChaCha20-Poly1305 (IETF) authenticated encryption, `crypto_aead_xchacha20poly1305_ietf_*`.
///
/// The 192-bit nonce is large enough to pick at random for every message ("the nonce can be chosen at
/// random without risk of collisions" — libsodium docs), so `seal` does exactly that and returns
/// `nonce ‖ ciphertext ‖ tag`; `open` takes that same layout.
public enum XChaCha20Poly1305 {
    public static var keyBytes: Int { crypto_aead_xchacha20poly1305_ietf_keybytes() }
    public static var nonceBytes: Int { crypto_aead_xchacha20poly1305_ietf_npubbytes() }
    /// Authentication tag length: the ciphertext is this much longer than the plaintext.
    public static var tagBytes: Int { crypto_aead_xchacha20poly1305_ietf_abytes() }
    /// Total overhead of `seal`: nonce plus tag.
    public static var overhead: Int { nonceBytes + tagBytes }

    /// A new random key.
    public static func generateKey() -> SecretBytes { SecretBytes(count: keyBytes) }

    /// Encrypts and authenticates `plaintext`, and authenticates `additionalData` (which is not stored in
    /// the output: the reader must supply the same bytes). Returns `nonce ‖ ciphertext ‖ tag`.
    public static func seal(_ plaintext: [UInt8], additionalData: [UInt8] = [], key: SecretBytes) -> [UInt8] {
        withNonNullBytes(plaintext) { m, mlen in seal(m, mlen, additionalData: additionalData, key: key) }
    }

    /// `seal` for a secret plaintext (e.g. wrapping one key with another) without an unprotected copy.
    public static func seal(_ plaintext: SecretBytes, additionalData: [UInt8] = [], key: SecretBytes) -> [UInt8] {
        plaintext.withUnsafeUInt8Pointer { m in seal(m, plaintext.count, additionalData: additionalData, key: key) }
    }

    private static func seal(_ m: UnsafePointer<UInt8>, _ mlen: Int, additionalData: [UInt8], key: SecretBytes) -> [UInt8] {
        precondition(key.count == keyBytes, "XChaCha20-Poly1305 key must be \(keyBytes) bytes, got \(key.count)")
        Sodium.initialize()
        let nonceCount = nonceBytes
        let total = nonceCount + mlen + tagBytes
        return [UInt8](unsafeUninitializedCapacity: total) { out, initialized in
            let nonce = out.baseAddress!
            randombytes_buf(nonce, nonceCount)
            var clen: UInt64 = 0
            let rc = withNonNullBytes(additionalData) { ad, adlen in
                key.withUnsafeUInt8Pointer { k in
                    // nsec is unused by this construction and "should always be NULL".
                    crypto_aead_xchacha20poly1305_ietf_encrypt(
                        nonce + nonceCount, &clen, m, UInt64(mlen), ad, UInt64(adlen), nil, nonce, k)
                }
            }
            // Encryption only fails for messages over messagebytes_max (about 2^64 bytes).
            precondition(rc == 0 && Int(clen) == total - nonceCount, "crypto_aead_xchacha20poly1305_ietf_encrypt failed")
            initialized = total
        }
    }

    /// Verifies and decrypts the output of `seal`. Throws `AUTHENTICATION_FAILED` when the data was altered,
    /// truncated, or sealed with another key or other additional data; nothing is decrypted in that case.
    public static func open(_ sealed: [UInt8], additionalData: [UInt8] = [], key: SecretBytes) throws(StarlineError) -> [UInt8] {
        let plaintextCount = try checkedPlaintextCount(sealed, key: key)
        return try [UInt8](unsafeUninitializedCapacity: plaintextCount) { (out, initialized) throws(StarlineError) in
            try open(sealed, additionalData: additionalData, key: key, into: out.baseAddress)
            initialized = plaintextCount
        }
    }

    /// `open` into protected memory, for plaintexts that are themselves secrets (wrapped keys).
    public static func openSecret(_ sealed: [UInt8], additionalData: [UInt8] = [], key: SecretBytes) throws(StarlineError) -> SecretBytes {
        let plaintextCount = try checkedPlaintextCount(sealed, key: key)
        return try SecretBytes(count: plaintextCount) { (out: UnsafeMutableRawBufferPointer) throws(StarlineError) in
            try open(
                sealed, additionalData: additionalData, key: key,
                into: out.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
    }

    private static func checkedPlaintextCount(_ sealed: [UInt8], key: SecretBytes) throws(StarlineError) -> Int {
        precondition(key.count == keyBytes, "XChaCha20-Poly1305 key must be \(keyBytes) bytes, got \(key.count)")
        guard sealed.count >= overhead else {
            throw StarlineError(.authenticationFailed, "encrypted data is too short (\(sealed.count) bytes)")
        }
        return sealed.count - overhead
    }

    private static func open(
        _ sealed: [UInt8], additionalData: [UInt8], key: SecretBytes,
        into out: UnsafeMutablePointer<UInt8>?
    ) throws(StarlineError) {
        Sodium.initialize()
        let nonceCount = nonceBytes
        var scratch: UInt8 = 0
        let rc = sealed.withUnsafeBufferPointer { input in
            withNonNullBytes(additionalData) { ad, adlen in
                key.withUnsafeUInt8Pointer { k in
                    // An empty plaintext still needs a valid output pointer.
                    withUnsafeMutablePointer(to: &scratch) { fallback in
                        var mlen: UInt64 = 0
                        // The tag is verified before anything is decrypted: "the function returns -1 if the
                        // verification fails", and `m` is then left unwritten.
                        return crypto_aead_xchacha20poly1305_ietf_decrypt(
                            out ?? fallback, &mlen, nil,
                            input.baseAddress! + nonceCount, UInt64(input.count - nonceCount),
                            ad, UInt64(adlen), input.baseAddress!, k)
                    }
                }
            }
        }
        if rc != 0 {
            throw StarlineError(.authenticationFailed, "decryption failed: wrong key, or the data was altered")
        }
    }
}
