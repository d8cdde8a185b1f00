import StarlineCore

/// A run's header in its journal (`{"run":{…}}`), typed: the one description of "the same run" that `revoke
/// --resume` (which continues a run only with its journal) and `journal verify` (which proves journals of one
/// run only) both use, so the run and its audit cannot disagree about what belongs together.
public struct BulkJournalHeader: Sendable, Equatable {
    /// The API base the run revoked against.
    public var api: String?
    /// Who ran it (the caller's user id).
    public var caller: String?
    /// `K/N` for a sharded run.
    public var shard: String?
    /// The `--reason` it gave.
    public var reason: String?
    /// When it started (RFC 3339): for the audit trail, not part of what makes two headers one run.
    public var startedAt: String?

    public init(api: String?, caller: String?, shard: String?, reason: String?, startedAt: String? = nil) {
        self.api = api
        self.caller = caller
        self.shard = shard
        self.reason = reason
        self.startedAt = startedAt
    }

    /// The header of a `{"run":{…}}` record's object.
    public init(_ run: JSON) {
        self.init(
            api: run["api"]?.stringValue, caller: run["caller"]?["user"]?.stringValue, shard: run["shard"]?.stringValue,
            reason: run["reason"]?.stringValue, startedAt: run["startedAt"]?.stringValue)
    }

    /// N of `K/N`: the shards of one run share it.
    public var shardCount: String? {
        guard let shard, let slash = shard.firstIndex(of: "/") else { return nil }
        return String(shard[shard.index(after: slash)...])
    }

    /// One way two headers differ: which field, this header's value and the other's.
    public struct Difference: Sendable, Equatable {
        public var field: String
        public var this: String?
        public var other: String?
    }

    /// How `other` is not a part of the same run as this one; nil when it is. `sameShard`: the same shard too
    /// (a resumed run continues its own shard; the journals of a sharded run share the shard count).
    /// `reasonGiven`: false when the reason was not stated (a resume without `--reason` keeps the journal's).
    public func difference(from other: BulkJournalHeader, sameShard: Bool, reasonGiven: Bool = true) -> Difference? {
        if api != other.api { return Difference(field: "api", this: api, other: other.api) }
        if caller != other.caller { return Difference(field: "caller", this: caller, other: other.caller) }
        if sameShard, shard != other.shard { return Difference(field: "shard", this: shard, other: other.shard) }
        if !sameShard, shardCount != other.shardCount { return Difference(field: "shards", this: shardCount, other: other.shardCount) }
        if reasonGiven, reason != other.reason { return Difference(field: "reason", this: reason, other: other.reason) }
        return nil
    }
}

extension BulkJournalHeader {
    /// `revoke --resume` continues the run this header (its journal's first) describes: the same API, caller and
    /// shard, and the header's reason is kept — a different `--reason` is refused (`JOURNAL_MISMATCH`). `ours` is
    /// the resuming run's; returns the reason of the run.
    public func resumed(by ours: BulkJournalHeader, journal path: String, reasonGiven: Bool) throws -> String? {
        if let difference = difference(from: ours, sameShard: true, reasonGiven: reasonGiven) {
            let what =
                ["api": "against", "caller": "by user", "shard": "of shard", "reason": "for the reason"][difference.field]
                ?? difference.field
            throw StarlineError(
                .journalMismatch,
                "the journal \(path) records a run \(what) \(difference.this.map { "'\($0)'" } ?? "(none)"), not \(difference.other.map { "'\($0)'" } ?? "(none)"): --resume continues that run only; name a new journal for this one",
                details: .object([("path", .string(path)), ("journal", .optional(difference.this)), ("this", .optional(difference.other))]))
        }
        return reason
    }
}

extension BulkItemStatus {
    /// The one definition of success, for the run's exit status and its audit alike: the session is revoked
    /// (by this run, or before it). notFound is final — nothing more can be asked — but not a success: the
    /// session the plan named was never seen revoked.
    public var isSuccess: Bool { self == .revoked || self == .alreadyRevoked }
}
