import Foundation
import Glibc
import StarlineCore
import Synchronization
import StarlineTestSupport
import Testing

@Suite("FileLock")
final class FileLockTests: Sendable {
    /// A fresh private directory per test (Swift Testing makes a new suite instance for each test).
    let dir: String
    init() throws { dir = try makeStorageTempDir() }
    deinit { removeStorageTempDir(dir) }

    @Test("8 threads × 50 locked read-modify-write cycles lose no update and never overlap")
    func concurrentCounter() throws {
        let counterPath = dir + "/counter"
        let lockPath = FileLock.lockPath(for: counterPath)
        try AtomicFile.write(Array("0".utf8), to: counterPath)

        let inside = Atomic<Int>(0)
        let maxInside = Atomic<Int>(0)
        let failures = Locked<[String]>([])
        let threads = (0..<8).map { _ in
            startThread {
                for _ in 0..<50 {
                    do {
                        // A new FileLock (its own open file description) per cycle, as separate
                        // processes would have.
                        try FileLock.withLock(lockPath) {
                            let now = inside.add(1, ordering: .sequentiallyConsistent).newValue
                            maxInside.max(now, ordering: .sequentiallyConsistent)
                            defer { inside.subtract(1, ordering: .sequentiallyConsistent) }
                            let text = String(decoding: try AtomicFile.read(counterPath) ?? [], as: UTF8.self)
                            guard let value = Int(text) else {
                                throw StarlineError(.data, "bad counter \(text)")
                            }
                            try AtomicFile.write(Array(String(value + 1).utf8), to: counterPath)
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        for thread in threads { thread.wait() }

        #expect(failures.withLock { $0 } == [])
        #expect(maxInside.load(ordering: .sequentiallyConsistent) == 1)
        let final = String(decoding: try #require(try AtomicFile.read(counterPath)), as: UTF8.self)
        #expect(final == "400")
        // Only the counter and its lock file: no temp file survived.
        #expect(try directoryEntries(dir) == ["counter", "counter.lock"])
        #expect(permissionBits(lockPath) == 0o600)
    }

    @Test("tryLock fails while another instance holds the lock, succeeds after unlock")
    func tryLockExcludes() throws {
        let path = dir + "/x.lock"
        let holder = try FileLock(path: path)
        let other = try FileLock(path: path)
        try holder.lock()
        #expect(holder.isLocked)
        #expect(try other.tryLock() == false)
        #expect(try other.tryLock(exclusive: false) == false)
        holder.unlock()
        #expect(try other.tryLock() == true)
        #expect(try holder.tryLock() == false)
    }

    @Test("shared locks coexist and keep an exclusive lock out")
    func sharedLocks() throws {
        let path = dir + "/x.lock"
        let reader1 = try FileLock(path: path)
        let reader2 = try FileLock(path: path)
        let writer = try FileLock(path: path)
        #expect(try reader1.tryLock(exclusive: false))
        #expect(try reader2.tryLock(exclusive: false))
        #expect(try writer.tryLock() == false)
        reader1.unlock()
        reader2.unlock()
        #expect(try writer.tryLock())
    }

    @Test("lock(timeout:) throws a retryable STORAGE_ERROR after the deadline")
    func timeoutExpires() throws {
        let path = dir + "/x.lock"
        let holder = try FileLock(path: path)
        try holder.lock()
        let waiter = try FileLock(path: path)
        let start = ContinuousClock.now
        let error = #expect(throws: StarlineError.self) {
            try waiter.lock(timeout: .milliseconds(150))
        }
        let elapsed = ContinuousClock.now - start
        #expect(error?.code == .storage)
        #expect(error?.retryable == true)
        #expect(error?.message == "timed out waiting for lock \(path)")
        #expect(elapsed >= .milliseconds(150))
        #expect(elapsed < .seconds(5))
        #expect(!waiter.isLocked)
    }

    @Test("lock(timeout:) succeeds when the holder releases before the deadline")
    func timeoutSucceeds() throws {
        let path = dir + "/x.lock"
        let locked = DispatchSemaphore(value: 0)
        let released = startThread {
            // The holder lives on its own thread: FileLock is not Sendable.
            guard let holder = try? FileLock(path: path), (try? holder.lock()) != nil else { return }
            locked.signal()
            usleep(100_000)
            holder.unlock()
        }
        #expect(locked.wait(timeout: .now() + 10) == .success)
        let waiter = try FileLock(path: path)
        let start = ContinuousClock.now
        try waiter.lock(timeout: .seconds(10))
        #expect(ContinuousClock.now - start >= .milliseconds(80))
        #expect(waiter.isLocked)
        released.wait()
    }

    @Test("blocking lock waits for the holder on another thread")
    func blockingLockWaits() throws {
        let path = dir + "/x.lock"
        let holder = try FileLock(path: path)
        try holder.lock()
        let acquiredAfter = Locked<Duration?>(nil)
        let start = ContinuousClock.now
        let waiter = startThread {
            do {
                let lock = try FileLock(path: path)
                try lock.lock()
                acquiredAfter.withLock { $0 = ContinuousClock.now - start }
            } catch {}
        }
        usleep(100_000)
        #expect(acquiredAfter.withLock { $0 } == nil)
        holder.unlock()
        waiter.wait()
        let after = try #require(acquiredAfter.withLock { $0 })
        #expect(after >= .milliseconds(90))
    }

    @Test("releasing the FileLock object releases the lock even while a child holds a copy of its descriptor")
    func releaseWhileChildHoldsDescriptor() throws {
        // A child being spawned by another thread holds a copy of the descriptor table until its exec; here
        // the child keeps that copy (dup2 onto its fd 3) for as long as it runs, which makes the window last.
        let path = dir + "/x.lock"
        var holder: FileLock? = try FileLock(path: path)
        try holder?.lock()
        let fd = try #require(descriptor(openOn: path))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fd, 3)
        var child = pid_t()
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sleep"), strdup("30"), nil]
        defer { argv.forEach { free($0) } }
        #expect(posix_spawn(&child, "/bin/sleep", &actions, nil, argv, environ) == 0)
        defer {
            kill(child, SIGKILL)
            var status: Int32 = 0
            waitpid(child, &status, 0)
        }
        #expect(try FileLock(path: path).tryLock() == false)
        withExtendedLifetime(holder) {}
        holder = nil
        #expect(try FileLock(path: path).tryLock() == true, "the lock is free once its FileLock is gone")
    }

    /// The descriptor of this process that has `path` open (the FileLock's own, which is private).
    private func descriptor(openOn path: String) -> Int32? {
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return nil }
        for name in names {
            guard let fd = Int32(name),
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")
            else { continue }
            if target == resolved || target == path { return fd }
        }
        return nil
    }

    @Test("releasing the FileLock object releases the lock; withLock releases when the body throws")
    func releaseOnDeinitAndThrow() throws {
        let path = dir + "/x.lock"
        do {
            let scoped = try FileLock(path: path)
            try scoped.lock()
            #expect(try FileLock(path: path).tryLock() == false)
            withExtendedLifetime(scoped) {}
        }
        #expect(try FileLock(path: path).tryLock() == true)

        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try FileLock.withLock(path) { throw Boom() }
        }
        #expect(try FileLock(path: path).tryLock() == true)
        let value = try FileLock.withLock(path, timeout: .seconds(1)) { 42 }
        #expect(value == 42)
    }

    @Test("the lock excludes another process (flock(1))", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/flock")))
    func excludesOtherProcess() throws {
        let path = dir + "/x.lock"
        func flockCommand() throws -> Int32 {
            try Tools.runInstalled("/usr/bin/flock", ["--nonblock", "--exclusive", path, "true"]).status
        }
        let lock = try FileLock(path: path)
        try lock.lock()
        #expect(try flockCommand() == 1)  // flock(1) exits 1 when --nonblock fails
        lock.unlock()
        #expect(try flockCommand() == 0)
    }

    @Test("opening a lock file in a missing directory throws STORAGE_ERROR")
    func missingDirectory() throws {
        let error = #expect(throws: StarlineError.self) { try FileLock(path: dir + "/nope/x.lock") }
        #expect(error?.code == .storage)
        #expect(error?.details?["errno"]?.intValue == Int64(ENOENT))
    }
}
