#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineCrypto

/// An export to read, opened once: every pass reads this descriptor from its start, so a file put in place of
/// the path meanwhile (whoever can write its directory can rename one over it) is never read. Symbolic links
/// are followed — an export linked from ~/Downloads is as good as the file — because nothing here trusts the
/// file: every byte of it is authenticated by the share code, and the import commits only after its last one.
/// Only a regular file: it is read twice (checked whole, then imported), which a pipe or device cannot be.
public final class ExportFile {
    let fd: Int32
    public let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// O_NONBLOCK: a FIFO at the path is refused at once instead of waiting for a writer at open.
    public static func open(_ path: String) throws -> ExportFile {
        let (fd, info) = try InputFile.openExamined(path, failure: "cannot read \(path)")
        let file = ExportFile(fd: fd, path: path)
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StarlineError(
                .usage, "\(path) is not a regular file: an export is read twice (checked whole, then imported), so it must be a file",
                details: .object([("path", .string(path))]))
        }
        InputFile.makeBlocking(fd)
        return file
    }

    /// Decrypts the whole file, from its first byte, into `writer`.
    public func decrypt(_ decryptor: AgeDecryptor, to writer: AgeWriter) throws {
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw FileBytes.posixError("cannot read \(path)", path: path) }
        try decryptor.decrypt(from: .fileDescriptor(fd, name: path), to: writer)
    }
}
