#if canImport(Glibc)
import Glibc
#endif

/// Where output a user asked for with `-o FILE` goes. A regular file (or a new one) is replaced atomically: the
/// content is written beside it and renamed over it. Anything else is written in place, as a shell redirection
/// would: renaming over `/dev/null` (which root may do) would replace the device with a regular file for every
/// program on the machine, and renaming over a FIFO or `/dev/stdout` would never reach its reader.
///
/// A symbolic link is followed: the file it points to is replaced and the link kept (renaming over the link
/// would turn it into a copy). Nothing here applies to the suite's own state files, whose paths are ours and
/// whose symbolic links are refused (`AtomicFile`, `PrivateFiles`).
public enum OutputTarget: Equatable, Sendable {
    /// Replace this regular file (or create it) with temp file + rename; a link's target, resolved.
    case replace(String)
    /// Open this path and write it in place: a device, a FIFO, a socket, a `/proc` or `/dev/fd` path, a dangling
    /// link (whose target a redirection would create).
    case stream(String)

    /// What `path` is. A directory is `STORAGE_ERROR` (EISDIR); a path that cannot be inspected is
    /// `STORAGE_ERROR` with its errno.
    public static func resolve(_ path: String) throws(StarlineError) -> OutputTarget {
        // Nothing under /dev or /proc is a file to replace (/dev/stdout, /dev/fd/N, /proc/self/fd/N).
        if isSpecialPath(path) { return .stream(path) }
        var info = stat()
        if lstat(path, &info) != 0 {
            if errno == ENOENT { return .replace(path) }
            throw storageError("cannot write", path, errno)
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .replace(path)
        case S_IFDIR: throw storageError("cannot write", path, EISDIR)
        case S_IFLNK: break
        default: return .stream(path)
        }
        if stat(path, &info) != 0 {
            if errno == ENOENT { return .stream(path) }
            throw storageError("cannot write", path, errno)
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw storageError("cannot write", path, EISDIR)
        default: return .stream(path)
        }
        // A link through /dev/stdout or /proc/self/fd/1 reaches a file the shell opened: written through the
        // descriptor, so the shell's redirection (and its O_APPEND) holds.
        if linksThroughSpecialPath(path) { return .stream(path) }
        guard let resolved = realpath(path, nil) else { throw storageError("cannot write", path, errno) }
        defer { free(resolved) }
        return .replace(String(cString: resolved))
    }

    static func isSpecialPath(_ path: String) -> Bool {
        path.hasPrefix("/dev/") || path.hasPrefix("/proc/")
    }

    /// Whether a hop of the link chain at `path` (at most 40, as the kernel allows) names /dev or /proc.
    static func linksThroughSpecialPath(_ path: String) -> Bool {
        var current = path
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        for _ in 0..<40 {
            let n = readlink(current, &buffer, buffer.count - 1)
            guard n > 0 else { return false }
            let target = buffer.prefix(n).withUnsafeBufferPointer { String(decoding: UnsafeRawBufferPointer($0), as: UTF8.self) }
            if isSpecialPath(target) { return true }
            current = target.hasPrefix("/") ? target : AtomicFile.splitPath(current).directory + "/" + target
        }
        return false
    }

    /// Writes `bytes` to the user's output `path`: atomically for a regular file (`AtomicFile.write` with these
    /// settings), in place otherwise (created with `mode` less the umask when a dangling link names it).
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t, sync: Bool, applyUmask: Bool) throws {
        try write(to: path, mode: mode, sync: sync, applyUmask: applyUmask) { fd throws(StarlineError) in
            guard bytes.withUnsafeBytes({ FileBytes.write(fd: fd, $0) }) else { throw storageError("cannot write", path, errno) }
        }
    }

    /// The same, for content too large to hold: `fill` writes it to the descriptor (of the temporary file that
    /// replaces a regular file, or of the device or FIFO written in place).
    public static func write(
        to path: String, mode: mode_t, sync: Bool, applyUmask: Bool,
        _ fill: (Int32) throws(StarlineError) -> Void
    ) throws {
        switch try resolve(path) {
        case .replace(let file):
            try AtomicFile.write(to: file, mode: mode, sync: sync, applyUmask: applyUmask, fill)
        case .stream(let file):
            try writeInPlace(file, mode: mode) { fd in try fill(fd) }
        }
    }

    /// Opens a `.stream` target for writing (O_TRUNC: a shell's `>`; no effect on a device or FIFO; `mode` less
    /// the umask for a file a dangling link names), runs `body` on the descriptor and closes it. A failed close
    /// is an error: the data may not have been written.
    public static func writeInPlace<T>(_ path: String, mode: mode_t, _ body: (Int32) throws -> T) throws -> T {
        var fd: Int32
        repeat { fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw storageError("cannot write", path, errno) }
        let result: T
        do { result = try body(fd) } catch { close(fd); throw error }
        // On Linux the descriptor is released even when close fails, so it is never retried.
        guard close(fd) == 0 else { throw storageError("cannot write", path, errno) }
        return result
    }
}
