import Glibc

/// The kinds of file a tool reads, each with its one trust rule, checked on the descriptor that is read (never
/// on the path, which may be swapped between a check and the open). README, "Security notes", states the
/// rules; docs/architecture.md lists the file of each kind and the code that reads it.
///
/// A fourth kind, **input** (imports, plans, batches, images), may belong to anyone and is opened once and
/// type checked by `InputFile`; secret files (`--passphrase-file`) are private (`SecretLines` in sl-memory).
public enum FileTrust: Sendable, Equatable {
    /// The suite's own state (session store files, workspace, pins, journals, markers, the generated host
    /// id): a regular file of this user that nobody else may write — a file another user owns or may write
    /// could hold whatever they want the tool to believe.
    case ownState
    /// A file of the operating system (`/etc/machine-id`, `/var/lib/dbus/machine-id`): a regular file owned
    /// by root or by this user that others may not write. Root owns these on every Linux system; refusing
    /// root's files stopped every networked tool of an ordinary user at the machine id.
    case system
    /// A file that decides whom the tool trusts or what code it runs: a CA bundle (`STARLINE_CA_BUNDLE`,
    /// `SSL_CERT_FILE`, a profile's `caBundle`), the configuration file with its profiles (they name the API
    /// the token is sent to), a library loaded with dlopen. A regular file owned by root or by this user that
    /// neither group nor others may write, opened once and used from that descriptor (its bytes, or
    /// `/proc/self/fd/N`), never opened again by path.
    case trustDeciding

    /// Throws unless the file `info` describes (from `fstat` on the descriptor being read) meets this rule.
    /// `what` names the file in messages ("host id", "CA bundle"). A directory is `STORAGE_ERROR` EISDIR,
    /// anything not regular `STORAGE_ERROR`, a bad owner or mode `INSECURE_PERMISSIONS` (exit 10).
    public func check(_ info: stat, _ path: String, what: String) throws(StarlineError) {
        let type = info.st_mode & S_IFMT
        if type == S_IFDIR { throw storageError("cannot read", path, EISDIR) }
        let details = JSON.object([
            ("path", .string(path)), ("mode", .string(PrivateFiles.octal(info.st_mode))), ("owner", .int(Int64(info.st_uid))),
            ("trust", .string(name))
        ])
        guard type == S_IFREG else {
            throw StarlineError(.storage, "cannot read \(path): it is not a regular file (a device, FIFO or socket)", details: details)
        }
        let me = geteuid()
        let ownerAllowed = self == .ownState ? info.st_uid == me : info.st_uid == me || info.st_uid == 0
        guard ownerAllowed else {
            let allowed = self == .ownState ? "you (uid \(me))" : "root or you (uid \(me))"
            throw StarlineError(
                .insecurePermissions, "the \(what) \(path) belongs to uid \(info.st_uid), not to \(allowed); it was not read",
                details: details)
        }
        // "Others" as people say it: anyone but the owner (for a system file, anyone outside its group too).
        let forbiddenWrite: mode_t = self == .system ? 0o002 : 0o022
        guard info.st_mode & forbiddenWrite == 0 else {
            throw StarlineError(
                .insecurePermissions,
                "the \(what) \(path) is writable by others (mode \(PrivateFiles.octal(info.st_mode))); chmod \(self == .system ? "o" : "go")-w it",
                details: details)
        }
    }

    /// Group write on a file of our own state is allowed in one case: a directory shared through a group we
    /// belong to, as a Kubernetes volume with `fsGroup` is ("1. The owning GID will be the FSGroup 2. The setgid
    /// bit is set (new files created in the volume will be owned by FSGroup) 3. The permission bits are OR'd
    /// with rw-rw----", PodSecurityContext) and as admins share an audit directory. The file's group is one of
    /// this process's groups, and the directory holding it is setgid, of that group and not writable by
    /// others: whoever can write the file is someone we chose to share the run with. (S16: a retried pod of an
    /// Indexed Job resumes the journal the failed pod left on such a volume.)
    public static func groupShared(_ info: stat, directory: String) -> Bool {
        guard info.st_mode & 0o002 == 0, isOwnGroup(info.st_gid) else { return false }
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var dir = stat()
        guard fstat(fd, &dir) == 0 else { return false }
        return dir.st_mode & S_ISGID != 0 && dir.st_mode & 0o002 == 0 && dir.st_gid == info.st_gid
    }

    /// True when `gid` is this process's effective group or one of its supplementary groups.
    public static func isOwnGroup(_ gid: gid_t) -> Bool {
        if gid == getegid() { return true }
        let count = getgroups(0, nil)
        guard count > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(count))
        let n = getgroups(count, &groups)
        return n > 0 && groups.prefix(Int(n)).contains(gid)
    }

    /// The directory part of `path` ("." for a bare name).
    public static func directory(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        let dir = String(path[..<slash])
        return dir.isEmpty ? "/" : dir
    }

    /// The kind's name in error details.
    public var name: String {
        switch self {
        case .ownState: "own state"
        case .system: "system file"
        case .trustDeciding: "trust-deciding file"
        }
    }
}
