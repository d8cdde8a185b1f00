#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// Where the dev server keeps its state without `--db`: a WAL database in a directory of its own under the
/// runtime directory (`$XDG_RUNTIME_DIR/starline`, tmpfs on a systemd machine; `DIR/run` with
/// `STARLINE_HOME=DIR`), that never waits for the disk and is removed when the server stops.
///
/// Not SQLite's `:memory:`, which it was: an in-memory database walks its whole page cache at the end of every
/// write transaction (`pcache1TruncateUnsafe`), so a server holding a million sessions answered each
/// revocation more slowly the fuller it was, and kept all of it in its own heap (bench/RESULTS.md, "Dev
/// server store"). The file's pages live in the kernel's page cache instead, out of the server's RSS.
///
/// A server killed with SIGKILL cannot remove its directory; the next server started in the same runtime
/// directory removes every `devserver-PID-…` directory whose process is gone.
package final class ScratchStore: Sendable {
    /// The directory (`RUNTIME/devserver-PID-XXXXXX`), mode 0700.
    package let directory: String
    package var databasePath: String { directory + "/" + Self.fileName }

    static let fileName = "state.db"
    static let prefix = "devserver-"

    private init(directory: String) { self.directory = directory }

    /// A new directory under `runtime` (created 0700 when missing), after removing those of servers that
    /// are gone. Throws when the runtime directory cannot be used (not ours, not writable).
    package static func create(in runtime: String) throws -> ScratchStore {
        try PrivateFiles.ensurePrivateDirectory(runtime)
        removeAbandoned(in: runtime)
        var template = Array("\(runtime)/\(prefix)\(getpid())-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            let code = errno
            throw StarlineError(
                .storage, "cannot create the dev server's scratch directory in \(runtime): \(String(cString: strerror(code)))",
                details: .object([("path", .string(runtime)), ("errno", .int(Int(code)))]))
        }
        return ScratchStore(directory: String(cString: made))
    }

    /// Removes the database, its WAL and shared-memory files, and the directory.
    package func remove() { Self.removeDirectory(directory) }

    /// Every `devserver-PID-…` directory of `runtime` whose process no longer exists (a server that was
    /// killed). A live server's directory is left alone, whoever started it; a pid reused since by another
    /// process keeps its directory until that one ends too.
    static func removeAbandoned(in runtime: String) {
        guard let dir = opendir(runtime) else { return }
        var abandoned: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasPrefix(prefix) else { continue }
            let rest = name.dropFirst(prefix.count)
            guard let dash = rest.firstIndex(of: "-"), let pid = Int32(rest[..<dash]), pid > 0 else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { abandoned.append(runtime + "/" + name) }
        }
        closedir(dir)
        for path in abandoned { removeDirectory(path) }
    }

    /// The files SQLite makes beside a WAL database, then the directory; nothing else is ever in it.
    private static func removeDirectory(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + "/" + fileName + suffix) }
        rmdir(path)
    }
}
