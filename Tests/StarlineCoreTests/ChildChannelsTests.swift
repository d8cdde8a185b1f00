#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import Testing

/// A child's stdin and stdout (`ChildChannels`): close-on-exec from the start, so no child started by another
/// thread inherits them (ScanHelperDescriptorTests shows what that did to sl-qr's scan helpers).
@Suite struct ChildChannelsTests {
    @Test("both socket pairs are close-on-exec from the start, and each pair's ends are connected")
    func closeOnExecAndConnected() throws {
        let channels = try #require(ChildChannels(), "socketpair: \(String(cString: strerror(errno)))")
        defer { for fd in channels.input + channels.output { close(fd) } }
        for fd in channels.input + channels.output {
            #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0, "descriptor \(fd) would be inherited by a child")
        }
        for pair in [channels.input, channels.output] {
            var byte: UInt8 = 0x2A
            #expect(send(pair[1], &byte, 1, Int32(MSG_NOSIGNAL)) == 1)
            var received: UInt8 = 0
            #expect(recv(pair[0], &received, 1, 0) == 1 && received == 0x2A)
        }
    }
}
