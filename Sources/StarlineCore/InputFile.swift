#if canImport(Glibc)
import Glibc
#endif

/// A file the user names for a tool to read (an import, a batch, a plan, a seed): opened once, checked with
/// fstat on that descriptor, and read from it only — never examined by path and then opened again, which a
/// file swapped in between would slip through. A directory, socket or other special file is refused; regular
/// files, FIFOs and character devices (`<(…)`, `/dev/stdin`) are read. The open is non-blocking, so a FIFO
/// nobody writes does not hang it; reads then block as usual. Secret files go through stricter checks
/// (owner and mode: sl-memory's `SecretLines`, `PrivateFiles`), state files through `AtomicFile.read`.
public enum InputFile {
    /// The open descriptor (the caller closes it); `what` names the file in errors ("the plan").
    public static func open(_ path: String, what: String) throws(StarlineError) -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { throw FileBytes.posixError("cannot open \(what) \(path)", path: path) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let error = FileBytes.posixError("cannot examine \(what) \(path)", path: path)
            close(fd)
            throw error
        }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG || type == S_IFIFO || type == S_IFCHR else {
            close(fd)
            let kind = type == S_IFDIR ? "a directory" : type == S_IFSOCK ? "a socket" : "not a regular file"
            throw StarlineError(.usage, "cannot read \(what) \(path): it is \(kind)",
                                details: .object([("path", .string(path)), ("mode", .string(PrivateFiles.octal(info.st_mode)))]))
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// The whole file, refused past `maxBytes` as soon as it is seen (never buffered whole first).
    public static func read(_ path: String, what: String, maxBytes: Int) throws -> [UInt8] {
        let fd = try open(path, what: what)
        defer { close(fd) }
        return try FileBytes.read(fd: fd, name: path, maxBytes: maxBytes)
    }
}
