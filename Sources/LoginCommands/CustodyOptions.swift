import StarlineCore
import StarlinePlatform

/// Where a sign-in keeps the session store's sealing key (S3): `--keyring`, `--no-keyring`, or
/// `--key-custodian file|keyring` (also STARLINE_KEYRING and the config key `keyring`, which take yes/no words
/// too). The choice is recorded in the store, so sl-restore and sl-sessions — and a later sign-in that does
/// not choose — use the same custodian or fail with a clear error.
enum CustodyOptions {
    static let keyring = Option<Bool>.flag(
        "keyring",
        help: """
            Keep the session store's key in the desktop keyring (Secret Service): readable only while it is unlocked, \
            never from a copied state directory. Needs a D-Bus session.
            """)
    static let noKeyring = Option<Bool>.flag(
        "no-keyring", help: "Keep the session store's key in device.key beside the store (the default; what cron jobs and servers use).")
    static let custodian = Option<KeyCustodian?>.converted(
        .value(
            "key-custodian", "file|keyring",
            help: """
                Where the session store's key lives, as --keyring/--no-keyring (yes/no also accepted from the environment and \
                the profile).
                """,
            env: "STARLINE_KEYRING", configKey: "keyring"),
        { text in
            guard let custodian = KeyCustodian.parse(yesNo: text) else {
                throw StarlineError(
                    .usage,
                    "invalid key custodian '\(text)' (STARLINE_KEYRING, keyring or --key-custodian): expected file or keyring (or yes/no)",
                    details: .object([("value", .string(text))]))
            }
            return custodian
        })

    static let specs: [OptionSpec] = [keyring.spec, noKeyring.spec, custodian.spec]

    /// The custodian asked for, nil when none was (the store's recorded one is kept).
    static func preferred(_ arguments: ParsedArguments) throws -> KeyCustodian? {
        let yes = try arguments[keyring], no = try arguments[noKeyring]
        if yes && no { throw StarlineError(.usage, "--keyring and --no-keyring cannot be used together") }
        if yes { return .keyring }
        if no { return .file }
        return try arguments[custodian]
    }
}
