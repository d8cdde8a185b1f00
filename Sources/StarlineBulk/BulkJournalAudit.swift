#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// One audit over the journals of a run split across processes or machines (`sl-sessions journal verify` and
/// `merge`): every journal is read as a stream, the plan and the tallies go to an on-disk `BulkItemIndex`, so
/// a million items or a hundred journals take bounded memory.
///
/// Verification compares items themselves (user and id), not hashes, with the run's own definition of success
/// (`BulkItemStatus.isSuccess`): an item is *done* when exactly one final record names it across all journals and
/// that record is a success (revoked, alreadyRevoked); *notFound* when that one record is notFound (the session
/// the plan named was never seen revoked: revoke exits 8 for it too); *missing* with no record; *failed* with
/// none but a failed record; *doubled* with more than one final record (two shards, or two runs that were not
/// one resumed run, did it); *unplanned* when a journal finished an item the plan does not name. Journals whose
/// headers are not of one run (`BulkJournalHeader`: another API, caller, reason or shard count) are *mismatched*.
/// Anything not provably done exactly once makes the verdict inexact.
public enum BulkJournalAudit {
    public enum Problem: String, Sendable, CaseIterable { case missing, failed, notFound, doubled, unplanned }

    public struct Finding: Sendable {
        public var problem: Problem
        public var id: String
        public var user: String?
        /// The plan's line (nil for unplanned).
        public var line: Int?
        public var finals: Int
        public var failed: Int
    }

    /// A journal whose run is not the run of the first journal's header.
    public struct MismatchedRun: Sendable {
        public var journal: String
        public var difference: BulkJournalHeader.Difference
    }

    public struct Verification: Sendable {
        public var planned = 0
        public var done = 0
        public var counts: [Problem: Int] = [:]
        public var journals = 0
        public var runs = 0
        public var records = 0
        /// `K/N` of the shards the journals' headers name, and the shards of N none of them names.
        public var shards: Set<String> = []
        public var missingShards: [String] = []
        /// Journals of another run than the first one's (at most one entry per journal).
        public var mismatchedRuns: [MismatchedRun] = []
        /// Plan lines that could not be read as an item: every one may name a session that is still active.
        public var unreadablePlanLines = 0
        /// Exactly once, provably: every planned item done once, nothing else done, no plan line unread, every
        /// shard's journal there, all of one run.
        public var exact: Bool {
            Problem.allCases.allSatisfy { (counts[$0] ?? 0) == 0 } && planned == done && missingShards.isEmpty && mismatchedRuns.isEmpty
                && unreadablePlanLines == 0
        }
    }

    /// Reads the plan (`plan` yields its targets with their lines, nil at the end; it counts the lines it cannot
    /// read in `unreadable`) and then every journal; `finding` gets each item that is not done exactly once, in
    /// (user, id) order.
    ///
    /// Without `plan` the journals' own `{"planned":…}` records are the plan (each run records every item of
    /// its shard as it reads it, before any request): the union over every run and resume, so a resumed run
    /// fed from a new listing, where the sessions already revoked no longer appear, reads nothing as unplanned.
    /// Journals that record no plan (written before runs recorded it) are then `PLAN_REQUIRED` (USAGE).
    public static func verify(
        plan: (() throws -> (line: Int, target: RevocationTarget)?)?, unreadable: () -> Int, journals: [String],
        finding: (Finding) throws -> Void
    ) throws -> Verification {
        let index = try BulkItemIndex()
        var result = Verification()
        while let plan, let (line, target) = try plan() {
            if case .first = try index.see(id: target.id, user: target.user, line: line) { result.planned += 1 }
        }
        var plannedRecords = 0
        result.unreadablePlanLines = unreadable()
        var reference: BulkJournalHeader?
        for path in journals {
            result.journals += 1
            var mismatched = false
            try read(path) { record in
                if let run = record["run"] {
                    result.runs += 1
                    let header = BulkJournalHeader(run)
                    if let shard = header.shard { result.shards.insert(shard) }
                    if let reference, !mismatched, let difference = reference.difference(from: header, sameShard: false) {
                        mismatched = true
                        result.mismatchedRuns.append(MismatchedRun(journal: path, difference: difference))
                    }
                    reference = reference ?? header
                    return
                }
                if plan == nil, let (line, target) = BulkJournal.planned(record) {
                    plannedRecords += 1
                    if case .first = try index.see(id: target.id, user: target.user, line: line) { result.planned += 1 }
                    return
                }
                guard let item = BulkJournal.item(record) else { return }
                result.records += 1
                try index.tally(id: item.id, user: item.user, status: item.status)
            }
        }
        if plan == nil, plannedRecords == 0, result.records > 0 {
            throw StarlineError(
                .usage,
                """
                the journals record no plan (they were written before runs recorded one): pass --plan FILE (the run's \
                --dry-run output or input)
                """)
        }
        if let count = reference?.shardCount.flatMap({ Int($0) }), count <= BulkShard.maxCount {
            result.missingShards = (0..<count).map { "\($0)/\(count)" }.filter { !result.shards.contains($0) }
        }
        try index.forEachItem { id, user, line, finals, failed, last in
            let problem: Problem?
            if line == nil {
                problem = finals > 0 ? .unplanned : nil
            } else if finals == 1, last?.isSuccess == true {
                result.done += 1
                problem = nil
            } else {
                problem = finals > 1 ? .doubled : finals == 1 ? .notFound : failed > 0 ? .failed : .missing
            }
            guard let problem else { return }
            result.counts[problem, default: 0] += 1
            try finding(Finding(problem: problem, id: id, user: user, line: line, finals: finals, failed: failed))
        }
        return result
    }

    public struct Merge: Sendable {
        public var journals = 0
        public var runs = 0
        public var items = 0
    }

    /// One audit trail from many journals: each run's header (`{"run":{…,"journal":PATH}}`), then each item
    /// record with who ran it, against which API, when and why beside it (the run's `BulkJournalHeader`, as
    /// verify and `--resume` read it).
    public static func merge(journals: [String], write: (JSON) throws -> Void) throws -> Merge {
        var merged = Merge()
        for path in journals {
            merged.journals += 1
            var header: BulkJournalHeader?
            try read(path) { record in
                if var run = record["run"] {
                    merged.runs += 1
                    header = BulkJournalHeader(run)
                    run.set("journal", .string(path))
                    try write(.object([("run", run)]))
                    return
                }
                guard BulkJournal.item(record) != nil else { return }
                merged.items += 1
                var line = record
                line.set("journal", .string(path))
                line.set("caller", .optional(header?.caller))
                line.set("api", .optional(header?.api))
                line.set("reason", .optional(header?.reason))
                line.set("runStartedAt", .optional(header?.startedAt))
                line.set("shard", .optional(header?.shard))
                try write(line)
            }
        }
        return merged
    }

    /// Every record of the journal at `path`, streamed. A journal handed to an audit may come from another host
    /// or user (a shared volume), so ownership is not required — but only a regular file is read (a FIFO would
    /// never end), and a torn or foreign line is skipped as `--resume` skips it.
    static func read(_ path: String, _ body: (JSON) throws -> Void) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw FileBytes.posixError("cannot open the journal \(path)", path: path) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw StarlineError(.usage, "the journal \(path) is not a regular file", details: .object([("path", .string(path))]))
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        let reader = LineReader(fd: fd, name: path, maxLineBytes: BulkJournal.maxRecordBytes)
        while let line = try reader.next() {
            guard let bytes = line.bytes, let record = try? JSON.parse(bytes), case .object = record else { continue }
            try body(record)
        }
    }
}
