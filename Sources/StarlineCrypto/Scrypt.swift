import CSodium
import Glibc
import StarlineCore

/// scrypt (RFC 7914) through libsodium's low-level `crypto_pwhash_scryptsalsa208sha256_ll`, which takes the
/// RFC's own parameters (N, r, p) rather than libsodium's opslimit/memlimit: protocols such as age specify
/// them directly ("scrypt(N = work factor, r = 8, p = 1, dkLen = 32, ...)").
///
/// Memory is 128·r·N bytes: with r = 8, 2^18 is 256 MiB and 2^22 is 4 GiB. Deliberately slow: call it
/// off the main actor.
public enum Scrypt {
    /// The largest log2(N) this wrapper accepts at all. RFC 7914 requires N < 2^(128·r/8); the real limit is
    /// memory, which callers bound with a much smaller work-factor limit of their own.
    public static let maximumLogN = 40

    /// Derives `length` bytes from `passphrase` and `salt` with N = 2^`logN`.
    ///
    /// Throws `DATA_ERROR` for parameters out of range, `INTERNAL` when the memory cannot be allocated.
    public static func deriveKey(
        passphrase: SecretBytes, salt: [UInt8], logN: Int, r: UInt32 = 8, p: UInt32 = 1,
        length: Int = 32
    ) throws(StarlineError) -> SecretBytes {
        guard (1...maximumLogN).contains(logN), r > 0, p > 0, UInt64(r) * UInt64(p) < 1 << 30, (1...(1 << 20)).contains(length) else {
            throw StarlineError(.data, "scrypt parameters out of range (log2 N \(logN), r \(r), p \(p), length \(length))")
        }
        Sodium.initialize()
        return try SecretBytes(count: length) { (out: UnsafeMutableRawBufferPointer) throws(StarlineError) in
            let rc = passphrase.withUnsafeUInt8Pointer { pw in
                withNonNullBytes(salt) { s, slen in
                    crypto_pwhash_scryptsalsa208sha256_ll(
                        pw, passphrase.count, s, slen, UInt64(1) << UInt64(logN), r, p,
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), length)
                }
            }
            if rc != 0 {
                // "returns 0 on success, -1 if the computation didn't complete, usually because the
                // operating system refused to allocate the amount of requested memory" (errno is set).
                let savedErrno = errno
                // 128·r·N bytes (in floating point: r may be large enough to overflow an integer product).
                let mebibytes = Int(128 * Double(r) * Double(UInt64(1) << UInt64(logN)) / 1_048_576)
                throw StarlineError(
                    savedErrno == ENOMEM ? .internalError : .data,
                    savedErrno == ENOMEM
                        ? "not enough memory for scrypt (log2 N \(logN): \(mebibytes) MiB)"
                        : "scrypt failed (log2 N \(logN), errno \(savedErrno))")
            }
        }
    }
}
