#if canImport(Glibc)
import Glibc
#endif

/// The stdin and stdout of a child process a tool starts and talks to (sl-qr's scan helper, sl-memory's unlock
/// agent): two AF_UNIX stream socket pairs, close-on-exec from the start.
///
/// Close-on-exec in the same call (SOCK_CLOEXEC), not set afterwards: another thread may start a child at any
/// moment, and a child that inherited these ends keeps them open — the end of another child's input, so that
/// child reads its stdin for ever, or the end of its output, so the tool waits for the wrong child to end. The
/// child gets its ends through posix_spawn's dup2, which clears close-on-exec on the copy. Sockets, not pipes:
/// sent with MSG_NOSIGNAL, a child killed mid-transfer is an error for the writer, not a SIGPIPE that ends the
/// tool (and Glibc's module has no pipe2).
public struct ChildChannels {
    /// The two connected ends of the child's stdin and of its stdout (a socket pair's ends are alike: the caller
    /// says which one the child gets).
    public let input: [Int32]
    public let output: [Int32]

    /// Nil when a socket pair cannot be made; `errno` then says why, and nothing is left open.
    public init?() {
        var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &input) == 0 else { return nil }
        guard socketpair(AF_UNIX, type, 0, &output) == 0 else {
            let error = errno
            close(input[0])
            close(input[1])
            errno = error
            return nil
        }
        self.input = input
        self.output = output
    }
}
