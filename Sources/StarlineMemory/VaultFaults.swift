#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// TEST-ONLY fault injection for the vault, like `StorageFaults` for the other stores: a value given to
/// `MemoryVault`, never read from the environment here (the front-end parses
/// `STARLINE_TEST_STORAGE_FAULT` and `STARLINE_TEST_VAULT_CRASH` with `init(environment:)`).
///
/// `storage` faults: `commit` fails every write transaction at its end, after its body ran (a full disk at
/// COMMIT), and the body's file work is undone as a real failure undoes it; `write` fails every write
/// before it changes anything; `read` fails every read.
///
/// A `crash` point simulates `kill -9` at that instant: the operation stops with STORAGE_ERROR and, unlike
/// an ordinary failure, cleans nothing up — the temporary or renamed attachment files stay where a killed
/// process would leave them, for the next run to find. `rekeyCrashAfter` stops a rekey the same way after
/// that many records were moved to the new key.
public struct VaultFaults: Sendable, Equatable {
    public static var crashVariable: String { TestHooks.Variable.vaultCrash.name }

    public enum CrashPoint: String, Sendable, CaseIterable {
        /// After an attachment's temporary file is written and synced, before the transaction.
        case afterAttachmentWrite = "after-attachment-write"
        /// Inside the transaction, after the attachment file got its final name, before COMMIT.
        case beforeCommit = "before-commit"
        /// After COMMIT, before replaced attachment files are removed and the pin is raised.
        case afterCommit = "after-commit"
    }

    public var storage: StorageFaults
    public var crash: CrashPoint?
    public var rekeyCrashAfter: Int?
    /// In-process tests only: the open check, once its snapshot began, creates `<gate>.reached` and waits
    /// (10 s at most) for `<gate>.go` — a window in which the test commits from another vault object.
    public var openCheckGate: String?

    public init(storage: StorageFaults = StorageFaults(), crash: CrashPoint? = nil, rekeyCrashAfter: Int? = nil) {
        self.storage = storage
        self.crash = crash
        self.rekeyCrashAfter = rekeyCrashAfter
    }

    /// `STARLINE_TEST_STORAGE_FAULT` as for the other stores, and `STARLINE_TEST_VAULT_CRASH` = a crash
    /// point or `rekey-after:N`. Unknown values are USAGE, so a typo cannot make a test pass vacuously. A
    /// release build reads neither (`TestHooks`).
    public init(environment: Environment) throws(StarlineError) {
        self.init(storage: try StorageFaults(environment: environment))
        guard let text = TestHooks.value(.vaultCrash, in: environment) else { return }
        if text.hasPrefix("rekey-after:"), let n = Int(text.dropFirst("rekey-after:".count)), n >= 0 {
            rekeyCrashAfter = n
        } else if let point = CrashPoint(rawValue: text) {
            crash = point
        } else {
            throw StarlineError(
                .usage,
                "\(Self.crashVariable): unknown crash point '\(text)' (known: \(CrashPoint.allCases.map(\.rawValue).joined(separator: ", ")), rekey-after:N)",
                details: .object([("variable", .string(Self.crashVariable))]))
        }
    }

    /// Waits at the open-check gate, when one is set.
    func waitAtOpenCheckGate() {
        guard let gate = openCheckGate else { return }
        _ = try? AtomicFile.write([], to: gate + ".reached", sync: false)
        for _ in 0..<1_000 where access(gate + ".go", F_OK) != 0 { usleep(10_000) }
    }

    /// Throws the simulated crash when `point` is the configured one.
    func crashIf(_ point: CrashPoint) throws(StarlineError) {
        guard crash == point else { return }
        throw Self.crashError(point.rawValue)
    }

    static func crashError(_ point: String) -> StarlineError {
        StarlineError(.storage, "simulated crash (\(crashVariable)=\(point))", details: .object([("crash", .string(point))]))
    }

    /// True for the error of a simulated crash: clean-up that a killed process would not do is skipped.
    static func isCrash(_ error: Error) -> Bool {
        (error as? StarlineError)?.details?["crash"] != nil
    }
}
