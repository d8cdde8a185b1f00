import StarlineCore
import StarlineCrypto
import StarlineMemory

/// `--ttl` / `--idle`: at least a second, at most 30 days.
enum AgentDuration {
    static let range: ClosedRange<Int64> = 1...(30 * 86_400)
}

/// `sl-memory unlock`.
enum UnlockCommand: Command {
    static let ttl = Option<Duration>.duration(
        "ttl", help: "Lock again DURATION after unlocking.", default: 8 * 3_600, range: AgentDuration.range)
    static let idle = Option<Duration>.duration(
        "idle", help: "Lock again after DURATION without use.", default: 3_600, range: AgentDuration.range)
    static let keyring = Option<Bool>.flag(
        "keyring",
        help: """
            Also keep the data key in the desktop keyring (Secret Service), so later unlocks need no passphrase while the \
            keyring is unlocked; lock --forget removes it.
            """)
    static let spec = CommandSpec(
        "unlock", abstract: "Check the passphrase and start the agent that holds the vault's key (like ssh-agent)",
        discussion: """
            The agent is a background process of this user: it keeps the data key in locked memory (never swapped, never \
            dumped, not readable with ptrace) and serves it on a Unix socket under $XDG_RUNTIME_DIR to processes of the \
            same user only (peer credentials checked). It exits — wiping the key — after --ttl, after --idle without use, \
            on sl-memory lock, or on SIGTERM. The key never touches disk unwrapped. An unlock replaces a running agent of \
            the same vault.
            """,
        options: [ttl.spec, idle.spec, keyring.spec],
        examples: [
            Example("sl-memory unlock --ttl 8h --idle 30m", "Unlock for a working day, locking after half an hour of rest."),
            Example("sl-memory unlock --passphrase-file ~/.config/starline/memory.pass --ttl 10m && sl-memory search invoice", "A script.")
        ])
    struct Options { var memory: MemoryOptions; var ttl: Int64; var idle: Int64; var keyring: Bool }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(
            memory: try MemoryOptions(arguments), ttl: try arguments[ttl].components.seconds, idle: try arguments[idle].components.seconds,
            keyring: try arguments[keyring])
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let access = try VaultAccess(options.memory, context)
        var passphrase = options.memory.passphrase(context)
        // Unlock always checks a passphrase: the agent's key is never taken on trust from another agent.
        let vault = try passphrase.attempt("Passphrase: ") {
            try MemoryVault.open(at: access.location, passphrase: $0, faults: access.faults)
        }
        if options.keyring { try MemoryKeyring.store(vault.dataKey, vaultID: vault.vaultID, environment: context.environment) }
        let pid = try MemoryAgentLauncher.start(
            key: vault.dataKey, vaultID: vault.vaultID, ttl: .seconds(options.ttl), idle: .seconds(options.idle),
            environment: context.environment, executable: "/proc/self/exe",
            arguments: [MemoryAgentServer.detachedAgentArgument])
        let now = context.io.now()
        context.output.emit(
            .object([
                ("unlocked", .bool(true)), ("vaultId", .string(vault.vaultID)), ("agentPid", .int(Int64(pid))),
                ("expiresAt", .string((now + options.ttl).rfc3339)), ("idleSeconds", .int(options.idle)),
                ("keyring", .bool(options.keyring))
            ]))
        return .ok
    }
}

/// `sl-memory lock`.
enum LockCommand: Command {
    static let forget = Option<Bool>.flag("forget", help: "Also remove the data key from the desktop keyring (see unlock --keyring).")
    static let spec = CommandSpec(
        "lock", abstract: "Stop the agent (its key is wiped); --forget also removes the key from the keyring", options: [forget.spec])
    struct Options { var memory: MemoryOptions; var forget: Bool }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(memory: try MemoryOptions(arguments), forget: try arguments[forget])
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let access = try VaultAccess(options.memory, context)
        let vaultID = try MemoryVault.vaultID(at: access.location, faults: access.faults)
        let stopped = try MemoryAgentClient.stop(vaultID: vaultID, environment: context.environment)
        let forgotten = options.forget ? try MemoryKeyring.forget(vaultID: vaultID, environment: context.environment) : false
        context.output.emit(.object([("locked", .bool(true)), ("agentStopped", .bool(stopped)), ("keyringForgotten", .bool(forgotten))]))
        return .ok
    }
}

/// `sl-memory status`.
enum StatusCommand: Command {
    static let spec = CommandSpec(
        "status", abstract: "Whether the vault exists, the agent runs (and until when), and the keyring holds its key",
        discussion: "Needs no passphrase and decrypts nothing.")
    static func options(_ arguments: ParsedArguments) throws -> MemoryOptions { try MemoryOptions(arguments) }
    static func run(_ options: MemoryOptions, _ context: CommandContext) throws -> ExitStatus {
        let access = try VaultAccess(options, context)
        var fields: [(String, JSON)] = [("vault", .string(access.location.directory))]
        guard MemoryVault.exists(at: access.location) else {
            context.output.emit(.object(fields + [("exists", .bool(false))]))
            return .ok
        }
        let vaultID = try MemoryVault.vaultID(at: access.location, faults: access.faults)
        fields += [("exists", .bool(true)), ("vaultId", .string(vaultID))]
        let agent = try MemoryAgentClient.status(vaultID: vaultID, environment: context.environment)
        fields.append(("agent", agent?.json ?? .null))
        fields.append(("unlocked", .bool(agent != nil)))
        fields.append(("keyring", .string(MemoryKeyring.state(vaultID: vaultID, environment: context.environment))))
        context.output.emit(.object(fields))
        return .ok
    }
}
