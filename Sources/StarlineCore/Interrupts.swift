#if canImport(Glibc)
import Glibc
#endif
import CSignals

/// How every tool ends on SIGINT, SIGTERM and SIGHUP (README, Conventions: "Signals"): exit 128 + the signal
/// number (130 for Ctrl-C), temporary files removed, locks released (flock locks go with the process), and
/// whatever the command left half-done undone — a pending login abandoned, so `sl-restore` does not answer
/// `noResult` for its whole lifetime.
///
/// Two modes, because a signal handler may do almost nothing (signal-safety(7)). By default the handler (C,
/// `CSignals`) removes the tracked temporary files and calls `_exit` itself: enough for the local tools.
/// A command that has clean-up to do registers it with `onInterrupt`; from then on the handler only wakes a
/// thread of ours through a pipe, which runs the clean-ups (2 s in all at most: a signal must end the tool
/// promptly even when the clean-up cannot finish) and then ends the process the same way.
public enum Interrupts {
    /// The budget of all clean-ups together, after which the process ends anyway.
    public static let cleanUpBudget: Duration = .seconds(2)

    private struct State {
        var watching = false
        var nextId = 0
        var actions: [(id: Int, run: @Sendable () -> Void)] = []
        var signal: Int32?
    }

    private static let state = Locked(State())

    /// Installs the handlers. Only `ToolMain.main` calls it: a tool run in-process (tests) keeps the
    /// process's own dispositions.
    public static func install() { starline_signals_install() }

    /// Tracks a temporary file so that a signal removes it; pass the slot to `untrack` once the file has been
    /// renamed or removed. At most 16 at a time; a file beyond that is only removed by the code that made it.
    public static func track(_ path: String) -> Int32 { starline_signals_track(path) }

    public static func untrack(_ slot: Int32) { starline_signals_untrack(slot) }

    /// For a helper process: the kernel kills it (SIGKILL) when its parent ends, however the parent ends.
    public static func endWithParent() { starline_die_with_parent() }

    /// Runs `action` if a signal ends the process before the returned registration is cancelled (or
    /// released). The action runs on another thread while the command's own thread may still be running:
    /// it must be safe to run concurrently (open its own database connection, take the locks it needs).
    public static func onInterrupt(_ action: @escaping @Sendable () -> Void) -> InterruptRegistration {
        let id = state.withLock { state -> Int in
            state.nextId += 1
            state.actions.append((state.nextId, action))
            return state.nextId
        }
        startWatcherIfNeeded()
        return InterruptRegistration(id: id)
    }

    static func cancel(_ id: Int) {
        state.withLock { $0.actions.removeAll { $0.id == id } }
    }

    /// The signal being handled, while the clean-ups run (they may report it: a summary's `"signal"`).
    public static var pendingSignal: Int32? { state.withLock { $0.signal } }

    /// For a command's own thread once it sees its run was interrupted: the clean-ups own the rest of the
    /// process's life (they print, then end it with 128 + N), so this thread waits for that and does nothing.
    public static func waitForExit() -> Never {
        while true { sleep(3600) }
    }

    /// The first registration starts the thread that waits for the handler's byte.
    private static func startWatcherIfNeeded() {
        let readFD: Int32? = state.withLock { state in
            guard starline_signals_installed() != 0, !state.watching else { return nil }
            state.watching = true
            let fd = starline_signals_open_wake_pipe()
            return fd >= 0 ? fd : nil
        }
        guard let readFD else { return }
        let started = WorkerThreads.detach {
            var byte: UInt8 = 0
            while read(readFD, &byte, 1) != 1 {
                if errno != EINTR { return }
            }
            state.withLock { $0.signal = Int32(byte) }
            runCleanUps()
            starline_signals_finish(Int32(byte))
        }
        if started { starline_signals_arm() }
    }

    /// Runs the registered clean-ups on a thread of their own and waits for them, within the budget.
    private static func runCleanUps() {
        let actions = state.withLock { $0.actions.map(\.run) }
        guard !actions.isEmpty else { return }
        let done = Locked(false)
        let started = WorkerThreads.detach {
            for action in actions.reversed() { action() }
            done.withLockNotifying { $0 = true }
        }
        guard started else { return }
        let budget = UInt64(cleanUpBudget.components.seconds) * 1_000_000_000
        _ = done.await(deadline: MonotonicClock.nanoseconds() + budget) { $0 ? true : nil }
    }
}

/// A clean-up registered with `Interrupts.onInterrupt`; cancelled by `cancel()` or when released.
public final class InterruptRegistration: Sendable {
    private let id: Int

    init(id: Int) { self.id = id }

    public func cancel() { Interrupts.cancel(id) }

    deinit { Interrupts.cancel(id) }
}
