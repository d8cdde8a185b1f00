#if canImport(Glibc)
import Glibc
#endif

/// A table printed on a terminal goes through the user's pager, as gh's and git's output does (README,
/// Conventions: "Tables"): `STARLINE_PAGER`, else `PAGER`, run by `/bin/sh -c`; unset, empty or `cat` means
/// no pager — nothing pages unless the user asked for it, so a terminal session behaves as it always did.
/// Only this process's own stdout, and only when it is a terminal: piped output, JSON on a terminal
/// (`--pretty`, `-o json`) and a tool run in-process (tests) are never paged.
///
/// The pager reads a pipe that replaces descriptor 1 and writes to the terminal we were given. `less` gets
/// `LESS=FRX` unless the user set `LESS` (gh and git do the same): it quits at once when the table fits on
/// one screen (-F), keeps the terminal's colours (-R) and leaves the table on the screen after it quits (-X).
/// The pager gets no `STARLINE_*` variable (`ChildEnvironment`, as a browser).
///
/// When the command ends, descriptor 1 is closed for the pager (it sees the end of the table) and the tool
/// waits for the user to quit it before reporting an error or exiting, so the shell's prompt never appears
/// under a pager still reading the terminal; Ctrl-C while waiting is the pager's (less ignores it), not
/// ours. Quitting the pager before the table ends ends the tool as a closed pipe does (SIGPIPE, nothing
/// printed), as `git log | less` does.
public enum TerminalPager {
    private struct Running: Sendable {
        let pid: pid_t
        let registration: InterruptRegistration
    }

    private static let running = Locked<Running?>(nil)

    /// The pager command `environment` asks for, or nil for none.
    public static func command(_ environment: Environment) -> String? {
        let chosen = environment["STARLINE_PAGER"] ?? environment["PAGER"] ?? ""
        let trimmed = chosen.trimmingWhitespace()
        return trimmed.isEmpty || trimmed == "cat" ? nil : trimmed
    }

    /// Starts the pager when one applies to `io` (this process's stdout, a terminal, a pager asked for); from
    /// then on descriptor 1 is the pager's pipe. Once per process; a pager that cannot be started leaves
    /// stdout as it was (the table is printed directly).
    public static func startIfWanted(_ io: IOStreams) {
        guard io.stdoutIsTerminal, let sink = io.stdout as? FileDescriptorSink, sink.fd == STDOUT_FILENO,
            let command = command(io.environment)
        else { return }
        running.withLock { running in
            guard running == nil, let pid = spawn(command) else { return }
            // A signal that ends the tool mid-table (Ctrl-C reaches the whole foreground group) still leaves
            // the terminal to the pager until it quits, within the clean-up budget.
            running = Running(pid: pid, registration: Interrupts.onInterrupt { waitForPager(pid) })
        }
    }

    /// Ends the table for the pager and waits for the user to quit it; nothing when no pager runs.
    public static func finish() {
        guard
            let pager = running.withLock({ r -> Running? in
                defer { r = nil }; return r
            })
        else { return }
        pager.registration.cancel()
        // The pager must see the end of its input before the prompt returns; Ctrl-C meanwhile is for it.
        let previousInterrupt = signal(SIGINT, SIG_IGN)
        let previousQuit = signal(SIGQUIT, SIG_IGN)
        waitForPager(pager.pid)
        signal(SIGINT, previousInterrupt)
        signal(SIGQUIT, previousQuit)
    }

    /// Closes our end of the pipe (descriptor 1 becomes /dev/null, never a free slot that the next open would
    /// take) and reaps the pager.
    private static func waitForPager(_ pid: pid_t) {
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        if null >= 0 {
            dup2(null, STDOUT_FILENO)
            close(null)
        } else {
            close(STDOUT_FILENO)
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    /// `/bin/sh -c COMMAND` reading a new pipe; descriptor 1 becomes the pipe's writing end. Nil (and stdout
    /// untouched) when the pipe or the process cannot be made.
    private static func spawn(_ command: String) -> pid_t? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        // Close-on-exec on both, so no other child started meanwhile keeps the pager's input open.
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy; both original ends close at exec.
        posix_spawn_file_actions_adddup2(&actions, readEnd, STDIN_FILENO)
        let argv = ["/bin/sh", "-c", command]
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var added: [UnsafeMutablePointer<CChar>?] = []
        if getenv("LESS") == nil { added.append(strdup("LESS=FRX")) }
        if getenv("LV") == nil { added.append(strdup("LV=-c")) }
        defer { for p in cArgs + added { free(p) } }
        var environment = added + ChildEnvironment.entries(for: .otherProgram)
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, nil, &cArgs, &environment) == 0
        close(readEnd)
        guard spawned, dup2(writeEnd, STDOUT_FILENO) >= 0 else {
            close(writeEnd)
            if spawned { while waitpid(pid, nil, 0) < 0 && errno == EINTR {} }
            return nil
        }
        close(writeEnd)
        return pid
    }
}
