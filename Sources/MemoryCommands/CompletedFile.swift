#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// A file that appears only when complete (`get -o`, `export -o`): written as `PATH.partial-PID` (0600, O_EXCL,
/// tracked for the signal handler before it exists), synced, optionally checked, then renamed over PATH. Any
/// failure removes the partial file; PATH is never left half-written.
enum CompletedFile {
    /// `body` writes to the descriptor; `check` gets the synced, closed partial file's path and what `body`
    /// returned, before the rename.
    static func write<T>(to path: String, check: (_ partialPath: String, _ written: T) throws -> Void = { _, _ in },
                         _ body: (_ fd: Int32) throws -> T) throws -> T {
        let temporary = path + ".partial-\(getpid())"
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
            try check(temporary, result)
            guard rename(temporary, path) == 0 else { throw FileBytes.posixError("cannot rename \(temporary) to \(path)", path: path) }
            return result
        } catch {
            unlink(temporary)
            throw error
        }
    }
}
