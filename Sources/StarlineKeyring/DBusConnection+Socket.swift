#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// The session bus's socket: its address parsed from DBUS_SESSION_BUS_ADDRESS, connected with the deadline's timeouts.
extension DBusConnection {
    /// A socket connected to the first usable address of `list`, with the deadline's timeouts set.
    static func connectedSocket(_ list: String, deadline: UInt64) throws(StarlineError) -> Int32 {
        guard let target = socketAddress(list) else {
            throw KeyringCall.unavailable("the D-Bus session bus address has no usable unix:path or unix:abstract entry")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw KeyringCall.unavailable("cannot create a socket: \(String(cString: strerror(errno)))") }
        do throws(StarlineError) {
            try bound(fd, deadline: deadline)
            var storage = target.storage
            let length = target.length
            let connected = withUnsafePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
            }
            guard connected == 0 else {
                throw KeyringCall.unavailable("cannot connect to the D-Bus session bus: \(String(cString: strerror(errno)))")
            }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// A `sockaddr_un` and the length to pass with it.
    struct SocketAddress {
        var storage = sockaddr_un()
        var length: socklen_t = 0
    }

    /// The address of the first usable `unix:path=` or `unix:abstract=` entry; values are %-escaped ("%2f"
    /// is "/"). unix(7): a pathname socket's length is "offsetof(struct sockaddr_un, sun_path) +
    /// strlen(sun_path) + 1"; an abstract name is the bytes after sun_path's leading NUL, exactly as many
    /// as the length says — passing sizeof(sockaddr_un) would make the trailing NULs part of the name.
    static func socketAddress(_ list: String) -> SocketAddress? {
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2
        for entry in list.splitAtScalar(";") where entry.hasPrefix("unix:") {
            for pair in entry.dropFirst(5).splitAtScalar(",") {
                let kv = pair.splitAtScalar("=")
                guard kv.count == 2 else { continue }
                let key = String(kv[0]), value = PercentEncoding.decodeForm(kv[1].replacingPluses())
                guard key == "path" || key == "abstract" else { continue }
                var address = SocketAddress()
                address.storage.sun_family = sa_family_t(AF_UNIX)
                let capacity = MemoryLayout.size(ofValue: address.storage.sun_path)
                let name = Array(value.utf8)
                let bytes: [UInt8]
                if key == "abstract" {
                    guard 1 + name.count <= capacity else { break }
                    bytes = [0] + name
                    address.length = socklen_t(pathOffset + bytes.count)
                } else {
                    // A NUL inside a path would silently cut it short.
                    guard !name.isEmpty, !name.contains(0), name.count < capacity else { break }
                    bytes = name
                    address.length = socklen_t(pathOffset + bytes.count + 1)
                }
                withUnsafeMutableBytes(of: &address.storage.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
                return address
            }
        }
        return nil
    }

    /// unix(7) SO_PEERCRED: "the credentials of the peer process connected to this socket ... that were in
    /// effect at the time of the call to ... listen(2)" — the bus's, which no client of it can change.
    /// `struct ucred` is { pid_t pid; uid_t uid; gid_t gid; } (a GNU extension Glibc does not import).
    static func checkListener(_ fd: Int32) throws(StarlineError) {
        var credentials: (UInt32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0, Int(length) == MemoryLayout.size(ofValue: credentials)
        else {
            throw KeyringCall.unavailable("cannot read who serves the D-Bus session bus: \(String(cString: strerror(errno)))")
        }
        let pid = Int32(bitPattern: credentials.0), uid = credentials.1
        guard uid == geteuid() || uid == 0 else {
            throw KeyringCall.unavailable(
                "the D-Bus session bus is served by uid \(uid), neither you (uid \(geteuid())) nor root, and nothing was sent to it",
                details: .object([("peerUid", .int(Int64(uid))), ("peerPid", .int(Int64(pid)))]))
        }
    }
}

private extension Substring {
    /// D-Bus addresses escape with %XX only; a "+" is a plus (decodeForm would read it as a space).
    func replacingPluses() -> String { String(self).splitAtScalar("+").joined(separator: "%2B") }
}
