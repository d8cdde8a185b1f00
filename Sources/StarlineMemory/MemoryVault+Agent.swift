import StarlineCore

extension MemoryVault {
    /// The vault's id, read without unlocking it (the header is not encrypted): it names the vault's unlock
    /// agent (`MemoryAgentClient.fetchKey(vaultID:environment:)`), which has to be asked before there is a
    /// key. A missing vault is VAULT_NOT_FOUND, a damaged header VAULT_CORRUPT, as for `open`.
    public static func vaultID(at location: VaultLocation, faults: VaultFaults = VaultFaults()) throws -> String {
        let path = location.databasePath
        do {
            guard exists(at: location) else { throw VaultErrors.notFound(location.directory, "\(path) does not exist") }
            let store = try openStore(location, faults: faults)
            let header = try store.database.transaction(.deferred) { () throws -> VaultHeader in
                try faults.storage.check(.read, "read the memory vault")
                return try readHeader(store.database, location: location)
            }
            return header.vaultIDText
        } catch {
            throw VaultErrors.classify(error, path: path)
        }
    }
}
