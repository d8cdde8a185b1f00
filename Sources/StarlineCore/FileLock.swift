import Glibc

/// An advisory `flock(2)` lock on a lock file, used to serialise read-modify-write cycles of a shared file
/// between processes (cron jobs and shells run tools at the same time).
///
/// "Locks created by flock() are associated with an open file description (see open(2)). ... If a process
/// uses open(2) (or similar) to obtain more than one descriptor for the same file, these descriptors are
/// treated independently by flock()." So every `FileLock` instance — each opens the file itself — excludes
/// every other one, in this process or another; threads that need to exclude each other use one instance
/// each. The kernel drops the lock when the descriptor is closed, including when the process dies, so a
/// `kill -9` never leaves a stale lock.
///
/// Lock files are never deleted: removing one while another process waits on it would let two processes
/// lock two different files under the same name.
///
/// Not Sendable: one instance shared by two threads would give both the "same" lock, excluding nothing.
public final class FileLock {
    public let path: String
    private let fd: Int32
    public private(set) var isLocked = false

    /// The conventional lock file for `path`: `<path>.lock`, beside it.
    public static func lockPath(for path: String) -> String { path + ".lock" }

    /// Opens or creates (mode 0600) the lock file. Does not lock.
    ///
    /// A symbolic link in the lock file's place is refused (STORAGE_ERROR naming it), never followed: O_CREAT
    /// through a link creates a file wherever the link's author chose, and processes that lock through
    /// links to different files exclude nothing.
    public init(path: String) throws(StarlineError) {
        // O_CLOEXEC (added by openNoFollow): a child process must not inherit the descriptor, which would keep
        // the lock alive after we release or exit.
        let fd = try PrivateFiles.openNoFollow(path, O_RDWR | O_CREAT, mode: 0o600, what: "lock file", action: "cannot open lock file")
        self.path = path
        self.fd = fd
    }

    deinit {
        // Unlock before closing. Closing releases the lock only when the last reference to the open file
        // description goes, and a child another thread is spawning holds a copy of our descriptor table
        // between its clone and its exec (O_CLOEXEC acts only at exec): a close alone can leave the lock held
        // for that window, a LOCK_UN on the description releases it at once for every copy.
        _ = flock(fd, LOCK_UN)
        close(fd)
    }

    /// Waits as long as it takes for the lock. `exclusive: false` takes a shared (reader) lock.
    ///
    /// Calling it again on the same instance converts the lock (shared ↔ exclusive); that conversion is not
    /// atomic ("Converting a lock ... is not guaranteed to be atomic").
    public func lock(exclusive: Bool = true) throws(StarlineError) {
        while flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0 {
            // A signal handler interrupted the wait: keep waiting.
            if errno != EINTR { throw storageError("cannot lock", path, errno) }
        }
        isLocked = true
    }

    /// Takes the lock if nobody else holds a conflicting one; returns false otherwise, without waiting.
    public func tryLock(exclusive: Bool = true) throws(StarlineError) -> Bool {
        while flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0 {
            switch errno {
            case EINTR: continue
            case EWOULDBLOCK: return false
            case let e: throw storageError("cannot lock", path, e)
            }
        }
        isLocked = true
        return true
    }

    /// Waits at most `timeout` for the lock, polling with a growing pause (1 ms doubling up to 50 ms) so a
    /// short wait is noticed quickly and a long one costs little CPU. Throws `STORAGE_ERROR` "timed out
    /// waiting for lock <path>" (retryable) when the deadline passes.
    public func lock(exclusive: Bool = true, timeout: Duration) throws(StarlineError) {
        let deadline = Self.monotonicNow() + timeout
        var pause = Duration.milliseconds(1)
        while true {
            if try tryLock(exclusive: exclusive) { return }
            let now = Self.monotonicNow()
            if now >= deadline {
                throw StarlineError(
                    .storage, "timed out waiting for lock \(path)", retryable: true,
                    details: .object([
                        ("path", .string(path)),
                        ("timeoutMilliseconds", .int(Self.milliseconds(timeout)))
                    ]))
            }
            Self.sleep(min(pause, deadline - now))
            pause = min(pause * 2, .milliseconds(50))
        }
    }

    /// Releases the lock. Harmless when not locked.
    public func unlock() {
        // LOCK_UN on a descriptor we own cannot fail except for EINTR, which cannot happen for an unlock.
        _ = flock(fd, LOCK_UN)
        isLocked = false
    }

    /// Runs `body` holding the lock, and releases it afterwards, even when `body` throws.
    public func withLock<T>(exclusive: Bool = true, timeout: Duration? = nil, _ body: () throws -> T) throws -> T {
        if let timeout { try lock(exclusive: exclusive, timeout: timeout) } else { try lock(exclusive: exclusive) }
        defer { unlock() }
        return try body()
    }

    /// Opens the lock file at `path`, runs `body` holding the lock, then releases and closes it.
    public static func withLock<T>(_ path: String, exclusive: Bool = true, timeout: Duration? = nil, _ body: () throws -> T) throws -> T {
        try FileLock(path: path).withLock(exclusive: exclusive, timeout: timeout, body)
    }

    private static func milliseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// CLOCK_MONOTONIC (what `SuspendingClock` reads; time asleep in a system suspend does not count
    /// toward a lock timeout). Read directly rather than through a Swift clock, which would link the Swift
    /// concurrency runtime (and libdispatch under it) into every tool that takes a lock: their tables cost
    /// each start ~0.5 ms of relocations.
    private static func monotonicNow() -> Duration {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
    }

    /// Blocks the calling thread (this is a synchronous API, like `flock` itself).
    private static func sleep(_ d: Duration) {
        let (seconds, attoseconds) = d.components
        StarlineClock.threadSleep(seconds: Double(seconds) + Double(attoseconds) / 1e18)
    }
}

@available(*, unavailable, message: "give each thread its own FileLock: flock does not exclude users of one descriptor")
extension FileLock: Sendable {}
