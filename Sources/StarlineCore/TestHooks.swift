/// Test hooks — environment variables that make a tool fail or crash on purpose at a chosen instant
/// (`STARLINE_TEST_STORAGE_FAULT`, `STARLINE_TEST_VAULT_CRASH`, `STARLINE_TEST_TAIL_KILL_AFTER_PRINT`) — exist
/// only in debug builds, which is what `swift build` and `make test` make. Release builds (`make`, the .deb)
/// are compiled without `STARLINE_TEST_HOOKS` (Package.swift: `.define(…, .when(configuration: .debug))`, as
/// swift-system compiles its mocking only into debug builds), so there no variable can make a user's run fail
/// or kill itself, and the names are not even in the binary (scripts/package-check greps for them).
public enum TestHooks {
    #if STARLINE_TEST_HOOKS
    public static let compiledIn = true
    #else
    public static let compiledIn = false
    #endif

    public enum Variable: String, Sendable, CaseIterable {
        case storageFault, vaultCrash, tailKillAfterPrint, cheapKeys

        /// The variable's name. Spelled out only in builds that have the hooks.
        public var name: String {
            #if STARLINE_TEST_HOOKS
            switch self {
            case .storageFault: "STARLINE_TEST_STORAGE_FAULT"
            case .vaultCrash: "STARLINE_TEST_VAULT_CRASH"
            case .tailKillAfterPrint: "STARLINE_TEST_TAIL_KILL_AFTER_PRINT"
            case .cheapKeys: "STARLINE_TEST_CHEAP_KEYS"
            }
            #else
            "(test hook \(rawValue), not in release builds)"
            #endif
        }
    }

    /// The hook's value in `environment`: nil when unset or empty, and always nil in a release build.
    public static func value(_ variable: Variable, in environment: Environment) -> String? {
        #if STARLINE_TEST_HOOKS
        guard let text = environment[variable.name], !text.isEmpty else { return nil }
        return text
        #else
        return nil
        #endif
    }
}
