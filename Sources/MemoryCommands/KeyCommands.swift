import StarlineCore
import StarlineCrypto
import StarlineMemory

/// How expensive the passphrase key is (Argon2id): libsodium's levels.
enum KDFLevel: String, CaseIterable, Sendable {
    case interactive, moderate

    var limits: Argon2id.Limits {
        switch self {
        case .interactive: .interactive
        case .moderate: .moderate
        }
    }

    /// The limits a new passphrase key gets: this level's, or libsodium's least in a debug build whose
    /// environment sets STARLINE_TEST_CHEAP_KEYS=1 (`TestHooks`: end-to-end tests that are not about the key's
    /// cost spend no seconds deriving it; the release build has no such variable).
    func limits(_ context: CommandContext) -> Argon2id.Limits { Self.cheapKeys(context) ? .minimum : limits }

    /// An export's scrypt work factor: age's default (2^18), or 2^10 under the same hook.
    static func exportWorkFactor(_ context: CommandContext) -> Int { cheapKeys(context) ? 10 : AgeEncryptor.defaultWorkFactor }

    private static func cheapKeys(_ context: CommandContext) -> Bool { TestHooks.value(.cheapKeys, in: context.environment) == "1" }

    static func json(_ limits: Argon2id.Limits) -> JSON {
        .object([
            ("algorithm", .string("argon2id")), ("opsLimit", .int(Int64(clamping: limits.opsLimit))),
            ("memLimitBytes", .int(Int64(limits.memLimit)))
        ])
    }
}

/// `sl-memory init`.
enum InitCommand: Command {
    static let kdf = Option<KDFLevel>.choice(
        "kdf", "LEVEL", help: "Cost of the passphrase key (Argon2id): interactive is 64 MiB and 2 passes, moderate 256 MiB and 3.",
        default: .interactive)
    static let spec = CommandSpec(
        "init", abstract: "Create the vault, protected by a passphrase",
        discussion: """
            The vault gets a random data key, wrapped by a key derived from the passphrase with Argon2id; nothing about \
            it depends on the account login (W2). The passphrase is asked twice on a terminal, or read from \
            --passphrase-fd, --passphrase-file or STARLINE_MEMORY_PASSPHRASE. An existing vault is never overwritten \
            (VAULT_EXISTS, exit 2).
            """,
        options: [kdf.spec])
    struct Options { var memory: MemoryOptions; var kdf: KDFLevel }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(memory: try MemoryOptions(arguments), kdf: try arguments[kdf])
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let access = try VaultAccess(options.memory, context)
        var passphrase = options.memory.passphrase(context)
        let secret = try passphrase.read("New passphrase: ", confirm: true)
        let vault = try MemoryVault.create(
            at: access.location, passphrase: secret, limits: options.kdf.limits(context), faults: access.faults)
        context.output.emit(
            .object([
                ("vault", .string(access.location.directory)), ("vaultId", .string(vault.vaultID)),
                ("kdf", KDFLevel.json(vault.limits))
            ]))
        return .ok
    }
}

/// `sl-memory passwd`.
enum PasswdCommand: Command {
    static let spec = CommandSpec(
        "passwd", abstract: "Change the passphrase (the data key is only re-wrapped)",
        discussion: """
            Reads the current passphrase, then the new one (twice on a terminal; one a line from --passphrase-fd or \
            --passphrase-file). Nothing else is re-encrypted: use rekey for a new data key. A running agent keeps working.
            """,
        options: [kdf.spec])
    static let kdf = Option<KDFLevel?>.choice("kdf", "LEVEL", help: "Cost of the new passphrase key (default: the current one's).")
    struct Options { var memory: MemoryOptions; var kdf: KDFLevel? }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(memory: try MemoryOptions(arguments), kdf: try arguments[kdf])
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let access = try VaultAccess(options.memory, context)
        var passphrase = options.memory.passphrase(context)
        let (vault, current) = try passphrase.attempt("Current passphrase: ") {
            (try MemoryVault.open(at: access.location, passphrase: $0, faults: access.faults), $0)
        }
        let new = try passphrase.read("New passphrase: ", confirm: true)
        try vault.changePassphrase(current: current, new: new, limits: options.kdf?.limits(context))
        context.output.emit(.object([("changed", .bool(true)), ("vaultId", .string(vault.vaultID)), ("kdf", KDFLevel.json(vault.limits))]))
        return .ok
    }
}

/// `sl-memory rekey`.
enum RekeyCommand: Command {
    static let spec = CommandSpec(
        "rekey", abstract: "Re-encrypt everything under a new data key (resumes an interrupted rekey)",
        discussion: """
            Needs the passphrase (an agent's key is not enough: the new key is wrapped by it). Records and attachments \
            move in batches, each committed; a rekey interrupted at any point is finished by running rekey again. The \
            agent, if any, is stopped: unlock again afterwards.
            """)
    static func options(_ arguments: ParsedArguments) throws -> MemoryOptions { try MemoryOptions(arguments) }
    static func run(_ options: MemoryOptions, _ context: CommandContext) throws -> ExitStatus {
        let access = try VaultAccess(options, context)
        var passphrase = options.passphrase(context)
        let (vault, secret) = try passphrase.attempt("Passphrase: ") {
            (try MemoryVault.open(at: access.location, passphrase: $0, faults: access.faults), $0)
        }
        let result = try vault.rekey(passphrase: secret)
        _ = try? MemoryAgentClient.stop(vaultID: vault.vaultID, environment: context.environment)
        context.output.emit(
            .object([
                ("rekeyed", .bool(true)), ("epoch", .int(Int64(result.epoch))), ("recordsMoved", .int(Int64(result.recordsMoved))),
                ("attachmentsMoved", .int(Int64(result.attachmentsMoved))), ("resumed", .bool(result.resumed))
            ]))
        return .ok
    }
}

/// `sl-memory verify`.
enum VerifyCommand: Command {
    static let acceptRollback = Option<Bool>.flag(
        "accept-rollback",
        help: """
            Accept a vault older than the last one seen here (restored from a backup on purpose): lowers the pin. Needs \
            the passphrase.
            """)
    static let spec = CommandSpec(
        "verify", abstract: "Check every record, attachment, the manifest, the index and the rollback pin",
        discussion: """
            Prints {\"ok\",\"records\",\"attachments\",\"counter\",\"problems\":[{\"kind\",\"subject\",\"message\"}]} and \
            exits 0 when the vault is whole, 12 when anything is wrong (every problem is listed, each naming the record \
            or file). A vault older than the last one seen on this machine is ROLLBACK_DETECTED until --accept-rollback.
            """,
        options: [acceptRollback.spec],
        exitStatuses: [
            (.ok, "the vault is whole"), (.data, "a problem was found (listed), or a rollback"), (.locked, "wrong passphrase, or locked")
        ])
    struct Options { var memory: MemoryOptions; var acceptRollback: Bool }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(memory: try MemoryOptions(arguments), acceptRollback: try arguments[acceptRollback])
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let access = try VaultAccess(options.memory, context)
        var passphrase = options.memory.passphrase(context)
        if options.acceptRollback {
            let vault = try passphrase.attempt("Passphrase: ") {
                try MemoryVault.acceptRollback(at: access.location, passphrase: $0, faults: access.faults)
            }
            context.output.emit(.object([("accepted", .bool(true)), ("counter", .int(Int64(clamping: vault.counter)))]))
            return .ok
        }
        // A vault that does not open (a record swapped, a rollback) is still checked, so every problem is listed.
        let key = passphrase.isExplicit ? nil : try access.agentOrKeyringKey()
        let report =
            try key.map { try MemoryVault.verify(at: access.location, with: .dataKey($0), faults: access.faults) }
            ?? passphrase.attempt("Passphrase: ") {
                try MemoryVault.verify(at: access.location, with: .passphrase($0), faults: access.faults)
            }
        let problems = JSON.array(
            report.problems.map {
                .object([("kind", .string($0.kind.rawValue)), ("subject", .string($0.subject)), ("message", .string($0.message))])
            })
        context.output.emit(
            .object([
                ("ok", .bool(report.isClean)), ("records", .int(Int64(report.records))), ("attachments", .int(Int64(report.attachments))),
                ("counter", .int(Int64(clamping: report.counter))), ("problems", problems)
            ]))
        guard report.isClean else {
            let first = report.problems[0]
            let code: ErrorCode = first.kind == .rollback ? .rollbackDetected : .vaultCorrupt
            throw StarlineError(
                code, "the vault has \(report.problems.count) problem\(report.problems.count == 1 ? "" : "s"): \(first)",
                details: .object([("problems", problems)]))
        }
        return .ok
    }
}
