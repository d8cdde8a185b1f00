import StarlineCore
import StarlineCrypto

/// The vault header (`docs/formats.md`, "Memory vault"): what is needed to turn a passphrase into the data
/// key, and nothing else. One row of `vault.db` (`vault_header`), rewritten only by `create`,
/// `changePassphrase` and `rekey`, always in the same transaction as the manifest that records its checksum.
///
/// The last 32 bytes are an unkeyed BLAKE2b-256 checksum of everything before them, checked before any key
/// is derived: a damaged header is VAULT_CORRUPT (exit 12), so a flipped bit never reads as a wrong
/// passphrase (exit 13) — which is all a failed unwrap could otherwise say. Being unkeyed, the checksum
/// says nothing against someone who edits the header and recomputes it: the Argon2id limits are capped
/// here (`maximumLimits`), before any key is derived, and the header is compared with the one the rollback
/// pin saw (`RollbackPin.headerProblem`, `failedUnlockProblem`) and, after an unlock, with the checksum the
/// sealed manifest records (`MemoryVault.refresh`).
struct VaultHeader: Equatable {
    static let magic = Array("SLMEMVLT".utf8)
    static let formatVersion: UInt16 = 1
    static let checksumBytes = 32
    /// Argon2id v1.3, the only key derivation so far.
    static let kdfArgon2id: UInt8 = 1
    /// The largest header `decode` reads: a real one is under 400 bytes (with a pending rekey).
    static let maximumEncodedBytes = 1024

    /// The most a header may make Argon2id spend: 8 passes over 1 GiB (about 7 s on a current x86 core).
    /// `sl-memory` writes at most 3 passes over 256 MiB (`--kdf moderate`); the library also accepts
    /// libsodium's "sensitive" level (4 passes, 1 GiB). A header asking for more was not written by
    /// Starline — libsodium itself would run 2^32 - 1 passes over 4 TiB — and is VAULT_CORRUPT before
    /// anything is derived. Creating or re-wrapping a vault with more is refused (USAGE).
    static let maximumLimits = Argon2id.Limits(opsLimit: 8, memLimit: 1 << 30)
    /// libsodium's least (1 pass, 8 KiB): anything below does not derive at all.
    static var minimumLimits: Argon2id.Limits { .minimum }

    static let wrappedKeyBytes = XChaCha20Poly1305.overhead + KeyWrapping.dataKeyBytes
    static let keyCheckBytes = 32

    /// 16 random bytes: part of every additional data and of the pin, so nothing moves between vaults.
    var vaultID: [UInt8]
    var limits: Argon2id.Limits
    var salt: [UInt8]
    /// Which data key is current: 1 at creation, +1 with each finished rekey.
    var epoch: UInt32
    /// The data key sealed under the passphrase key (`KeyWrapping`).
    var wrappedKey: [UInt8]
    /// Keyed BLAKE2b of the data key (`KeyWrapping.keyCheck`): how `open(dataKey:)` recognises the key.
    var keyCheck: [UInt8]
    /// A rekey that has started and not finished.
    var pending: PendingRekey?

    struct PendingRekey: Equatable {
        var epoch: UInt32
        /// The new data key under the passphrase key.
        var wrappedKey: [UInt8]
        /// The new data key under the current data key, so the unlock agent (which holds only the data key)
        /// can read records already moved to the new key.
        var wrappedUnderCurrent: [UInt8]
        var keyCheck: [UInt8]
    }

    var vaultIDText: String { Hex.encode(vaultID) }

    /// The serialised header with its checksum.
    func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.raw(Self.magic)
        w.u16(Self.formatVersion)
        w.raw(vaultID)
        w.u8(Self.kdfArgon2id)
        w.u64(limits.opsLimit)
        w.u64(UInt64(limits.memLimit))
        w.data(salt)
        w.u32(epoch)
        w.data(wrappedKey)
        w.data(keyCheck)
        if let pending {
            w.u8(1)
            w.u32(pending.epoch)
            w.data(pending.wrappedKey)
            w.data(pending.wrappedUnderCurrent)
            w.data(pending.keyCheck)
        } else {
            w.u8(0)
        }
        let body = w.bytes
        return body + GenericHash.hash(body, length: Self.checksumBytes)
    }

    /// The checksum of `encoded()`: what the manifest records, so an older header put back (an old passphrase
    /// made to work again) is noticed even though its own checksum is right.
    var checksum: [UInt8] { Array(encoded().suffix(Self.checksumBytes)) }

    /// The first of the limits outside what a header may ask for (`minimumLimits`...`maximumLimits`): the
    /// field's name as `docs/formats.md` spells it, its value and the bound it crosses; nil when both are in.
    static func limitViolation(opsLimit ops: UInt64, memLimit mem: UInt64) -> (field: String, value: UInt64, bound: UInt64, above: Bool)? {
        let (low, high) = (minimumLimits, maximumLimits)
        if ops > high.opsLimit { return ("opslimit", ops, high.opsLimit, true) }
        if ops < low.opsLimit { return ("opslimit", ops, low.opsLimit, false) }
        if mem > UInt64(high.memLimit) { return ("memlimit", mem, UInt64(high.memLimit), true) }
        if mem < UInt64(low.memLimit) { return ("memlimit", mem, UInt64(low.memLimit), false) }
        return nil
    }

    static func limitViolation(_ limits: Argon2id.Limits) -> (field: String, value: UInt64, bound: UInt64, above: Bool)? {
        guard limits.memLimit >= 0 else { return ("memlimit", 0, UInt64(minimumLimits.memLimit), false) }
        return limitViolation(opsLimit: limits.opsLimit, memLimit: UInt64(limits.memLimit))
    }

    /// Stored limits out of bounds: VAULT_CORRUPT naming the field and the bound (nil when they are in).
    static func limitsError(opsLimit: UInt64, memLimit: UInt64, path: String) -> StarlineError? {
        guard let v = limitViolation(opsLimit: opsLimit, memLimit: memLimit) else { return nil }
        let reason =
            "its Argon2id \(v.field) \(v.value) is \(v.above ? "above the maximum" : "below the minimum") \(v.bound); Starline never writes such a header, so it was damaged or edited"
        return StarlineError(
            .vaultCorrupt, "the memory vault header in \(path) is corrupt: \(reason)",
            details: .object([
                ("part", .string("header")), ("path", .string(path)), ("reason", .string(reason)),
                ("field", .string(v.field)), ("value", .string(String(v.value))),
                (v.above ? "maximum" : "minimum", .int(Int64(clamping: v.bound)))
            ]))
    }

    /// Parses and checks a stored header. Damage of any kind — including limits beyond `maximumLimits`,
    /// checked here so that nothing is derived with them — is VAULT_CORRUPT naming the header; a header of
    /// a newer format is UNSUPPORTED_VERSION.
    static func decode(_ bytes: [UInt8], path: String) throws(StarlineError) -> VaultHeader {
        guard bytes.count > magic.count + 2 + checksumBytes else {
            throw VaultErrors.corruptHeader(path, "it is truncated (\(bytes.count) bytes)")
        }
        guard bytes.count <= maximumEncodedBytes else {
            throw VaultErrors.corruptHeader(path, "it is \(bytes.count) bytes, more than the \(maximumEncodedBytes) a header can have")
        }
        let body = Array(bytes.dropLast(checksumBytes))
        guard Sodium.constantTimeEquals(GenericHash.hash(body, length: checksumBytes), Array(bytes.suffix(checksumBytes))) else {
            throw VaultErrors.corruptHeader(path, "its checksum does not match (damaged or truncated)")
        }
        var r = ByteReader(body)
        do {
            guard try r.raw(magic.count) == magic else { throw VaultErrors.corruptHeader(path, "it is not a memory vault header") }
            let version = try r.u16()
            guard version <= formatVersion else {
                throw StarlineError(
                    .unsupportedVersion,
                    "the memory vault \(path) has format version \(version), newer than this Starline (version \(formatVersion)): upgrade to open it",
                    details: .object([("path", .string(path)), ("version", .int(Int64(version)))]))
            }
            let vaultID = try r.raw(16)
            guard try r.u8() == kdfArgon2id else { throw VaultErrors.corruptHeader(path, "unknown key derivation") }
            let ops = try r.u64()
            let mem = try r.u64()
            if let error = limitsError(opsLimit: ops, memLimit: mem, path: path) { throw error }
            let limits = Argon2id.Limits(opsLimit: ops, memLimit: Int(mem))
            let salt = try r.data(limit: 64)
            let epoch = try r.u32()
            let wrapped = try r.data(limit: 256)
            let check = try r.data(limit: 64)
            guard salt.count == Argon2id.saltBytes, wrapped.count == wrappedKeyBytes, check.count == keyCheckBytes else {
                throw VaultErrors.corruptHeader(path, "its salt, wrapped key or key check has the wrong length")
            }
            // Epoch 0 is never written, and the last one could have no successor (`rekey` adds 1).
            guard epoch >= 1, epoch < UInt32.max else { throw VaultErrors.corruptHeader(path, "its key epoch \(epoch) is out of range") }
            var pending: PendingRekey?
            switch try r.u8() {
            case 0: break
            case 1:
                let p = PendingRekey(
                    epoch: try r.u32(), wrappedKey: try r.data(limit: 256),
                    wrappedUnderCurrent: try r.data(limit: 256), keyCheck: try r.data(limit: 64))
                guard p.epoch == epoch + 1, p.wrappedKey.count == wrappedKeyBytes, p.wrappedUnderCurrent.count == wrappedKeyBytes,
                    p.keyCheck.count == keyCheckBytes
                else {
                    throw VaultErrors.corruptHeader(path, "its unfinished rekey's fields are out of range")
                }
                pending = p
            default: throw ByteReader.Malformed()
            }
            try r.expectEnd()
            return VaultHeader(
                vaultID: vaultID, limits: limits, salt: salt, epoch: epoch, wrappedKey: wrapped, keyCheck: check, pending: pending)
        } catch is ByteReader.Malformed {
            throw VaultErrors.corruptHeader(path, "its fields do not parse")
        } catch let error as StarlineError {
            throw error
        } catch {
            throw VaultErrors.corruptHeader(path, "\(error)")
        }
    }
}
