#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlinePlatform
import PlatformCommands
import StarlineBulk

/// `sl-sessions journal verify [--plan PLAN] J…`: proves that the journals of a run split across processes or
/// machines (`revoke --shard K/N`, one journal each) did every planned item exactly once.
enum JournalVerifyCommand: AsyncCommand {
    static let plan = Option<String?>.string(
        "plan", "FILE|-",
        help: """
            The items the run was to do: its --dry-run output or its original input (any form revoke - reads). Default: \
            the plan the journals recorded.
            """,
        completion: .file(extensions: ["jsonl", "csv", "txt"]))
    static let user = Option<String?>.string("user", "UID", help: "The user of plan lines that name none (as revoke --user UID read them).")

    static let spec = CommandSpec(
        "verify", abstract: "Prove that journals did every planned item exactly once",
        discussion: """
            Reads the plan and every journal as streams (any size, bounded memory) and compares items by user and id, \
            with revoke's own definition of success. Without --plan the plan is the one the journals recorded: revoke \
            --journal writes each item of its shard as it reads it ({\"planned\":{\"line\",\"id\",\"user\"}}), before \
            any request, so a run fed from a pipe is auditable, and a resumed run fed a new listing (without the \
            sessions already revoked) reads nothing as unplanned. Journals that recorded no plan need --plan. Prints one JSON line per item that is not done exactly once — \
            {\"problem\":\"missing|failed|notFound|doubled|unplanned\",\"id\",\"user\",\"line\",\"finals\",\"failedRecords\"} \
            —, one per plan line that could not be read ({\"problem\":\"unreadablePlanLine\",\"line\",\"reason\"}) and one \
            per journal of another run ({\"problem\":\"mismatchedRun\",\"journal\",\"field\",\"expected\",\"found\"}), \
            then \
            {\"summary\":{\"planned\",\"done\",\"missing\",\"failed\",\"notFound\",\"doubled\",\"unplanned\",\"unreadablePlanLines\",\"mismatchedRuns\",\"journals\",\"runs\",\"records\",\"shards\",\"missingShards\",\"exact\"}}. \
            An item is done when exactly one final record names it across all journals and that record says revoked or \
            alreadyRevoked; notFound when it says notFound (revoke exits 8 for those too: the session was never seen \
            revoked); doubled when more than one final record does; unplanned when a journal finished an item the plan \
            does not name. The journals must be of one run: the same API, caller, reason and shard count in every \
            header. Anything not provably done exactly once — a problem, an unreadable plan line, a journal of another \
            run, a missing shard — makes exact false and the exit 8. Journals are not required to be yours (they may \
            come from other hosts through a shared volume): the audit checks that they agree with the plan, not who \
            wrote them.
            """,
        options: [plan.spec, user.spec],
        arguments: [ArgumentSpec("JOURNAL", help: "The journals of the run's shards.", variadic: true)],
        examples: [
            Example("sl-sessions journal verify --plan plan.jsonl shard-*.journal", "Prove a four-shard run exact."),
            Example(
                """
                sl-sessions list --all-users --jsonl | sl-sessions revoke --journal run.journal - && sl-sessions journal \
                verify run.journal
                """,
                "A run from a pipe, audited against the plan its journal recorded.")
        ],
        exitStatuses: [
            (.ok, "every planned item was done exactly once"),
            (
                .partial,
                """
                some items are missing, failed, notFound, doubled or unplanned, a plan line is unreadable, or a journal is of \
                another run
                """
            ),
            (.usage, "no journal, a journal that is not a regular file, or no --plan for journals that recorded none"),
            (.data, "the plan cannot be read")
        ])

    struct Options {
        var plan: String?
        var user: String?
        var journals: [String]
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        let plan = try arguments[plan]
        guard !arguments.positionals.isEmpty else { throw StarlineError(.usage, "name the journals to verify") }
        _ = try arguments[PlatformOptions.timeout]  // unused offline, but a tool-wide option given a bad value is still refused
        return Options(plan: plan, user: try arguments[user], journals: arguments.positionals)
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let output = context.output
        let opened = try options.plan.map { try PlanFile.open($0, context) }
        defer { if let fd = opened?.1 { close(fd) } }
        let stream = opened.map { RevokeInputStream($0.0, defaultUser: options.user) }
        var unreadable = 0
        let result = try BulkJournalAudit.verify(
            plan: stream.map { stream in
                {
                    while let event = try stream.next() {
                        switch event {
                        case .item(let item): return (item.line, RevocationTarget(id: item.id, user: item.user))
                        case .malformed(let bad):
                            // A line the plan has but no item was read from: it may name a session that is still active.
                            unreadable += 1
                            output.emitLine(
                                .object([
                                    ("problem", .string("unreadablePlanLine")), ("line", .int(bad.line)), ("reason", .string(bad.reason))
                                ])
                            )
                        }
                    }
                    return nil
                }
            }, unreadable: { unreadable }, journals: options.journals,
            finding: { finding in
                output.emitLine(
                    .object([
                        ("problem", .string(finding.problem.rawValue)), ("id", .string(finding.id)), ("user", .optional(finding.user)),
                        ("line", finding.line.map { .int($0) } ?? .null), ("finals", .int(finding.finals)),
                        ("failedRecords", .int(finding.failed))
                    ]))
            })
        for mismatch in result.mismatchedRuns {
            output.emitLine(
                .object([
                    ("problem", .string("mismatchedRun")), ("journal", .string(mismatch.journal)),
                    ("field", .string(mismatch.difference.field)),
                    ("expected", .optional(mismatch.difference.this)), ("found", .optional(mismatch.difference.other))
                ]))
        }
        var fields: [(String, JSON)] = [("planned", .int(result.planned)), ("done", .int(result.done))]
        fields += BulkJournalAudit.Problem.allCases.map { ($0.rawValue, .int(result.counts[$0] ?? 0)) }
        fields += [
            ("unreadablePlanLines", .int(result.unreadablePlanLines)), ("mismatchedRuns", .int(result.mismatchedRuns.count)),
            ("journals", .int(result.journals)), ("runs", .int(result.runs)), ("records", .int(result.records)),
            ("shards", .array(result.shards.sorted().map { .string($0) })),
            ("missingShards", .array(result.missingShards.map { .string($0) })),
            ("exact", .bool(result.exact))
        ]
        output.emitLine(.object([("summary", .object(fields))]))
        guard result.exact else {
            var problems = BulkJournalAudit.Problem.allCases.compactMap { p in
                (result.counts[p] ?? 0) > 0 ? "\(result.counts[p]!) \(p.rawValue)" : nil
            }
            if result.unreadablePlanLines > 0 { problems.append("\(result.unreadablePlanLines) unreadable plan lines") }
            if !result.mismatchedRuns.isEmpty {
                problems.append(
                    "\(result.mismatchedRuns.count) journals of another run (\(result.mismatchedRuns.map(\.journal).joined(separator: ", ")))"
                )
            }
            if !result.missingShards.isEmpty { problems.append("no journal of shard \(result.missingShards.joined(separator: ", "))") }
            throw StarlineError(
                .partial, "the journals do not do the plan exactly once: " + problems.joined(separator: ", "),
                details: .object([("planned", .int(result.planned)), ("done", .int(result.done))]))
        }
        return .ok
    }
}

/// `sl-sessions journal merge J… [-o FILE]`: one audit trail from the journals of a run's shards.
enum JournalMergeCommand: AsyncCommand {
    static let output = Option<String?>.string(
        "output", short: "o", "FILE", help: "Write the audit trail to FILE (replaced atomically once complete) instead of stdout.",
        completion: .file(extensions: ["jsonl"]))

    static let spec = CommandSpec(
        "merge", abstract: "Merge journals into one audit trail",
        discussion: """
            Streams every journal in the order given: each run's header as {\"run\":{…,\"journal\":PATH}}, then each item \
            record with the run's caller, API, reason, start time and shard beside it \
            (\"caller\",\"api\",\"reason\",\"runStartedAt\",\"shard\",\"journal\"), then \
            {\"summary\":{\"journals\",\"runs\",\"items\"}}.
            """,
        options: [output.spec],
        arguments: [ArgumentSpec("JOURNAL", help: "The journals to merge.", variadic: true)],
        examples: [Example("sl-sessions journal merge shard-*.journal -o audit.jsonl", "Keep one audit trail of a sharded run.")],
        exitStatuses: [
            (.ok, "merged"), (.usage, "no journal, or one that is not a regular file"), (.storage, "the output cannot be written")
        ])

    struct Options {
        var journals: [String]
        var output: String?
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        guard !arguments.positionals.isEmpty else { throw StarlineError(.usage, "name the journals to merge") }
        _ = try arguments[PlatformOptions.timeout]  // unused offline, but a tool-wide option given a bad value is still refused
        return Options(journals: arguments.positionals, output: try arguments[output])
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let journals = options.journals
        guard let path = options.output else {
            let merged = try BulkJournalAudit.merge(journals: journals) { context.output.emitLine($0) }
            context.output.emitLine(summary(merged))
            return .ok
        }
        try StreamedOutputFile.write(to: path) { write in
            let merged = try BulkJournalAudit.merge(journals: journals) { try write($0) }
            try write(summary(merged))
        }
        return .ok
    }

    static func summary(_ merged: BulkJournalAudit.Merge) -> JSON {
        .object([("summary", .object([("journals", .int(merged.journals)), ("runs", .int(merged.runs)), ("items", .int(merged.items))]))])
    }
}

/// The plan of `journal verify`: a file or stdin, read as a stream.
enum PlanFile {
    static func open(_ path: String, _ context: CommandContext) throws -> (LineReader, Int32?) {
        if path == "-" { return (LineReader(context.io.stdin, name: "standard input", maxLineBytes: RevokeInput.maxLineBytes), nil) }
        let fd = try InputFile.open(path, what: "the plan")
        return (LineReader(fd: fd, name: path, maxLineBytes: RevokeInput.maxLineBytes), fd)
    }
}

/// `-o FILE` for output written as a stream (an audit trail of millions of lines): `OutputTarget`'s, a regular
/// file built beside its name and renamed over it once complete and synced (never seen half-written), a device
/// or FIFO written in place.
enum StreamedOutputFile {
    static func write(to path: String, _ body: (_ write: (JSON) throws -> Void) throws -> Void) throws {
        try OutputTarget.write(to: path, mode: 0o644, sync: true, applyUmask: true) { fd throws(StarlineError) in
            do { try lines(fd, path, body) } catch let error as StarlineError { throw error } catch {
                throw StarlineError(.internalError, "\(error)")
            }
        }
    }

    /// Lines through a 64 KiB buffer.
    private static func lines(_ fd: Int32, _ path: String, _ body: (_ write: (JSON) throws -> Void) throws -> Void) throws {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 16)
        func flush() throws {
            guard !buffer.isEmpty else { return }
            guard buffer.withUnsafeBytes({ FileBytes.write(fd: fd, $0) }) else {
                throw FileBytes.posixError("cannot write \(path)", path: path)
            }
            buffer.removeAll(keepingCapacity: true)
        }
        try body { record in
            buffer.append(contentsOf: (record.serialized(.compact) + "\n").utf8)
            if buffer.count >= 1 << 16 { try flush() }
        }
        try flush()
    }
}
