import StarlineCore
import StarlineCrypto

/// `--shard K/N`: which items one of N processes keeps, so that an engine admins already run
/// (GNU parallel across hosts, a Kubernetes Indexed Job) splits one run without a coordinator. An item lands
/// in shard `SHA-256(user ␟ id)[0..<8]` (big-endian) mod N — the same shard on every machine, in every
/// version, whatever the input's order; `user` is empty for the caller's own sessions. Each shard keeps its
/// own journal; `sl-sessions journal verify` proves the union.
public struct BulkShard: Sendable, Equatable, CustomStringConvertible {
    /// 0-based.
    public let index: Int
    public let count: Int
    public static let maxCount = 100_000

    public init(index: Int, count: Int) throws {
        guard (1...Self.maxCount).contains(count) else {
            throw StarlineError(.usage, "a shard count must be 1…\(Self.maxCount), not \(count)")
        }
        guard (0..<count).contains(index) else {
            throw StarlineError(.usage, "shard \(index) of \(count) does not exist: shards are numbered 0…\(count - 1)")
        }
        self.index = index
        self.count = count
    }

    /// `K/N`.
    public init(parsing text: String) throws {
        let parts = text.splitAtScalar("/")
        guard parts.count == 2, let k = Int(parts[0]), let n = Int(parts[1]) else {
            throw StarlineError(.usage, "--shard takes K/N (shard K of N, 0-based), e.g. --shard 0/4; not '\(text.prefix(40))'")
        }
        try self.init(index: k, count: n)
    }

    /// `--shard-from-env --shards N`: K from `JOB_COMPLETION_INDEX`, which Kubernetes sets in each pod of an
    /// Indexed Job (`completionMode: Indexed`).
    public init(environment value: String?, count: Int) throws {
        guard let value, let k = Int(value.trimmingWhitespace()) else {
            throw StarlineError(
                .usage,
                "--shard-from-env needs JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job) to be a number; it is \(value.map { "'\($0.prefix(20))'" } ?? "not set")"
            )
        }
        try self.init(index: k, count: count)
    }

    public var description: String { "\(index)/\(count)" }

    public static func of(_ target: RevocationTarget, count: Int) -> Int {
        let digest = SHA256.hash(Array(((target.user ?? "") + "\u{1F}" + target.id).utf8))
        let value = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int(value % UInt64(count))
    }

    public func contains(_ target: RevocationTarget) -> Bool { Self.of(target, count: count) == index }
}
