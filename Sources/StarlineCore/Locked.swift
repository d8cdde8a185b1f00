#if canImport(Glibc)
import Glibc
#endif

/// The suite's one lock: a value that is only read and written with a POSIX mutex held, plus the condition
/// variable that goes with it, for the few places that wait for another thread to change the value
/// (a free connection handle, a new event for a long poll).
///
/// Why not `Synchronization.Mutex` alone: it has no condition variable, and two of our waits need one; a
/// single primitive keeps the house to one way of locking — and ThreadSanitizer sees a pthread mutex, where
/// it reports `Mutex`'s futex-guarded value as raced. The mutex and condition are heap-allocated, so their
/// addresses never move (pthread objects must not be copied or moved once initialised).
///
/// Sendable only when its state is: the lock makes access exclusive, not a non-Sendable value safe to hand to
/// another thread (a class reference inside would escape the lock).
public final class Locked<State> {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var state: State

    public init(_ initial: State) {
        state = initial
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        // CLOCK_MONOTONIC: "pthread_condattr_setclock … the clock used to measure the abstime argument
        // of pthread_cond_timedwait()"; deadlines must not jump with the wall clock.
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the lock held.
    public func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Runs `body` with the lock held, then wakes every waiter (`await`), which re-checks its condition.
    public func withLockNotifying<T>(_ body: (inout State) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        return try body(&state)
    }

    /// Waits until `body` returns a value, re-running it (lock held) whenever a `withLockNotifying` call
    /// ends, or until `deadline` (CLOCK_MONOTONIC nanoseconds, see `MonotonicClock.nanoseconds`) passes —
    /// then returns nil. With no deadline it waits as long as it takes.
    public func await<T>(deadline: UInt64? = nil, _ body: (inout State) throws -> T?) rethrows -> T? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if let value = try body(&state) { return value }
            if let deadline {
                guard MonotonicClock.nanoseconds() < deadline else { return nil }
                var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                pthread_cond_timedwait(condition, mutex, &ts)
            } else {
                pthread_cond_wait(condition, mutex)
            }
        }
    }
}

/// CLOCK_MONOTONIC, read directly: no Foundation and no Dispatch in the tools that do not need them.
public enum MonotonicClock {
    public static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

// @unchecked: `state` is touched only between pthread_mutex_lock and pthread_mutex_unlock.
extension Locked: @unchecked Sendable where State: Sendable {}
