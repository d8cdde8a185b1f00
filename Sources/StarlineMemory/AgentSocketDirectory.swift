import CProcess
import Glibc
import StarlineCore

/// The private directory the unlock agents' sockets live in, opened once and checked through its descriptor.
///
/// Sockets are bound and connected as `/proc/self/fd/<dir>/<name>`: the directory whose owner and mode were
/// checked is the one the socket is made in or reached through, even if a path component is renamed in
/// between, and the address fits `sun_path` (108 bytes, unix(7)) however deep the runtime directory is.
/// Every other call on the entry (`fstatat`, `unlinkat`) goes through the descriptor and never follows a
/// symbolic link.
final class AgentSocketDirectory {
    let path: String
    let fd: Int32

    /// Opens `path`, creating it (0700) when `create`; nil when it does not exist and `create` is false.
    /// Refused (INSECURE_PERMISSIONS) when another user owns it or group or others have any access to it:
    /// stricter than `PrivateFiles.checkDirectory`, which allows reading — here a readable directory would
    /// list which vaults are unlocked. A symbolic link in its place is refused, never followed.
    init?(path: String, create: Bool) throws(StarlineError) {
        if create {
            try PrivateFiles.ensureDirectory(path)
        }
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            let e = errno
            if e == ENOENT && !create { return nil }
            if PrivateFiles.isSymbolicLink(path) { throw PrivateFiles.symbolicLinkError(path, what: "the memory agent's socket directory") }
            throw AgentSocketDirectory.failure("cannot open the memory agent's socket directory", path, e)
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let e = errno
            close(fd)
            throw AgentSocketDirectory.failure("cannot examine", path, e)
        }
        let user = geteuid()
        if info.st_uid != user {
            close(fd)
            throw StarlineError(
                .insecurePermissions,
                "the memory agent's socket directory \(path) is owned by another user (uid \(info.st_uid), not \(user)); it was not used",
                details: .object([("path", .string(path)), ("owner", .int(Int64(info.st_uid))), ("uid", .int(Int64(user)))]))
        }
        if info.st_mode & 0o077 != 0 {
            close(fd)
            throw StarlineError(
                .insecurePermissions,
                "the memory agent's socket directory \(path) is open to group or others (mode \(String(info.st_mode & 0o7777, radix: 8))); run chmod 700 \(path)",
                details: .object([("path", .string(path)), ("mode", .string(String(info.st_mode & 0o7777, radix: 8)))]))
        }
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// The entry `name` without following a link; nil when it does not exist.
    func entry(_ name: String) throws(StarlineError) -> stat? {
        var info = stat()
        if fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 { return info }
        let e = errno
        if e == ENOENT { return nil }
        throw AgentSocketDirectory.failure("cannot examine", path + "/" + name, e)
    }

    /// The entry `name`, which must be a socket we own (or missing: nil). A symbolic link, another kind of
    /// file or another user's socket is refused: the agent's name in our directory is never anything else.
    func socketEntry(_ name: String) throws(StarlineError) -> stat? {
        guard let info = try entry(name) else { return nil }
        let full = path + "/" + name
        switch info.st_mode & S_IFMT {
        case S_IFSOCK: break
        case S_IFLNK: throw PrivateFiles.symbolicLinkError(full, what: "the memory agent's socket")
        default:
            throw StarlineError(
                .storage, "\(full) is not a socket; it was left alone: remove it",
                details: .object([("path", .string(full))]))
        }
        if info.st_uid != geteuid() {
            throw StarlineError(
                .insecurePermissions, "the memory agent's socket \(full) belongs to uid \(info.st_uid), not \(geteuid()); it was not used",
                details: .object([("path", .string(full)), ("owner", .int(Int64(info.st_uid)))]))
        }
        return info
    }

    /// Removes `name` when it is still the socket `identity` (device, inode): never a socket that a newer
    /// agent bound in its place.
    func removeSocket(_ name: String, identity: (dev_t, ino_t)) {
        guard let info = try? entry(name), info.st_dev == identity.0, info.st_ino == identity.1 else { return }
        unlinkat(fd, name, 0)
    }

    /// Removes a stale entry (no listener behind it).
    func removeStale(_ name: String) throws(StarlineError) {
        if unlinkat(fd, name, 0) != 0, errno != ENOENT {
            throw AgentSocketDirectory.failure("cannot remove the stale memory agent socket", path + "/" + name, errno)
        }
    }

    /// The `sockaddr_un` of `name` in this directory.
    func address(_ name: String) throws(StarlineError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array("/proc/self/fd/\(fd)/\(name)".utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw StarlineError(.usage, "the memory agent's socket name \(name) is too long", details: .object([("name", .string(name))]))
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    /// A new close-on-exec Unix stream socket.
    static func newSocket() throws(StarlineError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("cannot create a Unix socket", "socket", errno) }
        return fd
    }

    /// connect(2) to `name`; returns the errno (0 on success).
    func connect(_ socketFD: Int32, _ name: String) throws(StarlineError) -> Int32 {
        var address = try address(name)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return result == 0 ? 0 : errno
    }

    /// bind(2) to `name` with the umask at 077, so the socket file is only ever ours (srwx------, and the
    /// kernel checks write permission on it for connect(2)). The umask is per process: a file another thread
    /// creates in that instant is only made more private. Returns the errno (0 on success).
    func bind(_ socketFD: Int32, _ name: String) throws(StarlineError) -> Int32 {
        var address = try address(name)
        let previous = umask(0o077)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        let e = errno
        umask(previous)
        return result == 0 ? 0 : e
    }

    /// The peer of a connected Unix socket. unix(7): "SO_PEERCRED: This read-only socket option returns the
    /// credentials of the peer process connected to this socket. The returned credentials are those that
    /// were in effect at the time of the call to connect(2), listen(2), or socketpair(2)." So the agent
    /// learns who connected, and a client learns who listens — neither can be faked by the peer.
    static func peer(_ fd: Int32) -> (pid: pid_t, uid: uid_t)? {
        var pid = pid_t(), uid = uid_t(), gid = gid_t()
        guard starline_peer_credentials(fd, &pid, &uid, &gid) == 0 else { return nil }
        return (pid, uid)
    }

    static func failure(_ what: String, _ path: String, _ code: Int32) -> StarlineError {
        StarlineError(
            .storage, "\(what) \(path): \(String(cString: strerror(code)))",
            details: .object([("path", .string(path)), ("errno", .int(Int64(code)))]))
    }
}
