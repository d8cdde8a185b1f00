import Glibc
import StarlineCore

/// What a running unlock agent says about itself (`STATUS`):
/// `{"pid":…,"vaultId":…,"startedAt":…,"expiresAt":…,"idleExpiresAt":…}`, times in RFC 3339 (UTC, seconds),
/// `expiresAt` null without `--ttl`, `idleExpiresAt` null without `--idle` (it moves on with every key served).
public struct MemoryAgentStatus: Sendable, Equatable {
    public var pid: Int32
    public var vaultID: String
    public var startedAt: Timestamp
    public var expiresAt: Timestamp?
    public var idleExpiresAt: Timestamp?

    public init(pid: Int32, vaultID: String, startedAt: Timestamp, expiresAt: Timestamp?, idleExpiresAt: Timestamp?) {
        self.pid = pid
        self.vaultID = vaultID
        self.startedAt = startedAt
        self.expiresAt = expiresAt
        self.idleExpiresAt = idleExpiresAt
    }

    public var json: JSON {
        .object([
            ("pid", .int(Int64(pid))), ("vaultId", .string(vaultID)), ("startedAt", .string(startedAt.rfc3339)),
            ("expiresAt", .optional(expiresAt?.rfc3339)), ("idleExpiresAt", .optional(idleExpiresAt?.rfc3339))
        ])
    }

    /// The status in an agent's reply; nil when a field is missing or malformed.
    public init?(json: JSON) {
        guard let pid = json["pid"]?.intValue, let id = json["vaultId"]?.stringValue,
            let started = json["startedAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
        else { return nil }
        func optional(_ key: String) -> Timestamp?? {
            guard let value = json[key] else { return nil }
            if value.isNull { return .some(nil) }
            guard let t = value.stringValue.flatMap(Timestamp.init(rfc3339:)) else { return nil }
            return .some(t)
        }
        guard let expires = optional("expiresAt"), let idle = optional("idleExpiresAt"), let pid32 = Int32(exactly: pid) else { return nil }
        self.init(pid: pid32, vaultID: id, startedAt: started, expiresAt: expires, idleExpiresAt: idle)
    }
}

/// The clocks of an agent: `elapsed` for its deadlines, `now` for the times `STATUS` reports.
///
/// `elapsed` is CLOCK_BOOTTIME: "identical to CLOCK_MONOTONIC, except that it also includes any time that the
/// system is suspended" (clock_gettime(2)). A `--ttl 1h` agent on a laptop closed overnight has expired when
/// the lid opens; with CLOCK_MONOTONIC it would serve the key for the rest of the hour.
public struct MemoryAgentClock: Sendable {
    public var elapsed: @Sendable () -> UInt64
    public var now: @Sendable () -> Timestamp

    public init(elapsed: @escaping @Sendable () -> UInt64, now: @escaping @Sendable () -> Timestamp) {
        self.elapsed = elapsed
        self.now = now
    }

    /// A view of `clock`: its monotonic time (CLOCK_BOOTTIME for the system's, so the TTL counts a suspended
    /// laptop's sleep) and its wall time.
    public init(_ clock: StarlineClock) {
        self.init(elapsed: clock.monotonicNanoseconds, now: clock.now)
    }

    public static let system = MemoryAgentClock(StarlineClock.system)
}
