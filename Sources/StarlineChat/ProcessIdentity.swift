#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// A process, named so that a reused pid is not mistaken for it: "pid:starttime", the start time being
/// field 22 of /proc/PID/stat (clock ticks since boot). An outbox entry in state `sending` names the process
/// sending it; when that process is gone (killed mid-send), another run may take the entry over — as
/// `unknown`, since the request may have reached the server.
public struct ProcessIdentity: Sendable, Equatable, CustomStringConvertible {
    public let pid: Int32
    public let startTime: UInt64

    public static let current: ProcessIdentity = ProcessIdentity(pid: getpid(), startTime: startTime(of: getpid()) ?? 0)

    public init(pid: Int32, startTime: UInt64) {
        self.pid = pid
        self.startTime = startTime
    }

    /// Parses "pid:starttime"; nil for anything else.
    public init?(_ text: String) {
        let parts = text.splitAtScalar(":")
        guard parts.count == 2, let pid = Int32(parts[0]), pid > 0, let start = UInt64(parts[1]) else { return nil }
        self.init(pid: pid, startTime: start)
    }

    public var description: String { "\(pid):\(startTime)" }

    /// True while this very process (same pid, same start time) runs. A process of another user is alive
    /// too (kill gives EPERM): only ESRCH or another start time mean it is gone.
    public var isAlive: Bool {
        if pid == getpid() { return startTime == ProcessIdentity.current.startTime }
        if kill(pid, 0) != 0 && errno == ESRCH { return false }
        guard let start = ProcessIdentity.startTime(of: pid) else { return false }
        return start == startTime
    }

    /// Field 22 of /proc/PID/stat. The command name (field 2) is in parentheses and may contain spaces and
    /// parentheses itself, so the fields are counted after the last ")".
    static func startTime(of pid: Int32) -> UInt64? {
        guard let bytes = try? FileBytes.read("/proc/\(pid)/stat"),
            let close = bytes.lastIndex(of: UInt8(ascii: ")"))
        else { return nil }
        let rest = String(decoding: bytes[(close + 1)...], as: UTF8.self)
        let fields = rest.splitAtScalar(" ").filter { !$0.isEmpty }
        // After ")": field 3 (state) is fields[0], so field 22 is fields[19].
        guard fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }
}
