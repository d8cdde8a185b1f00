import Glibc

/// Directories created 0700 and files holding secrets refused when others can read them (README, Security notes):
/// the session store, device key, vault, unlock cache and passphrase files.
public enum PrivateFiles {
    /// `mkdir -p` with mode 0700 for every directory it creates (set exactly, regardless of the umask).
    /// Existing directories, and symbolic links to directories, are left as they are. Throws
    /// `STORAGE_ERROR` when a component exists but is not a directory, or cannot be created.
    public static func ensureDirectory(_ path: String) throws(StarlineError) {
        guard !path.isEmpty else { throw storageError("cannot create directory", path, ENOENT) }
        // Common case first: it is already there.
        if let mode = try statMode(path, action: "cannot create directory", missingIsNil: true), isDirectory(mode) {
            return
        }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.splitAtScalar("/", omittingEmptySubsequences: true) {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + component
            if component == "." || component == ".." { continue }
            if mkdir(prefix, 0o700) == 0 {
                // mkdir's mode is reduced by the umask; make it exactly 0700.
                if chmod(prefix, 0o700) != 0 { throw storageError("cannot create directory", prefix, errno) }
                continue
            }
            let e = errno
            guard e == EEXIST else { throw storageError("cannot create directory", prefix, e) }
            // It exists (maybe created concurrently by another process): it must be a directory.
            let mode = try statMode(prefix, action: "cannot create directory", missingIsNil: false)!
            guard isDirectory(mode) else {
                throw StarlineError(
                    .storage, "cannot create directory \(path): \(prefix) exists and is not a directory",
                    details: .object([("path", .string(prefix)), ("errno", .int(Int64(ENOTDIR)))]))
            }
        }
    }

    /// `ensureDirectory`, then `checkDirectory`: the directory of a file holding secrets, created 0700 when
    /// missing and refused when it exists but others control it.
    public static func ensurePrivateDirectory(_ path: String) throws(StarlineError) {
        try ensureDirectory(path)
        try checkDirectory(path)
    }

    /// Refuses a directory that another user owns or that group or others may write (INSECURE_PERMISSIONS,
    /// README, Security notes): whoever can write it can replace the files in it — a database, its lock file — with
    /// their own. Group or world read access is allowed (an existing 0755 state directory keeps working).
    /// Throws STORAGE_ERROR when it cannot be examined or is not a directory. Symbolic links are followed,
    /// like `checkPrivate` does.
    public static func checkDirectory(_ path: String) throws(StarlineError) {
        var info = stat()
        if stat(path, &info) != 0 { throw storageError("cannot access", path, errno) }
        guard isDirectory(info.st_mode) else {
            throw StarlineError(
                .storage, "\(path) is not a directory",
                details: .object([("path", .string(path)), ("mode", .string(octal(info.st_mode)))]))
        }
        let user = geteuid()
        if info.st_uid != user {
            throw StarlineError(
                .insecurePermissions, "\(path) is owned by another user (uid \(info.st_uid), not \(user))",
                details: .object([("path", .string(path)), ("owner", .int(Int64(info.st_uid))), ("uid", .int(Int64(user)))]))
        }
        if info.st_mode & 0o022 != 0 {
            // A sticky shared directory (/tmp) is writable by others by design: chmod is the wrong advice there.
            let advice =
                info.st_mode & S_ISVTX != 0
                ? "keep the file in a directory only you can write" : "run chmod 700 \(path)"
            throw StarlineError(
                .insecurePermissions,
                "\(path) is writable by group or others (mode \(octal(info.st_mode))); \(advice)",
                details: .object([("path", .string(path)), ("mode", .string(octal(info.st_mode)))]))
        }
    }

    /// `checkDirectory` for a directory that may not exist yet (nothing in it to trust or distrust).
    public static func checkDirectoryIfPresent(_ path: String) throws(StarlineError) {
        guard try statMode(path, action: "cannot access", missingIsNil: true) != nil else { return }
        try checkDirectory(path)
    }

    /// STORAGE_ERROR for a symbolic link found where the suite's own file belongs (a lock file, a database, a
    /// key): such a link was planted, or left by a mistake, and following it would lock, read or write a file
    /// the link's author chose. `what` names the file ("lock file", "device key").
    public static func symbolicLinkError(_ path: String, what: String) -> StarlineError {
        StarlineError(
            .storage, "\(what) \(path) is a symbolic link, which it never is; it was not followed: remove it",
            details: .object([("path", .string(path)), ("errno", .int(Int64(ELOOP)))]))
    }

    /// `open(2)` with `O_NOFOLLOW | O_CLOEXEC` added: a symbolic link at `path` is `symbolicLinkError`, other
    /// failures are STORAGE_ERROR "<action> <path>: <reason>". Returns -1 (no error) for a missing file when
    /// `missingIsNil`.
    public static func openNoFollow(
        _ path: String, _ flags: Int32, mode: mode_t = 0o600, what: String, action: String,
        missingIsNil: Bool = false
    ) throws(StarlineError) -> Int32 {
        let fd = Glibc.open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode)
        if fd >= 0 { return fd }
        let e = errno
        if e == ENOENT && missingIsNil { return -1 }
        // "If the trailing component (i.e., basename) of pathname is a symbolic link, then the open fails, with
        // the error ELOOP" (open(2), O_NOFOLLOW); ELOOP may also mean a loop earlier in the path, so look.
        if e == ELOOP, isSymbolicLink(path) { throw symbolicLinkError(path, what: what) }
        throw storageError(action, path, e)
    }

    /// True when `path` itself (not its target) is a symbolic link.
    public static func isSymbolicLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
    }

    /// Checks that a file holding secrets is private, like ssh does for its keys.
    ///
    /// Returns false when `path` does not exist (nothing to protect yet; the caller decides whether that is
    /// an error) and true when it is a regular file with no group or other permission bits. Throws
    /// `INSECURE_PERMISSIONS` when group or others have any access, and `STORAGE_ERROR` when `path` is not a
    /// regular file (a directory, device, socket…) or cannot be examined. Symbolic links are followed: the
    /// file that would be read is the one checked.
    ///
    /// `followLinks: false` (the suite's own files in its private directories: a database, a key) refuses a
    /// symbolic link at `path` with `symbolicLinkError` naming `what`, instead of checking its target.
    ///
    /// Note that root bypasses file modes, so this check is about what other users could do, not root.
    @discardableResult
    public static func checkPrivate(_ path: String, followLinks: Bool = true, what: String = "file") throws(StarlineError) -> Bool {
        if !followLinks, isSymbolicLink(path) { throw symbolicLinkError(path, what: what) }
        guard let mode = try statMode(path, action: "cannot access", missingIsNil: true) else { return false }
        guard (mode & S_IFMT) == S_IFREG else {
            throw StarlineError(
                .storage, "\(path) is not a regular file",
                details: .object([("path", .string(path)), ("mode", .string(octal(mode)))]))
        }
        if isGroupOrWorldAccessible(mode: mode) {
            throw StarlineError(
                .insecurePermissions,
                "\(path) is accessible by group or others (mode \(octal(mode))); run chmod 600 \(path)",
                details: .object([("path", .string(path)), ("mode", .string(octal(mode)))]))
        }
        return true
    }

    /// True when any group or other permission bit (read, write or execute) is set.
    public static func isGroupOrWorldAccessible(mode: mode_t) -> Bool {
        mode & 0o077 != 0
    }

    /// Permission bits as a four-digit octal string, e.g. "0644".
    static func octal(_ mode: mode_t) -> String {
        let digits = String(mode & 0o7777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private static func isDirectory(_ mode: mode_t) -> Bool { (mode & S_IFMT) == S_IFDIR }

    /// `st_mode` of `path` (following symbolic links), nil when it does not exist and `missingIsNil`.
    private static func statMode(_ path: String, action: String, missingIsNil: Bool) throws(StarlineError) -> mode_t? {
        var info = stat()
        if stat(path, &info) != 0 {
            let e = errno
            if e == ENOENT && missingIsNil { return nil }
            throw storageError(action, path, e)
        }
        return info.st_mode
    }
}
