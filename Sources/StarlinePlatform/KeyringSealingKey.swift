import StarlineCore
import StarlineCrypto
import StarlineKeyring

/// The keyring custodian's side of the session store (S3): the sealing key of one store key as an item
/// of the Secret Service, under the sessions' own schema (`cn.thestarline.Session`; the memory vault has
/// another, as seed 003 keeps the memory key under another service).
///
/// The item's attributes are the store key (service, API origin, App ID) and a random `item` id recorded in
/// the store's custody row: a new sign-in after the key was released makes a new item, and a state directory
/// copied to another account or machine names an item that keyring does not have — so it does not open there.
/// The secret is the 32-byte sealing key itself. libsecret is loaded (dlopen) only when this runs.
enum KeyringSealingKey {
    static let schema = "cn.thestarline.Session"

    static func attributes(_ key: StoreKey, item: String) -> [String: String] {
        ["service": key.service, "origin": key.apiOrigin, "app": key.appId, "item": item]
    }

    static func label(_ key: StoreKey) -> String {
        "Starline session key (\(key.appId) at \(key.apiOrigin), service \(key.service))"
    }

    /// The key in item `item`. STORAGE_LOCKED (exit 10) while the keyring is locked — never a prompt —;
    /// STORAGE_ERROR when the item is missing; KEYRING_UNAVAILABLE without a reachable Secret Service.
    static func load(_ store: SessionStore, item: String) throws(StarlineError) -> SecretBytes {
        switch try SecretServiceKeyring.read(busOf: store.environment, schemaName: schema, attributes: attributes(store.key, item: item)) {
        case .found(let secret):
            guard secret.count == XChaCha20Poly1305.keyBytes else {
                throw StarlineError(
                    .storage,
                    "the keyring item of this session store holds \(secret.count) bytes, not a \(XChaCha20Poly1305.keyBytes)-byte key; run sl-login clear and sign in again",
                    details: details(store, item))
            }
            return secret
        case .locked:
            throw StarlineError(
                .storageLocked,
                """
                the keyring that holds this session store's key is locked; unlock it (your desktop's login keyring) and run \
                again — nothing was changed
                """,
                details: details(store, item))
        case .absent:
            throw StarlineError(
                .storage,
                """
                the keyring has no key for this session store (the state directory was copied from another machine or \
                account, or the keyring was reset), so the stored records cannot be decrypted here; sign in again
                """,
                details: details(store, item))
        }
    }

    /// A new random key stored as a new item; returns the item id and the key.
    static func create(_ store: SessionStore) throws(StarlineError) -> (item: String, key: SecretBytes) {
        let item = StoreKey.hex(Sodium.randomBytes(16))
        let key = XChaCha20Poly1305.generateKey()
        try keyring(store).store(secret: key, label: label(store.key), attributes: attributes(store.key, item: item))
        return (item, key)
    }

    /// Deletes item `item`: true when it is gone (or was never there), false when the keyring is locked.
    static func delete(_ store: SessionStore, item: String) throws(StarlineError) -> Bool {
        switch try keyring(store).delete(attributes: attributes(store.key, item: item)) {
        case .deleted, .absent: true
        case .locked: false
        }
    }

    /// Whether item `item` can be read now, for `sl-login status` (no secret leaves this function).
    static func state(_ store: SessionStore, item: String) -> String {
        do {
            switch try SecretServiceKeyring.read(
                busOf: store.environment, schemaName: schema, attributes: attributes(store.key, item: item))
            {
            case .found: return "unlocked"
            case .locked: return "locked"
            case .absent: return "missing"
            }
        } catch {
            return error.code == .keyringUnavailable ? "unavailable" : "error"
        }
    }

    private static func keyring(_ store: SessionStore) throws(StarlineError) -> SecretServiceKeyring {
        try SecretServiceKeyring.open(busOf: store.environment, schemaName: schema)
    }

    private static func details(_ store: SessionStore, _ item: String) -> JSON {
        .object([("custodian", .string("keyring")), ("item", .string(item)), ("path", .string(store.databasePath))])
    }
}
