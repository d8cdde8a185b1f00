import StarlineCore
import StarlineLoader

/// libsecret and the three GLib libraries it sits on, loaded with dlopen on the first keyring use.
///
/// Linking them would make every start of every tool load GLib, GObject, GIO and libgcrypt, keyring or
/// not; only a command that uses the keyring pays for them here. The few functions are declared as
/// `@convention(c)` types: GLib handles are opaque pointers, flags enums are `unsigned int`, `gboolean` is
/// `int`, and no struct layout is used except GError's three public fields (read in `KeyringCall.failure`).
/// Variadic functions (`secret_password_store_sync`, `g_object_new`) are avoided: libsecret has
/// non-variadic forms of everything needed (`secret_schema_newv`, hash tables of attributes).
struct SecretLibrary: @unchecked Sendable {
    // @unchecked: immutable C function pointers, safe to share between threads.
    typealias Pointer = UnsafeMutableRawPointer
    typealias ErrorOut = UnsafeMutablePointer<Pointer?>

    // GLib
    let hashTableNewFull: @convention(c) (Pointer?, Pointer?, Pointer?, Pointer?) -> Pointer?
    let hashTableInsert: @convention(c) (Pointer?, Pointer?, Pointer?) -> Int32
    let hashTableUnref: @convention(c) (Pointer?) -> Void
    let strdup: @convention(c) (UnsafePointer<CChar>?) -> Pointer?
    let listLength: @convention(c) (Pointer?) -> UInt32
    let listNthData: @convention(c) (Pointer?, UInt32) -> Pointer?
    let listFree: @convention(c) (Pointer?) -> Void
    let errorFree: @convention(c) (Pointer?) -> Void
    let quarkToString: @convention(c) (UInt32) -> UnsafePointer<CChar>?
    /// `g_str_hash`, `g_str_equal` and `g_free` as function pointers for `g_hash_table_new_full`.
    let strHash: Pointer
    let strEqual: Pointer
    let free: Pointer
    // GObject
    let objectRef: @convention(c) (Pointer?) -> Pointer?
    let objectUnref: @convention(c) (Pointer?) -> Void
    // GIO
    let cancellableNew: @convention(c) () -> Pointer?
    let cancellableCancel: @convention(c) (Pointer?) -> Void
    let ioErrorQuark: @convention(c) () -> UInt32
    let dbusErrorQuark: @convention(c) () -> UInt32
    // libsecret
    let serviceGetSync: @convention(c) (UInt32, Pointer?, ErrorOut?) -> Pointer?
    let serviceSearchSync: @convention(c) (Pointer?, Pointer?, Pointer?, UInt32, Pointer?, ErrorOut?) -> Pointer?
    let itemLoadSecretsSync: @convention(c) (Pointer?, Pointer?, ErrorOut?) -> Int32
    let itemGetLocked: @convention(c) (Pointer?) -> Int32
    let itemGetSecret: @convention(c) (Pointer?) -> Pointer?
    let itemCreateSync:
        @convention(c) (Pointer?, Pointer?, Pointer?, UnsafePointer<CChar>?, Pointer?, UInt32, Pointer?, ErrorOut?) -> Pointer?
    let itemDeleteSync: @convention(c) (Pointer?, Pointer?, ErrorOut?) -> Int32
    let collectionForAliasSync: @convention(c) (Pointer?, UnsafePointer<CChar>?, UInt32, Pointer?, ErrorOut?) -> Pointer?
    let collectionGetLocked: @convention(c) (Pointer?) -> Int32
    let valueNew: @convention(c) (UnsafeRawPointer?, Int, UnsafePointer<CChar>?) -> Pointer?
    let valueGet: @convention(c) (Pointer?, UnsafeMutablePointer<Int>?) -> UnsafeRawPointer?
    let valueUnref: @convention(c) (Pointer?) -> Void
    let schemaNewv: @convention(c) (UnsafePointer<CChar>?, UInt32, Pointer?) -> Pointer?
    let schemaUnref: @convention(c) (Pointer?) -> Void
    let secretErrorQuark: @convention(c) () -> UInt32

    // Constants from secret-service.h, secret-types.h, secret-item.h and secret-schema.h.
    static let serviceOpenSession: UInt32 = 1 << 1  // SECRET_SERVICE_OPEN_SESSION
    static let searchNone: UInt32 = 0  // SECRET_SEARCH_NONE
    static let searchAll: UInt32 = 1 << 1  // SECRET_SEARCH_ALL
    static let collectionNone: UInt32 = 0  // SECRET_COLLECTION_NONE
    static let itemCreateReplace: UInt32 = 1 << 1  // SECRET_ITEM_CREATE_REPLACE
    static let schemaNone: UInt32 = 0  // SECRET_SCHEMA_NONE

    /// The libraries, or why not (KEYRING_UNAVAILABLE). Loaded once per process (a lazily initialised global).
    static let shared: Result<SecretLibrary, StarlineError> = load()

    static func load() -> Result<SecretLibrary, StarlineError> {
        // Debian's runtime sonames; libsecret-1.so.0 pulls in the others, so opening them again only takes a
        // reference. The unversioned names exist only with the -dev packages.
        let remedy = "libsecret 0.19 or newer is needed; upgrade it, or use --no-keyring"
        let wanted: [(sonames: [String], requirement: SharedLibrary.Requirement)] = [
            (["libsecret-1.so.0"], .init("libsecret", package: "libsecret-1-0", remedy: remedy)),
            (["libglib-2.0.so.0"], .init("GLib", package: "libglib2.0-0", remedy: remedy)),
            (["libgobject-2.0.so.0"], .init("GObject", package: "libglib2.0-0", remedy: remedy)),
            (["libgio-2.0.so.0"], .init("GIO", package: "libglib2.0-0", remedy: remedy))
        ]
        let loaded = SharedLibrary.load(wanted) { libraries -> SecretLibrary in
            var (secret, glib, gobject, gio) = (libraries[0], libraries[1], libraries[2], libraries[3])
            let bound = bind(secret: &secret, glib: &glib, gobject: &gobject, gio: &gio)
            // Back into the list, whose `missing` the loader checks.
            libraries = [secret, glib, gobject, gio]
            return bound
        }
        // The keyring's own code and what to do: the store works without the keyring (--no-keyring).
        return loaded.mapError { error in
            StarlineError(
                .keyringUnavailable,
                error.message.hasPrefix("cannot load")
                    ? "the Secret Service keyring needs libsecret: \(error.message); install it, or use --no-keyring"
                    : "the Secret Service keyring: \(error.message)")
        }
    }

    private static func bind(
        secret: inout SharedLibrary, glib: inout SharedLibrary, gobject: inout SharedLibrary, gio: inout SharedLibrary
    ) -> SecretLibrary {
        SecretLibrary(
            hashTableNewFull: glib.function(
                "g_hash_table_new_full", as: (@convention(c) (Pointer?, Pointer?, Pointer?, Pointer?) -> Pointer?).self),
            hashTableInsert: glib.function("g_hash_table_insert", as: (@convention(c) (Pointer?, Pointer?, Pointer?) -> Int32).self),
            hashTableUnref: glib.function("g_hash_table_unref", as: (@convention(c) (Pointer?) -> Void).self),
            strdup: glib.function("g_strdup", as: (@convention(c) (UnsafePointer<CChar>?) -> Pointer?).self),
            listLength: glib.function("g_list_length", as: (@convention(c) (Pointer?) -> UInt32).self),
            listNthData: glib.function("g_list_nth_data", as: (@convention(c) (Pointer?, UInt32) -> Pointer?).self),
            listFree: glib.function("g_list_free", as: (@convention(c) (Pointer?) -> Void).self),
            errorFree: glib.function("g_error_free", as: (@convention(c) (Pointer?) -> Void).self),
            quarkToString: glib.function("g_quark_to_string", as: (@convention(c) (UInt32) -> UnsafePointer<CChar>?).self),
            strHash: glib.address("g_str_hash"),
            strEqual: glib.address("g_str_equal"),
            free: glib.address("g_free"),
            objectRef: gobject.function("g_object_ref", as: (@convention(c) (Pointer?) -> Pointer?).self),
            objectUnref: gobject.function("g_object_unref", as: (@convention(c) (Pointer?) -> Void).self),
            cancellableNew: gio.function("g_cancellable_new", as: (@convention(c) () -> Pointer?).self),
            cancellableCancel: gio.function("g_cancellable_cancel", as: (@convention(c) (Pointer?) -> Void).self),
            ioErrorQuark: gio.function("g_io_error_quark", as: (@convention(c) () -> UInt32).self),
            dbusErrorQuark: gio.function("g_dbus_error_quark", as: (@convention(c) () -> UInt32).self),
            serviceGetSync: secret.function("secret_service_get_sync", as: (@convention(c) (UInt32, Pointer?, ErrorOut?) -> Pointer?).self),
            serviceSearchSync: secret.function(
                "secret_service_search_sync",
                as: (@convention(c) (Pointer?, Pointer?, Pointer?, UInt32, Pointer?, ErrorOut?) -> Pointer?).self),
            itemLoadSecretsSync: secret.function(
                "secret_item_load_secrets_sync", as: (@convention(c) (Pointer?, Pointer?, ErrorOut?) -> Int32).self),
            itemGetLocked: secret.function("secret_item_get_locked", as: (@convention(c) (Pointer?) -> Int32).self),
            itemGetSecret: secret.function("secret_item_get_secret", as: (@convention(c) (Pointer?) -> Pointer?).self),
            itemCreateSync: secret.function(
                "secret_item_create_sync",
                as: (@convention(c) (Pointer?, Pointer?, Pointer?, UnsafePointer<CChar>?, Pointer?, UInt32, Pointer?, ErrorOut?) -> Pointer?)
                    .self),
            itemDeleteSync: secret.function("secret_item_delete_sync", as: (@convention(c) (Pointer?, Pointer?, ErrorOut?) -> Int32).self),
            collectionForAliasSync: secret.function(
                "secret_collection_for_alias_sync",
                as: (@convention(c) (Pointer?, UnsafePointer<CChar>?, UInt32, Pointer?, ErrorOut?) -> Pointer?).self),
            collectionGetLocked: secret.function("secret_collection_get_locked", as: (@convention(c) (Pointer?) -> Int32).self),
            valueNew: secret.function(
                "secret_value_new", as: (@convention(c) (UnsafeRawPointer?, Int, UnsafePointer<CChar>?) -> Pointer?).self),
            valueGet: secret.function(
                "secret_value_get", as: (@convention(c) (Pointer?, UnsafeMutablePointer<Int>?) -> UnsafeRawPointer?).self),
            valueUnref: secret.function("secret_value_unref", as: (@convention(c) (Pointer?) -> Void).self),
            schemaNewv: secret.function(
                "secret_schema_newv", as: (@convention(c) (UnsafePointer<CChar>?, UInt32, Pointer?) -> Pointer?).self),
            schemaUnref: secret.function("secret_schema_unref", as: (@convention(c) (Pointer?) -> Void).self),
            secretErrorQuark: secret.function("secret_error_get_quark", as: (@convention(c) () -> UInt32).self))
    }

    /// A new `GHashTable` of strings to strings (`g_str_hash`, `g_str_equal`, both freed with `g_free`), as
    /// libsecret wants attributes: "a table of string keys and string values". nil values insert NULL.
    func stringTable(_ pairs: [String: String?]) -> Pointer? {
        let table = hashTableNewFull(strHash, strEqual, free, free)
        for (key, value) in pairs {
            let copiedKey = key.withCString { strdup($0) }
            let copiedValue = value.flatMap { $0.withCString { strdup($0) } }
            _ = hashTableInsert(table, copiedKey, copiedValue)
        }
        return table
    }
}
