#if canImport(Glibc)
import Glibc
#endif

/// 127.0.0.1:PORT, the only address the suite listens on (the dev server, the login redirect): one place
/// builds the `sockaddr_in` and binds it.
public enum LoopbackAddress {
    /// 127.0.0.1:`port` (0: the kernel picks a free port at bind).
    public static func ipv4(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    /// bind(2) of `fd` to 127.0.0.1:`port`: 0, or -1 with errno set.
    public static func bind(_ fd: Int32, port: UInt16) -> Int32 {
        var address = ipv4(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }
}
