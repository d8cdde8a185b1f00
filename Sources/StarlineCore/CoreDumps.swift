#if canImport(Glibc)
import Glibc
#endif

/// Every tool holds something a core file must not carry: tokens and the session store's sealing key
/// (sl-login, sl-restore, sl-sessions, sl-chat), the vault key and decrypted notes (sl-memory), share codes
/// (sl-qr), the dev server's tokens and fixture passwords, a workspace's private notes (README, Security notes:
/// tools holding tokens or keys disable core dumps). RLIMIT_CORE 0, soft and hard, so nothing in the process
/// can raise it again; children inherit it. One syscall at start-up (`ToolMain.main`, `AsyncCommand.main`).
/// sl-memory and its unlock agent also make themselves undumpable (prctl, CProcess), which covers a
/// `core_pattern` pipe to a crash collector as well.
public enum CoreDumps {
    public static func disable() {
        var none = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &none)
    }
}
