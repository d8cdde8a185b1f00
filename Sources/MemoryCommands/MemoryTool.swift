import StarlineCore
import StarlineMemory

/// `sl-memory`: the encrypted memory vault (W2, W3). Local only: nothing here touches the network.
public enum MemoryTool {
    static let spec = CommandSpec(
        "sl-memory", abstract: "the encrypted memory vault: notes, attachments, search, an unlock agent and age exports",
        discussion: """
            sl-memory keeps notes and their attachments in an encrypted vault (<data>/memory): every title, text, tag and file name is sealed with XChaCha20-Poly1305, attachments are streamed in authenticated chunks (secretstream), and a sealed manifest with a counter that only goes up detects a record deleted, swapped or rolled back. The last counter is also kept outside the vault (<state>/memory), so restoring an older copy of the whole vault is reported (ROLLBACK_DETECTED, exit 12) until verify --accept-rollback. Search uses an encrypted index: it decrypts only the notes it finds.

            The vault's data key is random and wrapped by a key derived from the passphrase (Argon2id); it does not depend on the account login (W2). A command gets the key from an explicitly given passphrase (--passphrase-fd, --passphrase-file, STARLINE_MEMORY_PASSPHRASE — always checked), else the agent started by sl-memory unlock, else the desktop keyring (unlock --keyring), else the terminal; otherwise the vault is locked (exit 13). A wrong passphrase is exit 13; damaged data is exit 12 naming the record or file, never an empty vault. Every change is one transaction: kill -9 at any instant leaves the old or the new content.
            """,
        examples: [
            Example("sl-memory init && sl-memory unlock --ttl 8h", "Create the vault, then unlock it for the day."),
            Example("sl-memory add --title 'Router' --tag home 'admin password is on the sticker'", "Add a note."),
            Example("sl-memory search router --jsonl | jq -r .id", "Find notes."),
            Example("sl-memory export -o memory.age && age -d memory.age | head", "Export; age opens it with the share code.")
        ],
        exitStatuses: [
            (.ok, "done"), (.usage, "bad arguments, or the vault exists (init)"), (.notFound, "no vault, note or attachment"),
            (.storage, "the vault or keyring cannot be read or written"), (.data, "damaged data, a rollback, or an invalid export"),
            (.locked, "wrong passphrase or share code, or the vault is locked")
        ])

    public static let tool = Tool<CommandRunner>(
        name: "sl-memory",
        commands: .group(
            spec,
            [
                .command(InitCommand.self), .command(UnlockCommand.self), .command(LockCommand.self), .command(StatusCommand.self),
                .command(AddCommand.self), .command(ListCommand.self), .command(ShowCommand.self), .command(EditCommand.self),
                .command(SearchCommand.self), .command(AttachCommand.self), .command(GetCommand.self), .command(RemoveCommand.self),
                .command(PasswdCommand.self), .command(RekeyCommand.self), .command(VerifyCommand.self),
                .command(ExportCommand.self), .command(ImportCommand.self)
            ]),
        globalOptions: StandardOptions.output + MemoryOptions.specs,
        environment: StandardOptions.environment + [
            .init("STARLINE_MEMORY_VAULT", "The vault directory, as --vault."),
            .init(
                "STARLINE_MEMORY_PASSPHRASE", "The vault passphrase (for scripts; prefer --passphrase-file or the agent). Always checked."),
            .init("STARLINE_MEMORY_SHARE_CODE", "The share code for import, instead of the terminal."),
            .init("XDG_RUNTIME_DIR", "Where the agent's socket lives (a 0700 directory of this user)."),
            .init("DBUS_SESSION_BUS_ADDRESS", "The desktop keyring's D-Bus session, for unlock --keyring.")
        ],
        files: [
            .init(
                "$XDG_DATA_HOME/starline/memory/vault.db",
                "The vault (SQLite, 0600): header, sealed records, manifest, search index; format in docs/formats.md."),
            .init("$XDG_DATA_HOME/starline/memory/attachments/", "Attachment files, encrypted in chunks (0600)."),
            .init(
                "$XDG_STATE_HOME/starline/memory/pin",
                """
                The last manifest counter seen on this machine and the vault header's checksum at that counter (rollback and \
                header-edit detection).
                """),
            .init(
                "$XDG_STATE_HOME/starline/memory/pin.fingerprint",
                """
                Proof (MACed with a key of the vault) that the last full check passed on vault.db as it still is, so an \
                unchanged vault opens without re-checking every record (0600; safe to delete).
                """),
            .init("$XDG_RUNTIME_DIR/starline/", "The agent's socket (0700 directory).")
        ],
        seeAlso: ["age(1)", "ssh-agent(1)", "sl-tasks(1)"])

    public static func main() -> Never {
        // `unlock` re-executes this binary as the agent (MemoryAgentLauncher): never typed, never parsed.
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == MemoryAgentServer.detachedAgentArgument {
            MemoryAgentServer.runAsDetachedAgent(arguments: arguments, environment: .process)
        }
        ProcessHardening.makeUndumpable()
        ToolMain.main(tool)
    }
}
