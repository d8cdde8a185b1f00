import StarlineCore
import StarlineSQLite

/// A keyless vault: its database is open and its header read, but no key is loaded yet. Its id (the header
/// is not encrypted) names its unlock agent and keyring entry, which have to be asked before there is a
/// key, and `open(with:)` then unlocks it on the same connection — one database open per command, not two.
public final class KeylessMemoryVault {
    public let location: VaultLocation
    let store: SQLiteStore
    let faults: VaultFaults
    let header: VaultHeader

    /// The vault's id (hex), as the pin and the agent's socket name it.
    public var vaultID: String { header.vaultIDText }

    init(location: VaultLocation, store: SQLiteStore, faults: VaultFaults, header: VaultHeader) {
        self.location = location
        self.store = store
        self.faults = faults
        self.header = header
    }

    /// `MemoryVault.open(at:with:)` on this connection.
    public func open(with credential: VaultCredential, now: @escaping @Sendable () -> Timestamp = { Timestamp.now() }) throws -> MemoryVault
    {
        try MemoryVault.checkedOpen(try unlock(with: credential, now: now))
    }

    /// Unlocks without the manifest and pin checks. The header is read again: another process may have
    /// changed the passphrase or finished a rekey since the id was read.
    func unlock(with credential: VaultCredential, now: @escaping @Sendable () -> Timestamp) throws -> MemoryVault {
        let path = location.databasePath
        do {
            let (header, keys) = try MemoryVault.unlockHeader(store, location: location, faults: faults, credential: credential)
            return MemoryVault(location: location, store: store, header: header, keys: keys, faults: faults, now: now)
        } catch {
            throw VaultErrors.classify(error, path: path)
        }
    }

    /// Opens the database and reads the header. A missing vault is VAULT_NOT_FOUND (saying so when the pin
    /// knew one there), a damaged header VAULT_CORRUPT.
    static func open(at location: VaultLocation, faults: VaultFaults) throws -> KeylessMemoryVault {
        let path = location.databasePath
        do {
            guard MemoryVault.exists(at: location) else {
                let pinned = (try? RollbackPin.read(location.pinPath)) ?? nil
                throw VaultErrors.notFound(
                    location.directory,
                    pinned.map { "\(path) is missing, but a vault was last seen here at counter \($0.counter)" }
                        ?? "\(path) does not exist")
            }
            let store = try MemoryVault.openStore(location, faults: faults)
            return KeylessMemoryVault(
                location: location, store: store, faults: faults,
                header: try readHeader(store, location: location, faults: faults))
        } catch {
            throw VaultErrors.classify(error, path: path)
        }
    }

    private static func readHeader(_ store: SQLiteStore, location: VaultLocation, faults: VaultFaults) throws -> VaultHeader {
        try store.database.transaction(.deferred) { () throws -> VaultHeader in
            try faults.storage.check(.read, "read the memory vault")
            return try MemoryVault.readHeader(store.database, location: location)
        }
    }
}

extension MemoryVault {
    /// The vault at `location`, opened but not unlocked (see `KeylessMemoryVault`).
    public static func keyless(at location: VaultLocation, faults: VaultFaults = VaultFaults()) throws -> KeylessMemoryVault {
        try KeylessMemoryVault.open(at: location, faults: faults)
    }

    /// The vault's id, read without unlocking it. A missing vault is VAULT_NOT_FOUND, a damaged header
    /// VAULT_CORRUPT, as for `open`.
    public static func vaultID(at location: VaultLocation, faults: VaultFaults = VaultFaults()) throws -> String {
        try keyless(at: location, faults: faults).vaultID
    }
}
