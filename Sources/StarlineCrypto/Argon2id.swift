import CSodium
import Glibc
import StarlineCore

/// Passphrase-based key derivation with Argon2id v1.3 (`crypto_pwhash` with `crypto_pwhash_ALG_ARGON2ID13`).
///
/// Deliberately slow and memory-hard: call it off the main actor. The salt, limits and output length must
/// be stored with whatever the key protects, since the same inputs are needed to derive the key again.
public enum Argon2id {
    /// The cost parameters. Stored next to the data so later changes to the defaults do not lock anyone out.
    public struct Limits: Sendable, Equatable, Hashable {
        /// Number of passes over memory (`opslimit`).
        public var opsLimit: UInt64
        /// Memory in bytes (`memlimit`).
        public var memLimit: Int

        public init(opsLimit: UInt64, memLimit: Int) {
            self.opsLimit = opsLimit
            self.memLimit = memLimit
        }

        /// libsodium's "interactive" level: 2 passes, 64 MiB.
        public static var interactive: Limits {
            Limits(opsLimit: UInt64(crypto_pwhash_argon2id_opslimit_interactive()), memLimit: crypto_pwhash_argon2id_memlimit_interactive())
        }
        /// libsodium's "moderate" level: 3 passes, 256 MiB.
        public static var moderate: Limits {
            Limits(opsLimit: UInt64(crypto_pwhash_argon2id_opslimit_moderate()), memLimit: crypto_pwhash_argon2id_memlimit_moderate())
        }
        /// libsodium's "sensitive" level: 4 passes, 1 GiB (several seconds).
        public static var sensitive: Limits {
            Limits(opsLimit: UInt64(crypto_pwhash_argon2id_opslimit_sensitive()), memLimit: crypto_pwhash_argon2id_memlimit_sensitive())
        }
        /// The smallest accepted cost (1 pass, 8 KiB). Only for tests: it offers no protection.
        public static var minimum: Limits {
            Limits(opsLimit: UInt64(crypto_pwhash_argon2id_opslimit_min()), memLimit: crypto_pwhash_argon2id_memlimit_min())
        }
    }

    /// Required salt length (16 bytes). Use `Sodium.randomBytes(Argon2id.saltBytes)` for a new salt.
    public static var saltBytes: Int { crypto_pwhash_argon2id_saltbytes() }
    public static var minimumKeyLength: Int { crypto_pwhash_argon2id_bytes_min() }

    public static func deriveKey(passphrase: [UInt8], salt: [UInt8], limits: Limits, length: Int = 32) throws(StarlineError) -> SecretBytes
    {
        try deriveKey(passphrase: passphrase, salt: salt, opsLimit: limits.opsLimit, memLimit: limits.memLimit, length: length)
    }

    /// Derives a `length`-byte key from `passphrase` and `salt`.
    ///
    /// Throws `DATA_ERROR` for parameters outside libsodium's bounds (a wrong salt length or limits read from
    /// a damaged file) and `INTERNAL` when the memory for the hash cannot be allocated. libsodium's bounds are
    /// no protection against a hostile file (2^32 - 1 passes, 4 TiB): a caller reading limits from storage
    /// caps them itself, before calling this (the memory vault: `VaultHeader.maximumLimits`).
    public static func deriveKey(passphrase: [UInt8], salt: [UInt8], opsLimit: UInt64, memLimit: Int, length: Int = 32)
        throws(StarlineError) -> SecretBytes
    {
        try withNonNullBytes(passphrase) { (p, plen) throws(StarlineError) in
            try derive(p, plen, salt: salt, opsLimit: opsLimit, memLimit: memLimit, length: length)
        }
    }

    /// `deriveKey` for a passphrase already held in protected memory.
    public static func deriveKey(passphrase: SecretBytes, salt: [UInt8], opsLimit: UInt64, memLimit: Int, length: Int = 32)
        throws(StarlineError) -> SecretBytes
    {
        try passphrase.withUnsafeUInt8Pointer { (p) throws(StarlineError) in
            try derive(p, passphrase.count, salt: salt, opsLimit: opsLimit, memLimit: memLimit, length: length)
        }
    }

    private static func derive(
        _ passphrase: UnsafePointer<UInt8>, _ passphraseCount: Int, salt: [UInt8],
        opsLimit: UInt64, memLimit: Int, length: Int
    ) throws(StarlineError) -> SecretBytes {
        Sodium.initialize()
        guard salt.count == saltBytes else {
            throw StarlineError(
                .data, "key derivation salt must be \(saltBytes) bytes, got \(salt.count)",
                details: .object([("saltBytes", .int(salt.count))]))
        }
        let opsRange = UInt64(crypto_pwhash_argon2id_opslimit_min())...UInt64(crypto_pwhash_argon2id_opslimit_max())
        let memRange = crypto_pwhash_argon2id_memlimit_min()...crypto_pwhash_argon2id_memlimit_max()
        let lengthRange = crypto_pwhash_argon2id_bytes_min()...Swift.min(crypto_pwhash_argon2id_bytes_max(), 1 << 20)
        guard opsRange.contains(opsLimit), memLimit >= 0, memRange.contains(memLimit), length >= 0, lengthRange.contains(length) else {
            throw StarlineError(
                .data, "key derivation parameters out of range (opsLimit \(opsLimit), memLimit \(memLimit), length \(length))")
        }
        return try SecretBytes(count: length) { (out: UnsafeMutableRawBufferPointer) throws(StarlineError) in
            let rc = salt.withUnsafeBufferPointer { s in
                passphrase.withMemoryRebound(to: CChar.self, capacity: Swift.max(passphraseCount, 1)) { pw in
                    crypto_pwhash(
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(length),
                        pw, UInt64(passphraseCount), s.baseAddress!,
                        opsLimit, memLimit, crypto_pwhash_argon2id_alg_argon2id13())
                }
            }
            if rc != 0 {
                let savedErrno = errno
                // "returns -1 if the computation didn't complete, usually because the operating system
                // refused to allocate the amount of requested memory."
                throw StarlineError(
                    savedErrno == ENOMEM ? .internalError : .data,
                    savedErrno == ENOMEM
                        ? "not enough memory for key derivation (\(memLimit / 1024) KiB)"
                        : "key derivation failed (errno \(savedErrno))")
            }
        }
    }
}
