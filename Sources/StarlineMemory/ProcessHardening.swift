import CProcess

/// sl-memory holds the vault key and decrypted notes in memory. Undumpable (prctl PR_SET_DUMPABLE 0, and
/// RLIMIT_CORE 0): no core file whatever `core_pattern` says — a crash collector behind a pipe ignores
/// RLIMIT_CORE —, and no other process of the same uid may ptrace it or read its /proc/PID/mem or environ
/// (README, Security notes). The unlock agent does the same for itself (`MemoryAgentServer+Detached`).
public enum ProcessHardening {
    /// 0, or the errno of the call that failed (the run goes on: the limit is defence in depth).
    @discardableResult
    public static func makeUndumpable() -> Int32 { starline_process_make_undumpable() }
}
