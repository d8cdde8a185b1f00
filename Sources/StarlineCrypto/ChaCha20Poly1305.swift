import CSodium
import StarlineCore

/// ChaCha20-Poly1305 as in RFC 8439 (formerly RFC 7539), `crypto_aead_chacha20poly1305_ietf_*`: a 96-bit
/// nonce chosen by the caller.
///
/// Unlike `XChaCha20Poly1305`, the nonce is too short to pick at random for many messages under one key:
/// it is for protocols that define their nonces, such as age (a zero nonce under a single-use wrap key,
/// and a chunk counter under a per-file payload key). Reusing a (key, nonce) pair is catastrophic.
public enum ChaCha20Poly1305 {
    public static var keyBytes: Int { crypto_aead_chacha20poly1305_ietf_keybytes() }
    public static var nonceBytes: Int { crypto_aead_chacha20poly1305_ietf_npubbytes() }
    /// Authentication tag length: the ciphertext is this much longer than the plaintext.
    public static var tagBytes: Int { crypto_aead_chacha20poly1305_ietf_abytes() }

    /// Encrypts and authenticates `plaintext`; returns `ciphertext ‖ tag`.
    public static func seal(_ plaintext: [UInt8], nonce: [UInt8], key: SecretBytes) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: plaintext.count + tagBytes) { out, initialized in
            plaintext.withUnsafeBytes { m in
                seal(m, nonce: nonce, key: key, into: UnsafeMutableRawBufferPointer(out))
            }
            initialized = plaintext.count + tagBytes
        }
    }

    /// `seal` of a secret plaintext (a file key) without an unprotected copy of it.
    public static func seal(_ plaintext: SecretBytes, nonce: [UInt8], key: SecretBytes) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: plaintext.count + tagBytes) { out, initialized in
            plaintext.withUnsafeBytes { m in
                seal(m, nonce: nonce, key: key, into: UnsafeMutableRawBufferPointer(out))
            }
            initialized = plaintext.count + tagBytes
        }
    }

    /// Encrypts `plaintext` into `out`, which must hold exactly `plaintext.count + tagBytes` bytes (it may
    /// start at the same address as `plaintext`: libsodium encrypts in place).
    static func seal(_ plaintext: UnsafeRawBufferPointer, nonce: [UInt8], key: SecretBytes, into out: UnsafeMutableRawBufferPointer) {
        precondition(key.count == keyBytes, "ChaCha20-Poly1305 key must be \(keyBytes) bytes, got \(key.count)")
        precondition(nonce.count == nonceBytes, "ChaCha20-Poly1305 nonce must be \(nonceBytes) bytes, got \(nonce.count)")
        precondition(out.count == plaintext.count + tagBytes, "ChaCha20-Poly1305 output buffer has the wrong size")
        Sodium.initialize()
        var dummy: UInt8 = 0
        var clen: UInt64 = 0
        let rc = nonce.withUnsafeBufferPointer { n in
            key.withUnsafeUInt8Pointer { k in
                withUnsafeMutablePointer(to: &dummy) { fallback in
                    // nsec "is not used by this particular construction and should always be NULL"; no
                    // additional data in age.
                    crypto_aead_chacha20poly1305_ietf_encrypt(
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), &clen,
                        plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(fallback),
                        UInt64(plaintext.count), nil, 0, nil, n.baseAddress!, k)
                }
            }
        }
        // Fails only for messages over messagebytes_max (about 256 GiB).
        precondition(rc == 0 && Int(clen) == out.count, "crypto_aead_chacha20poly1305_ietf_encrypt failed")
    }

    /// Verifies and decrypts `ciphertext ‖ tag` into protected memory. Throws `AUTHENTICATION_FAILED` for a
    /// wrong key or nonce or altered data; nothing is decrypted then.
    public static func openSecret(_ sealed: [UInt8], nonce: [UInt8], key: SecretBytes) throws(StarlineError) -> SecretBytes {
        guard sealed.count >= tagBytes else {
            throw StarlineError(.authenticationFailed, "encrypted data is too short (\(sealed.count) bytes)")
        }
        return try SecretBytes(count: sealed.count - tagBytes) { (out: UnsafeMutableRawBufferPointer) throws(StarlineError) in
            let ok = sealed.withUnsafeBytes { c in open(c, nonce: nonce, key: key, into: out) }
            if !ok { throw StarlineError(.authenticationFailed, "decryption failed: wrong key, or the data was altered") }
        }
    }

    /// Verifies and decrypts `ciphertext ‖ tag`. Throws `AUTHENTICATION_FAILED` as `openSecret` does.
    public static func open(_ sealed: [UInt8], nonce: [UInt8], key: SecretBytes) throws(StarlineError) -> [UInt8] {
        guard sealed.count >= tagBytes else {
            throw StarlineError(.authenticationFailed, "encrypted data is too short (\(sealed.count) bytes)")
        }
        var ok = false
        let plaintext = [UInt8](unsafeUninitializedCapacity: sealed.count - tagBytes) { out, initialized in
            ok = sealed.withUnsafeBytes { c in open(c, nonce: nonce, key: key, into: UnsafeMutableRawBufferPointer(out)) }
            initialized = ok ? sealed.count - tagBytes : 0
        }
        if !ok { throw StarlineError(.authenticationFailed, "decryption failed: wrong key, or the data was altered") }
        return plaintext
    }

    /// Decrypts `sealed` (at least `tagBytes` long) into `out` (exactly `sealed.count - tagBytes` bytes); false
    /// when the tag does not verify: "the function returns -1 if the verification fails", and then `m` is
    /// left untouched (libsodium verifies before decrypting).
    static func open(_ sealed: UnsafeRawBufferPointer, nonce: [UInt8], key: SecretBytes, into out: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(key.count == keyBytes, "ChaCha20-Poly1305 key must be \(keyBytes) bytes, got \(key.count)")
        precondition(nonce.count == nonceBytes, "ChaCha20-Poly1305 nonce must be \(nonceBytes) bytes, got \(nonce.count)")
        precondition(sealed.count >= tagBytes && out.count == sealed.count - tagBytes, "ChaCha20-Poly1305 buffer sizes")
        Sodium.initialize()
        var dummy: UInt8 = 0
        var mlen: UInt64 = 0
        let rc = nonce.withUnsafeBufferPointer { n in
            key.withUnsafeUInt8Pointer { k in
                withUnsafeMutablePointer(to: &dummy) { fallback in
                    crypto_aead_chacha20poly1305_ietf_decrypt(
                        out.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? fallback, &mlen, nil,
                        sealed.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(sealed.count),
                        nil, 0, n.baseAddress!, k)
                }
            }
        }
        return rc == 0
    }
}
