#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// Polls `condition` every 20 ms until it holds or `seconds` pass: a wait on a real condition (a file
/// written, a process gone, a row stored) in place of a sleep that guesses how long it takes.
public func eventually(seconds: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
    while true {
        if try condition() { return true }
        if MonotonicClock.nanoseconds() >= deadline { return false }
        var pause = timespec(tv_sec: 0, tv_nsec: 20_000_000)
        nanosleep(&pause, nil)
    }
}
