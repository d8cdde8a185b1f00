// Only the test bundles can import Testing: a plain `swift build` (the release build of `make build` and the
// package check) compiles this support target without it.
#if canImport(Testing)
import Glibc
import Testing

extension Trait where Self == ConditionTrait {
    /// The test needs root, and says why: it gives a file to another uid (chown) or runs a process as another user
    /// (setpriv), which an ordinary user cannot. Started by an ordinary user (`make test` without root), it is
    /// skipped with that reason; everything else runs the same for root and for an ordinary user (`ToolUser`).
    public static func requiresRoot(_ why: Comment, sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(if: geteuid() == 0, why, sourceLocation: sourceLocation)
    }
}
#endif
