import StarlineCore
import StarlineCrypto

/// The keys of one data key ("epoch"): the data key itself and the subkeys derived from it with keyed
/// BLAKE2b, one per purpose, so no key is used by two primitives. The data key never leaves protected
/// memory except as `MemoryVault.dataKey`, for the unlock agent.
final class EpochKeys: Sendable {
    let epoch: UInt32
    let dataKey: SecretBytes
    /// Seals records (XChaCha20-Poly1305).
    let recordKey: SecretBytes
    /// Seals the manifest (XChaCha20-Poly1305).
    let manifestKey: SecretBytes
    /// Keys the manifest's MAC over every record id, version and attachment (BLAKE2b).
    let manifestMACKey: SecretBytes
    /// Keys the blind search tokens (BLAKE2b).
    let indexKey: SecretBytes

    init(epoch: UInt32, dataKey: SecretBytes, vaultID: [UInt8]) {
        self.epoch = epoch
        self.dataKey = dataKey
        func derive(_ purpose: String) -> SecretBytes {
            GenericHash.deriveSecret(Array("starline-memory/v1 \(purpose)\u{0}".utf8) + vaultID, key: dataKey)
        }
        recordKey = derive("record")
        manifestKey = derive("manifest")
        manifestMACKey = derive("manifest-mac")
        indexKey = derive("index")
    }
}

/// The data keys an unlocked vault holds: the current one and, while a rekey is unfinished, the new one.
/// Records say which epoch sealed them; everything written while a rekey is pending uses the new key.
struct KeyRing {
    var current: EpochKeys
    var pending: EpochKeys?

    /// The key new seals use.
    var write: EpochKeys { pending ?? current }

    func keys(epoch: UInt32) -> EpochKeys? {
        if current.epoch == epoch { return current }
        if let pending, pending.epoch == epoch { return pending }
        return nil
    }

    var all: [EpochKeys] { [current] + (pending.map { [$0] } ?? []) }
}

/// Wrapping the data key under the passphrase key, and recognising a data key without the passphrase.
enum KeyWrapping {
    static let dataKeyBytes = 32

    /// Argon2id of the passphrase with the header's salt and limits: the key-encryption key. A stored header
    /// was bounded when decoded; limits a caller asks for (`create`, `changePassphrase`) are bounded here, so
    /// no vault is ever written with a header its own readers refuse (USAGE, nothing written).
    static func passphraseKey(_ passphrase: SecretBytes, header: VaultHeader) throws(StarlineError) -> SecretBytes {
        if let v = VaultHeader.limitViolation(header.limits) {
            throw StarlineError(
                .usage,
                "Argon2id \(v.field) \(v.value) is \(v.above ? "above the maximum" : "below the minimum") \(v.bound) of a memory vault",
                details: .object([
                    ("field", .string(v.field)), ("value", .string(String(v.value))),
                    (v.above ? "maximum" : "minimum", .int(Int64(clamping: v.bound)))
                ]))
        }
        return try Argon2id.deriveKey(
            passphrase: passphrase, salt: header.salt, opsLimit: header.limits.opsLimit,
            memLimit: header.limits.memLimit, length: XChaCha20Poly1305.keyBytes)
    }

    /// Additional data of a wrapped key: it only opens as the key of this vault and epoch.
    static func wrapAD(_ purpose: String, vaultID: [UInt8], epoch: UInt32) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array("starline-memory/v1 \(purpose)\u{0}".utf8))
        w.raw(vaultID)
        w.u32(epoch)
        return w.bytes
    }

    static func wrap(_ key: SecretBytes, under kek: SecretBytes, purpose: String = "data-key", vaultID: [UInt8], epoch: UInt32) -> [UInt8] {
        XChaCha20Poly1305.seal(key, additionalData: wrapAD(purpose, vaultID: vaultID, epoch: epoch), key: kek)
    }

    static func unwrap(
        _ wrapped: [UInt8], under kek: SecretBytes, purpose: String = "data-key", vaultID: [UInt8],
        epoch: UInt32
    ) -> SecretBytes? {
        let key = try? XChaCha20Poly1305.openSecret(wrapped, additionalData: wrapAD(purpose, vaultID: vaultID, epoch: epoch), key: kek)
        guard let key, key.count == dataKeyBytes else { return nil }
        return key
    }

    /// A keyed BLAKE2b of a fixed string under the data key: equal for the right key, and says nothing
    /// about the key otherwise.
    static func keyCheck(_ key: SecretBytes, vaultID: [UInt8], epoch: UInt32) -> [UInt8] {
        GenericHash.mac(wrapAD("key-check", vaultID: vaultID, epoch: epoch), key: key)
    }

    /// The key ring from the passphrase. Throws WRONG_PASSPHRASE when the passphrase does not unwrap the
    /// current key — the header's checksum has passed, so that is what it means — and VAULT_CORRUPT when the
    /// unwrapped key does not match its check value or a pending key does not unwrap.
    static func unlock(_ header: VaultHeader, passphrase: SecretBytes, path: String) throws(StarlineError) -> (KeyRing, SecretBytes) {
        let kek = try passphraseKey(passphrase, header: header)
        guard let key = unwrap(header.wrappedKey, under: kek, vaultID: header.vaultID, epoch: header.epoch) else {
            throw VaultErrors.wrongPassphrase(path)
        }
        guard Sodium.constantTimeEquals(keyCheck(key, vaultID: header.vaultID, epoch: header.epoch), header.keyCheck) else {
            throw VaultErrors.corruptHeader(path, "the data key does not match its check value")
        }
        let current = EpochKeys(epoch: header.epoch, dataKey: key, vaultID: header.vaultID)
        return (KeyRing(current: current, pending: try pendingKeys(header, current: current, kek: kek, path: path)), kek)
    }

    /// The key ring from the data key alone (the unlock agent's). WRONG_KEY when it is not the current key.
    static func unlock(_ header: VaultHeader, dataKey: SecretBytes, path: String) throws(StarlineError) -> KeyRing {
        guard dataKey.count == dataKeyBytes,
            Sodium.constantTimeEquals(keyCheck(dataKey, vaultID: header.vaultID, epoch: header.epoch), header.keyCheck)
        else {
            throw VaultErrors.wrongKey(path, "it is not the vault's current data key (was the vault rekeyed? unlock it again)")
        }
        let current = EpochKeys(epoch: header.epoch, dataKey: dataKey, vaultID: header.vaultID)
        return KeyRing(current: current, pending: try pendingKeys(header, current: current, kek: nil, path: path))
    }

    /// The pending key, unwrapped with the passphrase key when there is one, else with the current data key.
    private static func pendingKeys(_ header: VaultHeader, current: EpochKeys, kek: SecretBytes?, path: String) throws(StarlineError)
        -> EpochKeys?
    {
        guard let pending = header.pending else { return nil }
        let key =
            kek.flatMap { unwrap(pending.wrappedKey, under: $0, vaultID: header.vaultID, epoch: pending.epoch) }
            ?? unwrap(
                pending.wrappedUnderCurrent, under: current.dataKey, purpose: "rekey-key", vaultID: header.vaultID, epoch: pending.epoch)
        guard let key, Sodium.constantTimeEquals(keyCheck(key, vaultID: header.vaultID, epoch: pending.epoch), pending.keyCheck) else {
            throw VaultErrors.corruptHeader(path, "the key of the unfinished rekey does not unwrap")
        }
        return EpochKeys(epoch: pending.epoch, dataKey: key, vaultID: header.vaultID)
    }
}
