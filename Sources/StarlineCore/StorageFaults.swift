/// TEST-ONLY storage fault injection for the SQLite stores (S13, S17: storage faults that work even as
/// root, which ignores file modes). Not a feature: do not document it to users or rely on it in scripts.
/// Debug builds only: a release build ignores the variable (`TestHooks`).
///
/// A value given to a store's initialiser (`SQLiteStore`, `SessionStore`): no store reads the environment
/// for it. The tool layer parses `STARLINE_TEST_STORAGE_FAULT` from the invocation's environment with
/// `init(environment:)` and passes the result in, so tests can inject faults without touching the process
/// environment. The store's operations call `check` where the fault applies.
///
/// `STARLINE_TEST_STORAGE_FAULT` is a comma-separated list of fault kinds (what they fail in the session
/// store):
/// - `read`   — `SessionState.candidate()` throws STORAGE_ERROR (the candidate cannot be read);
/// - `write`  — `saveCandidate`, `savePendingLogin` and `addPendingRevocation` throw STORAGE_ERROR;
/// - `delete` — `deleteCandidate` throws STORAGE_ERROR;
/// - `marker` — `setRevocationMarker` and `clearRevocationMarker` throw STORAGE_ERROR (without it the
///   marker works even while `delete` or `write` are injected, which is the S13 scenario);
/// - `commit` — every `withState` transaction fails at its end, after its body ran, and is rolled back (what
///   a full disk does to a COMMIT).
///
/// The failing call changes nothing. Unknown kinds are refused (USAGE) so a typo cannot make a fault test
/// pass vacuously. Real faults (a directory where `sessions.db` or `device.key` should be, unreadable files,
/// a changed machine id) need no hook and surface as STORAGE_ERROR as well.
public struct StorageFaults: Sendable, Equatable {
    public static var environmentVariable: String { TestHooks.Variable.storageFault.name }

    public enum Kind: String, Sendable, CaseIterable {
        case read, write, delete, marker, commit
    }

    public var kinds: Set<Kind>

    public init(_ kinds: Set<Kind> = []) { self.kinds = kinds }

    /// Parses `STARLINE_TEST_STORAGE_FAULT`; unset or empty means no fault, and so does a release build.
    public init(environment: Environment) throws(StarlineError) {
        guard let text = TestHooks.value(.storageFault, in: environment) else {
            self.init()
            return
        }
        var kinds = Set<Kind>()
        for part in text.split(separator: ",") {
            let word = part.filter { $0 != " " }
            if word.isEmpty { continue }
            guard let kind = Kind(rawValue: word) else {
                throw StarlineError(
                    .usage,
                    "\(Self.environmentVariable): unknown fault '\(word)' (known: \(Kind.allCases.map { $0.rawValue }.joined(separator: ", ")))",
                    details: .object([("variable", .string(Self.environmentVariable))]))
            }
            kinds.insert(kind)
        }
        self.init(kinds)
    }

    public func contains(_ kind: Kind) -> Bool { kinds.contains(kind) }

    /// Throws the injected STORAGE_ERROR when `kind` is set; `what` names the operation ("write the stored
    /// session"). Call it before the operation changes anything, so the failing call changes nothing.
    public func check(_ kind: Kind, _ what: String) throws(StarlineError) {
        guard kinds.contains(kind) else { return }
        throw StarlineError(
            .storage, "cannot \(what): injected storage fault (\(Self.environmentVariable)=\(kind.rawValue))",
            details: .object([("fault", .string(kind.rawValue))]))
    }
}
