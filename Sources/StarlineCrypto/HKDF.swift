import StarlineCore

/// HKDF with SHA-256 (RFC 5869), built on `HMACSHA256`: extract-then-expand.
///
/// The output is a key, so it is returned in protected memory; the input keying material is read from
/// protected memory too. Salt and info are public by definition ("salt ... a non-secret random value").
public enum HKDF {
    /// SHA-256's output length, `HashLen` in the RFC.
    public static let hashLength = 32
    /// "L: length of output keying material in octets (<= 255*HashLen)".
    public static let maximumLength = 255 * hashLength

    /// `HKDF-Expand(HKDF-Extract(salt, ikm), info, length)`.
    public static func deriveKey(ikm: SecretBytes, salt: [UInt8], info: [UInt8], length: Int = 32) -> SecretBytes {
        precondition((0...maximumLength).contains(length), "HKDF output length must be 0...\(maximumLength)")
        return expand(prk: extract(salt: salt, ikm: ikm), info: info, length: length)
    }

    /// "HKDF-Extract(salt, IKM) -> PRK ... PRK = HMAC-Hash(salt, IKM)", where salt is "optional salt value
    /// (a non-secret random value); if not provided, it is set to a string of HashLen zeros."
    public static func extract(salt: [UInt8], ikm: SecretBytes) -> SecretBytes {
        var mac = HMACSHA256(publicKey: salt.isEmpty ? [UInt8](repeating: 0, count: hashLength) : salt)
        ikm.withUnsafeBytes { mac.update($0) }
        return mac.finalizeSecret()
    }

    /// "HKDF-Expand(PRK, info, L) -> OKM":
    ///
    ///     N = ceil(L/HashLen)
    ///     T = T(1) | T(2) | T(3) | ... | T(N)
    ///     OKM = first L octets of T
    ///     T(0) = empty string (zero length)
    ///     T(i) = HMAC-Hash(PRK, T(i-1) | info | i)   (i as a single octet)
    public static func expand(prk: SecretBytes, info: [UInt8], length: Int) -> SecretBytes {
        precondition((0...maximumLength).contains(length), "HKDF output length must be 0...\(maximumLength)")
        var blocks: [SecretBytes] = []
        var counter: UInt8 = 1
        var produced = 0
        while produced < length {
            var mac = HMACSHA256(key: prk)
            if let previous = blocks.last { previous.withUnsafeBytes { mac.update($0) } }
            mac.update(info)
            mac.update([counter])
            blocks.append(mac.finalizeSecret())
            produced += hashLength
            counter &+= 1
        }
        return SecretBytes(count: length) { (out: UnsafeMutableRawBufferPointer) in
            var offset = 0
            for block in blocks where offset < length {
                let n = Swift.min(hashLength, length - offset)
                block.withUnsafeBytes { b in
                    UnsafeMutableRawBufferPointer(rebasing: out[offset..<(offset + n)]).copyMemory(
                        from: UnsafeRawBufferPointer(rebasing: b[0..<n]))
                }
                offset += n
            }
        }
    }
}
