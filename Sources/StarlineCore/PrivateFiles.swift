import Glibc

/// Directories created 0700 and files holding secrets refused when others can read them (DESIGN §3):
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
    /// DESIGN §3): whoever can write it can replace the files in it — a database, its lock file — with
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
            throw StarlineError(
                .insecurePermissions,
                "\(path) is writable by group or others (mode \(octal(info.st_mode))); run chmod 700 \(path)",
                details: .object([("path", .string(path)), ("mode", .string(octal(info.st_mode)))]))
        }
    }

    /// Checks that a file holding secrets is private, like ssh does for its keys.
    ///
    /// Returns false when `path` does not exist (nothing to protect yet; the caller decides whether that is
    /// an error) and true when it is a regular file with no group or other permission bits. Throws
    /// `INSECURE_PERMISSIONS` when group or others have any access, and `STORAGE_ERROR` when `path` is not a
    /// regular file (a directory, device, socket…) or cannot be examined. Symbolic links are followed: the
    /// file that would be read is the one checked.
    ///
    /// Note that root bypasses file modes, so this check is about what other users could do, not root.
    @discardableResult
    public static func checkPrivate(_ path: String) throws(StarlineError) -> Bool {
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
