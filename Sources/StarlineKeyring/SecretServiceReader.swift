import StarlineCore
import StarlineCrypto

/// The read path of the keyring custodian: one secret looked up by attributes over the Secret Service
/// D-Bus API directly (org.freedesktop.Secret.Service `OpenSession` with the "plain" algorithm,
/// `SearchItems`, `GetSecrets`), without loading libsecret and GLib.
///
/// Why not libsecret here: `sl-restore` reads the key on every run (often from cron), and libsecret's object
/// API costs GLib's start-up (loading libsecret, GLib, GIO, GObject and libgcrypt — behind the dynamic
/// loader's lock that the background libcurl load holds), a proxy with its properties for the service and
/// for each item found, and a Diffie-Hellman exchange: ~20 ms a run, against 5 round trips here (Hello,
/// GetNameOwner, OpenSession, SearchItems, GetSecrets). Writes (create, delete) and collection checks still
/// go through libsecret (`SecretServiceKeyring`).
///
/// Like `SecretServiceKeyring.lookup` it never unlocks and never prompts: `SearchItems` "returns two lists
/// of items: unlocked and locked"; an item only in the second is `.locked`. The attributes include
/// `xdg:schema` as libsecret adds it to what it stores. "plain": the spec's algorithm that every service
/// supports, the secret crossing the bus unencrypted — to a bus and a daemon that run as this user, who
/// could read our memory anyway. A service that refuses it (or any other protocol surprise) makes the
/// caller fall back to libsecret (`SecretServiceKeyring`), which negotiates its own session.
///
/// Whom it trusts: the bus only when this user or root serves its socket (checked before anything is sent,
/// `DBusConnection`), and answers only from the unique name that owns `org.freedesktop.secrets` (asked of
/// the bus after Hello) — a method return from any other client is skipped, however well it guesses the
/// serial.
public enum SecretServiceReader {
    static let service = "org.freedesktop.secrets"
    static let servicePath = "/org/freedesktop/secrets"
    static let serviceInterface = "org.freedesktop.Secret.Service"

    public enum Outcome: Sendable {
        case answered(KeyringLookup)
        /// The service answered in a way this reader does not handle (another algorithm only, an unknown
        /// error): ask libsecret instead.
        case useLibsecret(reason: String)
    }

    /// Looks the item up on the bus named by `environment["DBUS_SESSION_BUS_ADDRESS"]`.
    public static func lookup(
        busOf environment: Environment, schemaName: String, attributes: [String: String],
        timeout: Duration = .seconds(10)
    ) throws(StarlineError) -> Outcome {
        guard let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else {
            throw KeyringCall.unavailable("there is no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
        }
        let (seconds, attoseconds) = timeout.components
        let connection = try DBusConnection(
            address: address,
            timeoutNanoseconds: UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000))
        // The calls go to, and their replies are taken only from, the connection that owns the service's name
        // now: any client of the bus can send us a method return with a matching serial, but not with the
        // owner's unique name as its SENDER.
        guard let owner = try connection.owner(of: service) else {
            throw KeyringCall.unavailable("no Secret Service runs on the D-Bus session bus (nobody owns \(service))")
        }
        func ask(_ member: String, signature: String, body: [DBusValue]) throws(StarlineError) -> DBusMessage {
            try connection.call(
                .call(
                    serial: 0, destination: owner, path: servicePath, interface: serviceInterface, member: member,
                    signature: signature, body: body), replyFrom: owner)
        }
        let opened = try ask("OpenSession", signature: "sv", body: [.string("plain"), .variant(signature: "s", .string(""))])
        if opened.kind == .error {
            if opened.errorName == "org.freedesktop.DBus.Error.ServiceUnknown"
                || opened.errorName == "org.freedesktop.DBus.Error.NameHasNoOwner"
            {
                throw KeyringCall.unavailable("no Secret Service runs on the D-Bus session bus (\(opened.errorName ?? ""))")
            }
            return .useLibsecret(reason: "OpenSession: \(opened.errorName ?? "error")")
        }
        guard opened.body.count == 2, case .objectPath(let session) = opened.body[1] else {
            return .useLibsecret(reason: "OpenSession answered with \(opened.signature)")
        }
        var query = attributes
        query["xdg:schema"] = schemaName
        let entries = query.sorted { $0.key < $1.key }.map { DBusValue.dictEntry(.string($0.key), .string($0.value)) }
        let found = try ask("SearchItems", signature: "a{ss}", body: [.array(elementSignature: "{ss}", entries)])
        guard found.kind == .methodReturn, found.body.count == 2, let unlocked = found.body[0].elements, let locked = found.body[1].elements
        else {
            return .useLibsecret(reason: "SearchItems: \(found.errorName ?? found.signature)")
        }
        guard let item = unlocked.first, case .objectPath(let itemPath) = item else {
            return .answered(locked.isEmpty ? .absent : .locked)
        }
        let secrets = try ask(
            "GetSecrets", signature: "aoo", body: [.array(elementSignature: "o", [.objectPath(itemPath)]), .objectPath(session)])
        if secrets.kind == .error {
            // Locked between the search and the read.
            if secrets.errorName == "org.freedesktop.Secret.Error.IsLocked" { return .answered(.locked) }
            return .useLibsecret(reason: "GetSecrets: \(secrets.errorName ?? "error")")
        }
        // a{o(oayays)}: item → (session, parameters, value, content type).
        guard secrets.body.count == 1, let map = secrets.body[0].elements else {
            return .useLibsecret(reason: "GetSecrets answered with \(secrets.signature)")
        }
        for entry in map {
            guard case .dictEntry(.objectPath(let path), .structure(let secret)) = entry, path == itemPath, secret.count == 4,
                case .bytes(var value) = secret[2]
            else { continue }
            defer { Sodium.wipe(&value) }
            return .answered(
                .found(
                    SecretBytes(count: value.count) { buffer in
                        value.withUnsafeBytes { if $0.count > 0 { buffer.copyMemory(from: $0) } }
                    }))
        }
        // Not returned: the item went away (or was locked) between the search and the read.
        return .answered(.absent)
    }
}

extension SecretServiceKeyring {
    /// The secret of the item with `attributes`: over D-Bus directly (`SecretServiceReader`), or through
    /// libsecret when the service wants something the direct reader does not speak. Never unlocks, never
    /// prompts; KEYRING_UNAVAILABLE without a reachable Secret Service.
    ///
    /// Only an answer the reader does not handle leads to libsecret, on a bus the reader has just checked.
    /// A bus it refuses (served by another uid, malformed or flooding replies, a timeout) is thrown, never
    /// a reason to ask libsecret: GDBus would connect to the same socket without looking at who serves it.
    public static func read(busOf environment: Environment, schemaName: String, attributes: [String: String]) throws(StarlineError)
        -> KeyringLookup
    {
        switch try SecretServiceReader.lookup(busOf: environment, schemaName: schemaName, attributes: attributes) {
        case .answered(let result): return result
        case .useLibsecret: return try open(busOf: environment, schemaName: schemaName).lookup(attributes: attributes)
        }
    }
}
