#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineCrypto
import StarlineMemory

/// The options every `sl-memory` command takes: which vault, and where a passphrase comes from.
struct MemoryOptions: OptionGroup {
    static let vault = Option<String?>.string(
        "vault", "DIR", help: "Use the vault in DIR instead of <data>/memory.", env: "STARLINE_MEMORY_VAULT",
        completion: .directory)
    static let specs: [OptionSpec] = [vault.spec] + PassphraseSource.specs

    var vaultDirectory: String?
    var passphraseGiven: PassphraseSource.Given

    init(_ arguments: ParsedArguments) throws {
        vaultDirectory = try arguments[Self.vault]
        if let dir = vaultDirectory, dir.isEmpty {
            throw StarlineError(.usage, "--vault (or STARLINE_MEMORY_VAULT) is empty", details: .object([("option", .string("vault"))]))
        }
        passphraseGiven = try PassphraseSource.given(arguments)
    }

    /// Where this run's passphrases come from.
    func passphrase(_ context: CommandContext) -> PassphraseSource {
        PassphraseSource(passphraseGiven, environment: context.environment, stdinIsTerminal: context.io.stdinIsTerminal)
    }

    /// `--vault DIR` (its pin beside the default one, keyed by the directory), or `<data>/memory`.
    func location(_ paths: StarlinePaths) -> VaultLocation {
        guard let dir = vaultDirectory else { return VaultLocation(paths: paths) }
        let absolute = dir.hasPrefix("/") ? dir : Self.currentDirectory() + "/" + dir
        // BLAKE2b's shortest output is 16 bytes (libsodium's crypto_generichash_BYTES_MIN): the pin's name carries
        // all of them.
        let digest = GenericHash.hash(Array(absolute.utf8), length: GenericHash.minimumLength)
            .map { String($0, radix: 16).leftPadded(2) }.joined()
        return VaultLocation(directory: absolute, pinPath: paths.state + "/memory/pin-" + digest)
    }

    static func currentDirectory() -> String {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let ok = buffer.withUnsafeMutableBufferPointer {
            getcwd(UnsafeMutableRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), $0.count) != nil
        }
        guard ok else { return "." }
        return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}

/// Opening the vault for a command: the key comes from, in order, an explicitly given passphrase (always
/// checked: W2), the unlock agent, the keyring (`unlock --keyring`), or the terminal. Without any: LOCKED
/// (exit 13), naming the ways.
struct VaultAccess {
    let location: VaultLocation
    let faults: VaultFaults
    let environment: Environment

    init(_ options: MemoryOptions, _ context: CommandContext) throws {
        location = options.location(context.paths)
        faults = try VaultFaults(environment: context.environment)
        environment = context.environment
    }

    /// How the vault was unlocked, for `status` and result records.
    enum KeySource: String { case passphrase, agent, keyring }

    /// Opens the vault with the key the run has (see the type's comment).
    static func open(_ options: MemoryOptions, _ context: CommandContext) throws -> MemoryVault {
        var passphrase = options.passphrase(context)
        return try VaultAccess(options, context).open(&passphrase).vault
    }

    func open(_ passphrase: inout PassphraseSource) throws -> (vault: MemoryVault, source: KeySource) {
        if passphrase.isExplicit {
            return (
                try passphrase.attempt("Passphrase: ") { try MemoryVault.open(at: location, with: .passphrase($0), faults: faults) },
                .passphrase
            )
        }
        // One database open for the id the agent is asked by and for the unlock itself.
        let keyless = try MemoryVault.keyless(at: location, faults: faults)
        let vaultID = keyless.vaultID
        if let key = try MemoryAgentClient.fetchKey(vaultID: vaultID, environment: environment) {
            do {
                return (try keyless.open(with: .dataKey(key)), .agent)
            } catch let error as StarlineError where error.code == .wrongKey {
                // A rekey since the unlock: the agent's key is stale. Stop it; the passphrase decides below.
                _ = try? MemoryAgentClient.stop(vaultID: vaultID, environment: environment)
            }
        }
        if let key = try MemoryKeyring.lookup(vaultID: vaultID, environment: environment) {
            return (try keyless.open(with: .dataKey(key)), .keyring)
        }
        guard passphrase.canPrompt else {
            throw StarlineError(
                .locked,
                """
                the memory vault is locked: run sl-memory unlock, or give the passphrase with --passphrase-fd, \
                --passphrase-file or STARLINE_MEMORY_PASSPHRASE
                """,
                details: .object([("vault", .string(location.directory))]))
        }
        return (try passphrase.attempt("Passphrase for \(location.directory): ") { try keyless.open(with: .passphrase($0)) }, .passphrase)
    }

    /// The key of a running agent or the keyring (`unlock --keyring`), without a passphrase; nil when neither has it.
    func agentOrKeyringKey() throws -> SecretBytes? {
        let vaultID = try MemoryVault.vaultID(at: location, faults: faults)
        if let key = try MemoryAgentClient.fetchKey(vaultID: vaultID, environment: environment) { return key }
        return try MemoryKeyring.lookup(vaultID: vaultID, environment: environment)
    }
}
