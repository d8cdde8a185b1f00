#if canImport(Glibc)
import Glibc
#endif

/// Whole-file reads and writes through POSIX calls (no Foundation on the start-up path).
public enum FileBytes {
    /// The file's bytes, or nil when it does not exist. Other failures are `STORAGE_ERROR`.
    public static func read(_ path: String) throws -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw posixError("cannot open \(path)", path: path)
        }
        defer { close(fd) }
        return try read(fd: fd, name: path)
    }

    /// Reads a descriptor to its end (stdin, pipes and regular files alike); with `maxBytes`, more than that
    /// is DATA_ERROR as soon as it is seen (never buffered whole first).
    public static func read(fd: Int32, name: String, maxBytes: Int? = nil) throws -> [UInt8] {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw posixError("cannot read \(name)", path: name) }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            errno = EISDIR
            throw posixError("cannot read \(name)", path: name)
        }
        var result: [UInt8] = []
        if (st.st_mode & S_IFMT) == S_IFREG, st.st_size > 0 {
            result.reserveCapacity(Int(min(Int64(st.st_size), Int64(maxBytes ?? Int.max - 1))) + 1)
        }
        // Chunks copied with memcpy (an element-wise grow of a 256 MiB limit took minutes in a debug build).
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw posixError("cannot read \(name)", path: name)
            }
            if n == 0 { return result }
            if let maxBytes, result.count + n > maxBytes {
                throw StarlineError(
                    .data, "\(name) is larger than the limit of \(maxBytes) bytes",
                    details: .object([("limit", .int(maxBytes))]))
            }
            chunk.withUnsafeBufferPointer { result.append(contentsOf: UnsafeBufferPointer(rebasing: $0[0..<n])) }
        }
    }

    /// Writes all bytes to a descriptor, retrying partial writes and EINTR.
    public static func write(fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    public static func posixError(_ what: String, path: String) -> StarlineError {
        let code = errno
        return StarlineError(
            .storage, "\(what): \(String(cString: strerror(code)))",
            details: .object([("path", .string(path)), ("errno", .int(Int(code)))]))
    }
}
