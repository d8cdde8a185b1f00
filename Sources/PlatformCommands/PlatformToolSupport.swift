#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlinePlatform

/// What the platform tools (sl-login, sl-restore, sl-sessions; sl-chat through ChatOptions) share: options, the client built from them, events.
public enum PlatformToolSupport {
    public static let globalOptions: [OptionSpec] = StandardOptions.output + PlatformOptions.specs()
    public static let environment: [ToolSpec.Entry] =
        StandardOptions.environment + [
            .init(
                "STARLINE_TOKEN",
                """
                A memory-only session for scripts: the token is used as is, nothing is read from or written to the session \
                store.
                """),
            .init(
                "STARLINE_CA_BUNDLE",
                """
                A PEM file of CA certificates to verify https:// servers with, in place of the system bundle: a platform \
                behind a private CA. Before the profile key caBundle and SSL_CERT_FILE. A missing or non-regular file is \
                CONFIG_ERROR (exit 2); a certificate that does not verify is TLS_ERROR (exit 7, not retried). Verification is \
                never turned off.
                """),
            .init(
                "SSL_CERT_FILE",
                """
                A CA bundle, as OpenSSL and gh read it, used when neither STARLINE_CA_BUNDLE nor the profile key caBundle \
                names one (Debian's libcurl ignores it by itself). CURL_CA_BUNDLE, the curl program's variable, is not read.
                """),
            .init("STARLINE_MACHINE_ID_FILE", "Read the machine id from this file instead of /etc/machine-id (tests)."),
            .init(
                "DBUS_SESSION_BUS_ADDRESS",
                """
                The D-Bus session bus of the desktop keyring, for a store whose key is in the keyring (sl-login --keyring); \
                without it such a store cannot be opened (KEYRING_UNAVAILABLE, exit 10).
                """)
        ]
    public static let files: [ToolSpec.Entry] = [
        .init(
            "$XDG_STATE_HOME/starline/sessions.db",
            """
            The session store (SQLite, 0600): candidate credentials sealed with XChaCha20-Poly1305, pending logins, \
            pending revocations, keyed by API origin, App ID and service.
            """),
        .init(
            "$XDG_STATE_HOME/starline/sessions.db-wal",
            """
            The store's write-ahead log: rows may live here until SQLite checkpoints; back up or copy the directory as a \
            whole.
            """),
        .init(
            "$XDG_STATE_HOME/starline/device.key",
            """
            The device key (0600) of the file custodian (the default); the sealing key mixes in the machine id \
            (/etc/machine-id, else /var/lib/dbus/machine-id), so a copied store does not open on another machine. With \
            sl-login --keyring the key is an item of the desktop keyring (schema cn.thestarline.Session) instead.
            """),
        .init(
            "$XDG_STATE_HOME/starline/host-id",
            "A generated machine id (0600), only on a machine without one; sl-login status names the source in use."),
        .init(
            "$XDG_STATE_HOME/starline/sessions.db.revoked-DIGEST",
            "A sign-out whose delete failed: later runs refuse the stored session it names until sl-login clear succeeds."),
        .init(
            "$XDG_STATE_HOME/starline/locks/",
            """
            Per-key lock files (flock): one serialises changes to the store, one lets concurrent restores share a \
            verification.
            """),
        StandardOptions.configFile
    ]

    /// The session client for this run, from the run's factory (`PlatformFactory.client`), for a command
    /// that needs nothing else of it.
    @MainActor
    public static func client(
        _ options: PlatformOptions, _ context: CommandContext, network: Bool = false,
        custodian: KeyCustodian? = nil
    ) throws -> StarlightClient {
        try PlatformFactory(options, context).client(network: network, custodian: custodian)
    }

    /// `--events`: each event stamped with the run's clock (`context.io.now()`).
    @MainActor
    static func attachEvents(_ client: StarlightClient, path: String, context: CommandContext) throws {
        let writer = try EventWriter(path: path, output: context.output)
        let io = context.io
        client.onSessionChanged = { session in
            writer.write(
                .object([
                    ("event", .string("sessionChanged")), ("time", .string(Timestamp.rfc3339String(io.now().seconds))),
                    ("session", session?.json() ?? .null)
                ]))
        }
        client.onError = { error in
            writer.write(
                .object([
                    ("event", .string("error")), ("time", .string(Timestamp.rfc3339String(io.now().seconds))),
                    ("error", error.json["error"] ?? .null)
                ]))
        }
    }
}
