#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// A file that appears only when complete (`get -o`, `export -o`): written as `PATH.partial-PID` (0600, O_EXCL,
/// tracked for the signal handler before it exists), synced, optionally checked, then renamed over PATH. Any
/// failure removes the partial file; PATH is never left half-written. A PATH that is not a regular file (a
/// device such as /dev/null, a FIFO, /dev/stdout: `OutputTarget`) is written in place instead, as a redirection
/// would; a check, which needs the written file, is then refused.
public enum CompletedFile {
    /// `body` writes to the descriptor; `check` gets the synced, closed partial file's path and what `body`
    /// returned, before the rename.
    public static func write<T>(
        to path: String, check: ((_ partialPath: String, _ written: T) throws -> Void)? = nil,
        _ body: (_ fd: Int32) throws -> T
    ) throws -> T {
        let file: String
        switch try OutputTarget.resolve(path) {
        case .replace(let resolved): file = resolved
        case .stream(let stream):
            guard check == nil else {
                throw StarlineError(.usage, "\(path) is not a regular file, so what is written there cannot be read back to verify it")
            }
            return try OutputTarget.writeInPlace(stream, mode: 0o600, body)
        }
        let temporary = file + ".partial-\(getpid())"
        let slot = Interrupts.track(temporary)
        defer { Interrupts.untrack(slot) }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileBytes.posixError("cannot create \(temporary)", path: temporary) }
        var isOpen = true
        defer { if isOpen { close(fd) } }
        do {
            let result = try body(fd)
            guard fsync(fd) == 0 else { throw FileBytes.posixError("cannot write \(temporary)", path: temporary) }
            close(fd)
            isOpen = false
            try check?(temporary, result)
            guard rename(temporary, file) == 0 else { throw FileBytes.posixError("cannot rename \(temporary) to \(file)", path: path) }
            return result
        } catch {
            unlink(temporary)
            throw error
        }
    }
}
