#if canImport(Glibc)
import Glibc
#endif

/// The environment of every process the tools start (README, Security notes: no secret of a sign-in flow,
/// token or passphrase ever appears in the argv or environment of a process the tools start). A child's environment
/// is readable in /proc/PID/environ for as long as it runs — the unlock agent runs for hours — and lies in
/// ordinary, swappable memory; so what a tool was given to read once (`STARLINE_TOKEN`,
/// `STARLINE_MEMORY_PASSPHRASE`, a share code) stops with the tool. Every `posix_spawn` in the suite passes
/// `ChildEnvironment.entries(for:)` as its `envp`, never `environ` (a test checks the sources for it).
public enum ChildEnvironment {
    public enum Audience: Sendable {
        /// Another program (a browser): none of our variables at all (`STARLINE_*`); nothing of ours is its
        /// business.
        case otherProgram
        /// This binary re-executed as a helper (the unlock agent, the isolated QR scan): our settings
        /// (`STARLINE_HOME`, base URLs) but no secret.
        case sameTool
    }

    /// Whether a variable of ours holds a secret: the session token, the dev server's token, everything of
    /// sl-memory's (passphrase, share code), and any name that says it is a secret.
    public static func isSecret(_ name: String) -> Bool {
        guard name.hasPrefix("STARLINE_") else { return false }
        if name.hasPrefix("STARLINE_MEMORY_") || name.hasPrefix("STARLINE_TEST_") { return true }
        return name.hasSuffix("_KEY") || ["TOKEN", "PASSPHRASE", "PASSWORD", "SECRET", "SHARE_CODE"].contains { name.contains($0) }
    }

    /// Whether `name` may go to a child of `audience`.
    public static func passes(_ name: String, to audience: Audience) -> Bool {
        switch audience {
        case .otherProgram: !name.hasPrefix("STARLINE_")
        case .sameTool: !isSecret(name)
        }
    }

    /// A NULL-terminated `envp` for posix_spawn: pointers into this process's `environ` (valid while nothing
    /// calls setenv, which no tool does once running), without what `audience` must not see.
    public static func entries(for audience: Audience) -> [UnsafeMutablePointer<CChar>?] {
        var result: [UnsafeMutablePointer<CChar>?] = []
        var entry = environ
        while let variable = entry.pointee {
            let text = String(cString: variable)
            let name = text.firstIndex(of: "=").map { String(text[..<$0]) } ?? text
            if passes(name, to: audience) { result.append(variable) }
            entry += 1
        }
        result.append(nil)
        return result
    }
}
