#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineCrypto

/// What a lookup found.
public enum KeyringLookup: Sendable {
    case found(SecretBytes)
    /// No item has these attributes.
    case absent
    /// Only locked items have them; the secret cannot be read until the user unlocks the keyring.
    case locked
}

/// What a delete did.
public enum KeyringDeletion: Sendable, Equatable {
    /// `count` items were deleted (all that matched).
    case deleted(Int)
    case absent
    /// Some matching items are locked and were left in place (unlocked ones were deleted).
    case locked
}

/// The desktop keyring through the Secret Service D-Bus API (libsecret, loaded with dlopen): the Keychain
/// analogue of S2/S3. It never prompts: nothing here asks the service to unlock, so a locked keyring is
/// reported (`.locked`, `STORAGE_LOCKED`) instead of opening a password dialog, and every call is bounded
/// by `timeout` (`KeyringCall`), so a wedged daemon is an error rather than a hang.
///
/// Items carry the schema name in the `xdg:schema` attribute, so our items never match another
/// application's items with the same attributes. Not Sendable: use one object on one thread at a time
/// (libsecret's `_sync` calls each run their own main context; opening another object is cheap, since
/// libsecret shares one `SecretService` proxy per process).
public final class SecretServiceKeyring {
    private let library: SecretLibrary
    /// The `SecretService *` (a reference of our own, released in deinit).
    private let service: UnsafeMutableRawPointer
    public let schemaName: String
    private let timeoutNanoseconds: UInt64

    /// The default collection, as `secret_service_store` uses it: "If collection is not specified, then the
    /// default collection will be used."
    public static let defaultCollection = "default"

    private init(library: SecretLibrary, service: UnsafeMutableRawPointer, schemaName: String, timeoutNanoseconds: UInt64) {
        self.library = library
        self.service = service
        self.schemaName = schemaName
        self.timeoutNanoseconds = timeoutNanoseconds
    }

    deinit { library.objectUnref(service) }

    /// `open(environment:)` with the one variable it reads taken from a tool's `Environment`.
    public static func open(busOf environment: Environment, schemaName: String) throws(StarlineError) -> SecretServiceKeyring {
        let bus = environment["DBUS_SESSION_BUS_ADDRESS"]
        return try open(environment: bus.map { ["DBUS_SESSION_BUS_ADDRESS": $0] } ?? [:], schemaName: schemaName)
    }

    /// Connects to the Secret Service on the session bus named by `environment["DBUS_SESSION_BUS_ADDRESS"]`.
    ///
    /// The variable is checked before GLib is loaded: without it GLib would try `$XDG_RUNTIME_DIR/bus` and
    /// then X11 autolaunch (`dbus-launch --autolaunch`), which starts a bus nobody else uses (or hangs on a
    /// dead `DISPLAY`). GLib reads the process environment, not `environment`, so the two must agree; a
    /// caller with an injected environment that names another bus gets an error rather than the wrong keyring.
    public static func open(
        environment: [String: String], schemaName: String = "org.starline.Secret",
        timeout: Duration = .seconds(10)
    ) throws(StarlineError) -> SecretServiceKeyring {
        guard let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else {
            throw KeyringCall.unavailable("there is no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
        }
        guard let processAddress = getenv("DBUS_SESSION_BUS_ADDRESS").map({ String(cString: $0) }), processAddress == address else {
            throw KeyringCall.unavailable("DBUS_SESSION_BUS_ADDRESS differs from this process's, which GLib would use")
        }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
        // GDBus does not ask who serves the bus: the socket's listener must be us or root (SO_PEERCRED) before
        // GLib sends it a byte, as for the direct reader (a bus of another uid would get the secret we store).
        try DBusConnection.checkListener(address: address, timeoutNanoseconds: nanoseconds)
        let library = try SecretLibrary.shared.get()
        let call = KeyringCall(library, timeoutNanoseconds: nanoseconds)
        // SECRET_SERVICE_OPEN_SESSION: "establish a session for transfer of secrets while initializing the
        // SecretService"; the session is what GetSecrets and CreateItem encrypt with.
        let service: UnsafeMutableRawPointer?
        do throws(StarlineError) {
            service = try call.run("connect") { library.serviceGetSync(SecretLibrary.serviceOpenSession, call.cancellable, $0) }
        } catch {
            // Whatever fails while connecting means there is no usable keyring (timeouts stay retryable).
            if error.code != .storage { throw error }
            throw KeyringCall.unavailable("cannot reach the Secret Service: \(error.message)", details: error.details)
        }
        guard let service else { throw KeyringCall.unavailable("libsecret returned no Secret Service") }
        return SecretServiceKeyring(library: library, service: service, schemaName: schemaName, timeoutNanoseconds: nanoseconds)
    }

    /// The secret of the item with `attributes`, without unlocking anything.
    ///
    /// The search runs without SECRET_SEARCH_UNLOCK ("If SECRET_SEARCH_UNLOCK is set in flags, then items
    /// will be unlocked if necessary. In either case, locked and unlocked items will match the search and be
    /// returned") and without SECRET_SEARCH_ALL, so the one item returned "is almost always the unlocked item
    /// that was most recently stored": a locked one comes back only when no unlocked one matched. Secrets are
    /// loaded here rather than with SECRET_SEARCH_LOAD_SECRETS, which libsecret 0.20 runs without the
    /// cancellable (unbounded) and whose failure it ignores; `secret_item_load_secrets_sync` skips locked
    /// items: "Items that are locked will not have their secrets loaded."
    public func lookup(attributes: [String: String]) throws(StarlineError) -> KeyringLookup {
        let call = KeyringCall(library, timeoutNanoseconds: timeoutNanoseconds)
        let items = try search(attributes, flags: SecretLibrary.searchNone, call)
        defer { items.release() }
        guard let item = items.first else { return .absent }
        if library.itemGetLocked(item) != 0 { return .locked }
        let loaded = try call.run("read the secret") { library.itemLoadSecretsSync(items.list, call.cancellable, $0) != 0 ? true : nil }
        guard loaded == true else { throw StarlineError(.storage, "the Secret Service did not return the secret") }
        // secret_item_get_secret: "If this item is locked or the secret has not yet been loaded then this will
        // return NULL ... Returns: (transfer full) (nullable): the secret value which should be released with
        // [method@Value.unref], or NULL" (NULL here: a lock between the search and the load).
        guard let value = library.itemGetSecret(item) else { return library.itemGetLocked(item) != 0 ? .locked : .absent }
        defer { library.valueUnref(value) }
        var length = 0
        let bytes = library.valueGet(value, &length)
        // Copied straight into protected memory; libsecret keeps its copy in egg_secure memory, which
        // secret_value_unref wipes and frees.
        let secret = SecretBytes(count: length) { buffer in
            if let bytes, length > 0 { buffer.copyMemory(from: UnsafeRawBufferPointer(start: bytes, count: length)) }
        }
        return .found(secret)
    }

    /// Stores `secret` in the default collection, replacing the item with the same attributes.
    ///
    /// Not `secret_service_store_sync`: on a locked collection it unlocks it ("secret_service_unlock_dbus_paths"
    /// after SECRET_ERROR_IS_LOCKED) and without a default collection it creates one — both prompt. Instead
    /// the collection's Locked property is checked first, and the item is created with
    /// `secret_item_create_sync` and SECRET_ITEM_CREATE_REPLACE: "the secret service will search for an item
    /// matching the attributes, and update that item instead of creating a new one". If the collection is
    /// locked between the check and the creation, gnome-keyring answers IsLocked ("Cannot create an item in a
    /// locked collection", gkd-secret-objects.c), not a prompt: STORAGE_LOCKED.
    public func store(secret: SecretBytes, label: String, attributes: [String: String]) throws(StarlineError) {
        let call = KeyringCall(library, timeoutNanoseconds: timeoutNanoseconds)
        let collection = try call.run("find the default collection") { error in
            Self.defaultCollection.withCString {
                library.collectionForAliasSync(service, $0, SecretLibrary.collectionNone, call.cancellable, error)
            }
        }
        // secret_collection_for_alias_sync: "Returns: (transfer full): the collection, or NULL if none assigned
        // to the alias"
        guard let collection else {
            throw StarlineError(
                .keyringUnavailable,
                "the keyring has no default collection (create one in your desktop's keyring settings), or use --no-keyring")
        }
        defer { library.objectUnref(collection) }
        if library.collectionGetLocked(collection) != 0 {
            throw StarlineError(
                .storageLocked, "the keyring is locked; unlock it in your desktop session and try again, or use --no-keyring")
        }
        let schema = try makeSchema(attributes)
        defer { library.schemaUnref(schema) }
        let table = library.stringTable(attributes)
        defer { library.hashTableUnref(table) }
        // secret_value_new copies the bytes into libsecret's secure memory; we drop our reference at once.
        let value = secret.withUnsafeBytes { library.valueNew($0.baseAddress, $0.count, "application/octet-stream") }
        defer { library.valueUnref(value) }
        let item = try call.run("store the secret") { error in
            label.withCString {
                library.itemCreateSync(collection, schema, table, $0, value, SecretLibrary.itemCreateReplace, call.cancellable, error)
            }
        }
        guard let item else { throw StarlineError(.storage, "the Secret Service did not create the item") }
        library.objectUnref(item)
    }

    /// Deletes every item with `attributes` that is not locked.
    public func delete(attributes: [String: String]) throws(StarlineError) -> KeyringDeletion {
        let call = KeyringCall(library, timeoutNanoseconds: timeoutNanoseconds)
        let items = try search(attributes, flags: SecretLibrary.searchAll, call)
        defer { items.release() }
        if items.all.isEmpty { return .absent }
        var deleted = 0, locked = 0
        for item in items.all {
            if library.itemGetLocked(item) != 0 {
                locked += 1
                continue
            }
            // An item locked since the search: gnome-keyring answers IsLocked ("Cannot delete a locked item").
            do throws(StarlineError) {
                _ = try call.run("delete the item") { library.itemDeleteSync(item, call.cancellable, $0) != 0 ? true : nil }
                deleted += 1
            } catch  where error.code == .storageLocked {
                locked += 1
            }
        }
        return locked > 0 ? .locked : .deleted(deleted)
    }

    // MARK: Internals

    /// The items a search returned (`GList *` of `SecretItem *`, transfer full).
    private struct Items {
        let library: SecretLibrary
        let list: UnsafeMutableRawPointer?
        let all: [UnsafeMutableRawPointer]
        var first: UnsafeMutableRawPointer? { all.first }

        func release() {
            for item in all { library.objectUnref(item) }
            library.listFree(list)
        }
    }

    private func search(_ attributes: [String: String], flags: UInt32, _ call: KeyringCall) throws(StarlineError) -> Items {
        let schema = try makeSchema(attributes)
        defer { library.schemaUnref(schema) }
        let table = library.stringTable(attributes)
        defer { library.hashTableUnref(table) }
        let list = try call.run("search") { library.serviceSearchSync(service, schema, table, flags, call.cancellable, $0) }
        // A NULL list is the empty GList: nothing matched.
        let all = (0..<library.listLength(list)).compactMap { library.listNthData(list, $0) }
        return Items(library: library, list: list, all: all)
    }

    /// A schema named `schemaName` whose attributes are exactly `attributes`' names, all strings
    /// (SECRET_SCHEMA_ATTRIBUTE_STRING is 0, so the table's values are NULL). libsecret checks the
    /// attributes against it and adds `xdg:schema` to what it stores and searches for.
    private func makeSchema(_ attributes: [String: String]) throws(StarlineError) -> UnsafeMutableRawPointer? {
        // "SecretSchema ... attributes[32]": a schema holds at most 32 attributes.
        guard !attributes.isEmpty, attributes.count <= 32 else {
            throw StarlineError(.usage, "a keyring item needs 1 to 32 attributes, not \(attributes.count)")
        }
        guard !attributes.keys.contains(where: { $0.isEmpty || $0.hasPrefix("xdg:") }) else {
            throw StarlineError(.usage, "keyring attribute names must be non-empty and not start with xdg:")
        }
        let names = library.stringTable(attributes.mapValues { _ -> String? in nil })
        defer { library.hashTableUnref(names) }
        // "secret_schema_newv ... attribute_names_and_types: the attribute names and types of those attributes";
        // the names are copied into the schema.
        return schemaName.withCString { library.schemaNewv($0, SecretLibrary.schemaNone, names) }
    }
}
