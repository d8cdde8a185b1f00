import Glibc

/// Whole-file reads and crash-safe whole-file writes.
///
/// A write goes to a temporary file in the same directory, is flushed with `fsync`, renamed over the target,
/// and then the directory is flushed too. "If newpath already exists, it will be atomically replaced, so
/// that there is no point at which another process attempting to access newpath will find it missing"
/// (rename(2)); readers see the old or the new content, never a mix, and after `kill -9` or a power cut the
/// target holds one of the two. The directory `fsync` makes the rename itself durable. (With `sync: false`
/// only the first half holds: after a power cut the target may be empty on file systems that do not
/// flush renamed-over files themselves, as ext4's auto_da_alloc does.)
///
/// Atomic replacement does not serialise writers: a read-modify-write must hold a `FileLock`.
public enum AtomicFile {
    /// Replaces (or creates) `path` with `bytes`, and sets its mode to exactly `mode` (the umask does not
    /// apply, unless `applyUmask`). Throws `STORAGE_ERROR` "cannot write <path>: <reason>" with details `{path, errno}`; on
    /// failure before the rename the target is untouched and the temporary file is removed.
    ///
    /// Symbolic links are not followed: a link at `path` is replaced by a regular file. Anything else that is not
    /// a regular file (a device, a FIFO, a socket, a directory) is refused, `STORAGE_ERROR` "… is not a regular
    /// file": renaming over `/dev/null` as root would replace the device for the whole machine. Output a user
    /// names goes through `OutputTarget`, which writes such paths in place.
    ///
    /// State (sessions, keys, the workspace) keeps the defaults. Output a user asked for with `-o FILE` is
    /// written with `sync: false, applyUmask: true`: still never seen half-written (temp file + rename), but
    /// not flushed to disk and created like any other output file, as qrencode, convert or gzip do — the
    /// two `fsync` calls cost ~2 ms per file here and buy nothing for a file the command can make again.
    /// `sync FILE` (coreutils) flushes it when that matters.
    public static func write(
        _ bytes: [UInt8], to path: String, mode: mode_t = 0o600,
        sync: Bool = true, applyUmask: Bool = false
    ) throws(StarlineError) {
        try write(to: path, mode: mode, sync: sync, applyUmask: applyUmask) { fd throws(StarlineError) in
            // FileBytes.write retries partial writes and EINTR; on failure errno says why.
            guard bytes.withUnsafeBytes({ FileBytes.write(fd: fd, $0) }) else { throw storageError("cannot write", path, errno) }
        }
    }

    /// The same, for content too large to hold: `fill` writes it to the temporary file's descriptor (an error
    /// it throws removes the temporary file and leaves `path` untouched).
    public static func write(
        to path: String, mode: mode_t = 0o600, sync: Bool = true, applyUmask: Bool = false,
        _ fill: (Int32) throws(StarlineError) -> Void
    ) throws(StarlineError) {
        let (directory, name) = splitPath(path)
        guard !name.isEmpty, name != ".", name != ".." else {
            throw storageError("cannot write", path, EISDIR)
        }
        try refuseNonRegular(path)

        // A hidden name in the same directory (rename only works within one file system), unique per
        // process and attempt, with O_EXCL so we never write through someone else's file or symlink.
        var shortName = name
        while shortName.utf8.count > 100 { shortName.removeLast() }
        var tempPath = ""
        var fd: Int32 = -1
        var openError: Int32 = 0
        // Tracked before it exists, so that a signal removes it whenever it comes (Interrupts); after the
        // rename there is nothing left to remove.
        var slot: Int32 = -1
        defer { Interrupts.untrack(slot) }
        for _ in 0..<16 {
            let random = String(UInt64.random(in: .min ... .max), radix: 16)
            tempPath = "\(directory)/.\(shortName).tmp-\(getpid())-\(random)"
            Interrupts.untrack(slot)
            slot = Interrupts.track(tempPath)
            fd = Glibc.open(tempPath, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode)
            openError = fd < 0 ? errno : 0
            if openError != EEXIST { break }
        }
        if fd < 0 { throw storageError("cannot write", path, openError) }

        func fail(_ code: Int32) -> StarlineError {
            unlink(tempPath)
            return storageError("cannot write", path, code)
        }

        // The mode given to open() was reduced by the umask; set it exactly.
        if !applyUmask, fchmod(fd, mode) != 0 { let e = errno; close(fd); throw fail(e) }

        do { try fill(fd) } catch {
            close(fd)
            unlink(tempPath)
            throw error
        }

        // Data must be on disk before the rename makes it visible, or a crash could leave an empty or
        // partial file under the target name.
        if sync, fsyncRetrying(fd) != 0 { let e = errno; close(fd); throw fail(e) }
        // On Linux the descriptor is released even when close fails, so never retry; an error here (NFS)
        // means the data may not have been written.
        if close(fd) != 0 { throw fail(errno) }

        if rename(tempPath, path) != 0 { throw fail(errno) }
        guard sync else { return }

        // "Calling fsync() does not necessarily ensure that the entry in the directory containing the file
        // has also reached disk. For that an explicit fsync() on a file descriptor for the directory is also
        // needed." (fsync(2))
        let dirFD = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD < 0 { throw storageError("cannot write", path, errno) }
        defer { close(dirFD) }
        // EINVAL: the file system cannot sync directories; the rename is as durable as it can be made.
        if fsyncRetrying(dirFD) != 0 && errno != EINVAL {
            throw storageError("cannot write", path, errno)
        }
    }

    /// The whole content of `path`, or nil when it does not exist. Other failures (a directory, no
    /// permission, I/O errors) throw `STORAGE_ERROR` "cannot read <path>: <reason>"; a file that breaks the
    /// rule of its kind (`trust`, checked on the descriptor read) `INSECURE_PERMISSIONS`; one of more than
    /// `maxBytes` `STORAGE_ERROR` before it is read.
    ///
    /// `followLinks: false` is for the suite's own files in its private directories (a marker, a host id):
    /// a symbolic link there is refused (`PrivateFiles.symbolicLinkError` naming `what`), not read through.
    public static func read(
        _ path: String, followLinks: Bool = true, what: String = "file", trust: FileTrust = .ownState, maxBytes: Int = .max
    ) throws(StarlineError) -> [UInt8]? {
        guard let (fd, info) = try openChecked(path, followLinks: followLinks, what: what, trust: trust) else { return nil }
        defer { close(fd) }
        if Int64(info.st_size) > Int64(maxBytes) {
            throw StarlineError(
                .storage, "cannot read \(path): the \(what) is larger than \(maxBytes) bytes",
                details: .object([("path", .string(path)), ("maxBytes", .int(Int64(maxBytes)))]))
        }
        var capacity = 4096
        if info.st_size > 0 { capacity = Int(info.st_size) + 1 }
        var result: [UInt8] = []
        result.reserveCapacity(min(capacity, maxBytes))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw storageError("cannot read", path, errno)  // EISDIR for a directory
            }
            if n == 0 { return result }
            // A file that grew after the fstat is still bounded.
            guard result.count + n <= maxBytes else {
                throw StarlineError(
                    .storage, "cannot read \(path): the \(what) is larger than \(maxBytes) bytes",
                    details: .object([("path", .string(path)), ("maxBytes", .int(Int64(maxBytes)))]))
            }
            result.append(contentsOf: chunk[0..<n])
        }
    }

    /// `path` opened for reading (blocking, close-on-exec) once it met the rule of its kind `trust` on that
    /// descriptor, with what fstat said of it; nil when it does not exist. The caller reads it, or hands the
    /// descriptor on (dlopen of `/proc/self/fd/N`), and closes it: the file checked is the file used.
    public static func openChecked(
        _ path: String, followLinks: Bool = true, what: String = "file", trust: FileTrust
    ) throws(StarlineError) -> (fd: Int32, info: stat)? {
        let fd: Int32
        // O_NONBLOCK: a FIFO at the path is refused below instead of hanging the open until someone writes it.
        if followLinks {
            fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
            if fd < 0 {
                if errno == ENOENT { return nil }
                throw storageError("cannot read", path, errno)
            }
        } else {
            fd = try PrivateFiles.openNoFollow(path, O_RDONLY | O_NONBLOCK, what: what, action: "cannot read", missingIsNil: true)
            if fd < 0 { return nil }
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw storageError("cannot read", path, code)
        }
        do { try trust.check(info, path, what: what) } catch {
            close(fd)
            throw error
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return (fd, info)
    }

    /// Throws unless `path` is absent, a regular file or a symbolic link (which is replaced, not followed).
    static func refuseNonRegular(_ path: String) throws(StarlineError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }  // absent (or unreadable: open or rename will say why)
        let type = info.st_mode & S_IFMT
        guard type != S_IFREG, type != S_IFLNK else { return }
        if type == S_IFDIR { throw storageError("cannot write", path, EISDIR) }
        throw StarlineError(
            .storage, "cannot write \(path): it is not a regular file (a device, FIFO or socket) and is not replaced",
            details: .object([("path", .string(path)), ("mode", .string(PrivateFiles.octal(info.st_mode)))]))
    }

    /// The directory part (never empty: "." for a bare name, "/" for the root) and the last component.
    static func splitPath(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    private static func fsyncRetrying(_ fd: Int32) -> Int32 {
        while true {
            let rc = fsync(fd)
            if rc == 0 || errno != EINTR { return rc }
        }
    }
}

/// `STORAGE_ERROR` "<action> <path>: <strerror>" with details `{path, errno}`.
func storageError(_ action: String, _ path: String, _ code: Int32) -> StarlineError {
    StarlineError(
        .storage, "\(action) \(path): \(errnoDescription(code))",
        details: .object([("path", .string(path)), ("errno", .int(Int64(code)))]))
}

/// `strerror` text. glibc returns static, immutable strings for known error numbers.
func errnoDescription(_ code: Int32) -> String {
    String(cString: strerror(code))
}
