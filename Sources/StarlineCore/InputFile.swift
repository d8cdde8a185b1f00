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
        let (fd, info) = try openExamined(path, failure: "cannot open \(what) \(path)")
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG || type == S_IFIFO || type == S_IFCHR else {
            close(fd)
            let kind = type == S_IFDIR ? "a directory" : type == S_IFSOCK ? "a socket" : "not a regular file"
            throw StarlineError(
                .usage, "cannot read \(what) \(path): it is \(kind)",
                details: .object([("path", .string(path)), ("mode", .string(PrivateFiles.octal(info.st_mode)))]))
        }
        makeBlocking(fd)
        return fd
    }

    /// The first half of every open of a named file the tools read (inputs here, exports, attachments and
    /// secret files in sl-memory): opened without waiting for a FIFO's writer (O_NONBLOCK) and never becoming
    /// the controlling terminal (O_NOCTTY), then examined on the descriptor. The caller decides from `info`
    /// what it accepts — closing `fd` when it refuses — and calls `makeBlocking` before reading.
    /// `failure` begins the error message of a failed open ("cannot read the file to attach, PATH").
    public static func openExamined(_ path: String, failure: String) throws(StarlineError) -> (fd: Int32, info: stat) {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { throw FileBytes.posixError(failure, path: path) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let error = FileBytes.posixError(failure, path: path)
            close(fd)
            throw error
        }
        return (fd, info)
    }

    /// Reads from `fd` block again (cleared O_NONBLOCK), once `openExamined`'s caller accepted the file.
    public static func makeBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    }

    /// The whole file, refused past `maxBytes` as soon as it is seen (never buffered whole first).
    public static func read(_ path: String, what: String, maxBytes: Int) throws -> [UInt8] {
        let fd = try open(path, what: what)
        defer { close(fd) }
        return try FileBytes.read(fd: fd, name: path, maxBytes: maxBytes)
    }
}
