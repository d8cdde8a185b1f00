import StarlineCore
import StarlineCrypto

/// The vault header (`docs/formats.md`, "Memory vault"): what is needed to turn a passphrase into the data
/// key, and nothing else. One row of `vault.db` (`vault_header`), rewritten only by `create`,
/// `changePassphrase` and `rekey`, always in the same transaction as the manifest that records its checksum.
///
/// The last 32 bytes are an unkeyed BLAKE2b-256 checksum of everything before them, checked before any key
/// is derived: a damaged header is VAULT_CORRUPT (exit 12), so a flipped bit never reads as a wrong
/// passphrase (exit 13) — which is all a failed unwrap could otherwise say.
struct VaultHeader: Equatable {
    static let magic = Array("SLMEMVLT".utf8)
    static let formatVersion: UInt16 = 1
    static let checksumBytes = 32
    /// Argon2id v1.3, the only key derivation so far.
    static let kdfArgon2id: UInt8 = 1

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

    /// Parses and checks a stored header. Damage of any kind is VAULT_CORRUPT naming the header; a header
    /// of a newer format is UNSUPPORTED_VERSION.
    static func decode(_ bytes: [UInt8], path: String) throws(StarlineError) -> VaultHeader {
        guard bytes.count > magic.count + 2 + checksumBytes else {
            throw VaultErrors.corruptHeader(path, "it is truncated (\(bytes.count) bytes)")
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
                throw StarlineError(.unsupportedVersion,
                                    "the memory vault \(path) has format version \(version), newer than this Starline (version \(formatVersion)): upgrade to open it",
                                    details: .object([("path", .string(path)), ("version", .int(Int64(version)))]))
            }
            let vaultID = try r.raw(16)
            guard try r.u8() == kdfArgon2id else { throw VaultErrors.corruptHeader(path, "unknown key derivation") }
            let ops = try r.u64()
            let mem = try r.u64()
            guard mem <= UInt64(Int.max) else { throw ByteReader.Malformed() }
            let salt = try r.data(limit: 64)
            let epoch = try r.u32()
            let wrapped = try r.data(limit: 256)
            let check = try r.data(limit: 64)
            var pending: PendingRekey?
            switch try r.u8() {
            case 0: break
            case 1:
                pending = PendingRekey(epoch: try r.u32(), wrappedKey: try r.data(limit: 256),
                                       wrappedUnderCurrent: try r.data(limit: 256), keyCheck: try r.data(limit: 64))
            default: throw ByteReader.Malformed()
            }
            try r.expectEnd()
            return VaultHeader(vaultID: vaultID, limits: Argon2id.Limits(opsLimit: ops, memLimit: Int(mem)), salt: salt,
                               epoch: epoch, wrappedKey: wrapped, keyCheck: check, pending: pending)
        } catch is ByteReader.Malformed {
            throw VaultErrors.corruptHeader(path, "its fields do not parse")
        } catch let error as StarlineError {
            throw error
        } catch {
            throw VaultErrors.corruptHeader(path, "\(error)")
        }
    }
}
