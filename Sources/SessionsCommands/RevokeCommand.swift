import StarlineCore
import StarlinePlatform
import PlatformCommands
import StarlineBulk

/// `sl-sessions revoke`: one session, the others, a user's, or thousands from a pipeline — exactly, resumably.
enum RevokeCommand: AsyncCommand {
    static let user = Option<String?>.string(
        "user", "UID", help: "Revoke as an admin in UID's sessions: ids without a user of their own are UID's.")
    static let others = Option<Bool>.flag("others", help: "Revoke every session of the account except this one.")
    static let all = Option<Bool>.flag("all", help: "With --user: revoke every session of that user (admin).")
    static let parallel = Option<BulkConcurrency?>.converted(
        .value(
            "parallel", "N|auto",
            help: """
                Requests in flight at most, over reused keep-alive connections (1–128). auto: start at 8 and raise the \
                number while that raises the throughput, up to 64.
                """, default: "auto")
    ) { try BulkConcurrency(parsing: $0) }
    static let rate = Option<BulkRate?>.converted(
        .value(
            "rate", "RATE",
            help: """
                At most Q requests a second over the whole run (Q), or Q per window (Q/DURATION: 2400/1m, 3000/150s); \
                with /N, this process's share of a ceiling split over N shards (150/4, 3000/150s/4).
                """)
    ) { try BulkRate(parsing: $0) }
    static let maxAttempts = Option<Int>.integer(
        "max-attempts", "N", help: "Attempts per item on network errors and 5xx (429s are waited out, not counted).", default: 5,
        range: 1...20)
    static let failFast = Option<Bool>.flag("fail-fast", help: "Stop at the first item that fails.")
    static let journal = Option<String?>.string(
        "journal", "FILE", help: "Record every finished item in FILE (JSON Lines, crash-safe) before printing it; the audit trail.",
        completion: .file(extensions: ["journal", "jsonl"]))
    static let resume = Option<Bool>.flag(
        "resume", help: "Continue the run recorded in --journal: items already finished there are not requested again.")
    static let reason = Option<String?>.string("reason", "TEXT", help: "Why: recorded in the journal with the caller and the time.")
    static let dryRun = Option<Bool>.flag(
        "dry-run", help: "Print the resolved plan as JSON Lines (what revoke - reads) and revoke nothing.")
    static let verify = Option<Bool>.flag("verify", help: "List again afterwards and report any revoked session that is still there.")
    static let outageTimeout = Option<Duration>.duration(
        "outage-timeout",
        help: """
            The run's budget for waiting, outage and throttling together. When requests fail across workers (5xx, \
            resets, refused or timed-out connections), the server is down for everyone: every worker waits and one probe \
            tests it; a 429 pauses every worker for its Retry-After. After this long waiting in all, unfinished items are \
            skipped (exit 7, resumable).
            """, default: 300, range: 0...86_400)
    static let shard = Option<BulkShard?>.converted(
        .value(
            "shard", "K/N",
            help: """
                Keep only shard K of N (0-based) of the items, by a stable hash of user and id: one process per shard, each \
                with its own journal.
                """)
    ) { try BulkShard(parsing: $0) }
    static let shardFromEnv = Option<Bool>.flag(
        "shard-from-env", help: "Take the shard K from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); with --shards N.")
    static let shards = Option<Int?>.integer(
        "shards", "N", help: "The number of shards, with --shard-from-env.", range: 1...BulkShard.maxCount)

    static let spec = CommandSpec(
        "revoke", abstract: "Revoke device sessions: by id, --others, --user UID --all, or a list on stdin",
        discussion: """
            IDs come from the arguments or, with -, from stdin, read as they arrive (a pipe streams: revoking starts \
            before the producer ends; no input is too large): plain lines, JSON Lines objects with \"id\" and an optional \
            \"user\" (what sl-sessions list --jsonl prints), a JSON array, or CSV with an id,user header. Every item gets \
            one JSON line, printed as it finishes: \
            {\"line\",\"id\",\"user\",\"status\":\"revoked|alreadyRevoked|notFound|failed|skipped\",\"attempts\",\"error\"}; \
            then one {\"summary\":{…}} line. A malformed input line is reported on its own line and the run goes on; a \
            repeated item is reported skipped, pointing at its first line.\n\nRequests run in parallel through one rate \
            limiter. With --parallel auto the number in flight starts at 8 and is raised by a quarter while each raise \
            raises the throughput by 5 % (the latency held), and set back when it does not; a 429's Retry-After pauses \
            every worker and halves the number in flight; a server that announces its rate limit (RateLimit-*, \
            X-RateLimit-*) is paced 5 % under it. An item's own \
            network errors and 5xx are retried with backoff and jitter (--max-attempts). When requests of three distinct \
            items fail with no answer between, the server may be down for everyone: every worker waits, one probe at a \
            time tests it (backoff with jitter; the probe is an item that has never failed), and those attempts are \
            charged to no item; stderr says how long the run has waited. An item that failed while the server answered \
            others fails on its own: its attempts are always charged and it never holds the run. An item that spends \
            its attempts before anything sent after its last failure was answered fails only on evidence: the requests \
            still out decide, else its failures make the server suspect and the probe tells. After \
            --outage-timeout of waiting in all (outage and throttling together), the items not finished are reported \
            skipped and the run exits 7 \
            (--journal FILE --resume finishes them). The caller's own session, when listed, is revoked last, and then the \
            local session is cleared (S16).\n\nSIGINT, SIGTERM and SIGHUP stop the run: no item is taken after the \
            signal, the requests in flight get their answers (up to 1.5 s; one still out then is reported skipped, as it \
            may have reached the server), every finished item has been printed and journaled, and a summary with \
            \"interrupted\":true ends the output; exit 128 + the signal.\n\n--journal FILE must be a regular file of \
            yours that nobody else can write (not a FIFO, a device or a link). Its first line records the run: caller, \
            API, reason, input and shard; --resume continues only that run (another API, caller, shard or reason is \
            JOURNAL_MISMATCH) and keeps its reason.\n\n--shard K/N keeps the items whose SHA-256 of user, U+001F and id \
            (the first 8 bytes, big-endian) is K modulo N: the same item lands in the same shard on every machine, \
            whatever the input's order. Run one process per shard (GNU parallel, a Kubernetes Indexed Job with \
            --shard-from-env --shards N), each with its own journal, then prove the union with sl-sessions journal \
            verify. --rate is per process: to keep a tenant's quota of Q requests a second (or Q per window) over N \
            shards, give each --rate Q/N (or Q/DURATION/N). Malformed input lines are reported by shard 0 only.\n\nExit 0 only when every item was revoked or \
            already revoked; 8 when some were not (an id without a user that is not one of your sessions is notFound with \
            a hint to pass --user, or a 403 on one target while the caller is still an admin); 5 when the caller is not \
            allowed (not an admin, or no longer: GET /api/me decides on a 403; the run stops, the login is kept); 4 \
            when the caller's own session ends mid-run (the run stops, the local session is cleared, S15); 11 when the \
            stored account changed mid-run; 7 when the server stayed down past --outage-timeout.
            """,
        options: [
            user.spec, others.spec, all.spec, parallel.spec, rate.spec, maxAttempts.spec, failFast.spec, journal.spec, resume.spec,
            reason.spec, dryRun.spec, verify.spec, outageTimeout.spec, shard.spec, shardFromEnv.spec, shards.spec,
            StandardOptions.quiet
        ],
        arguments: [ArgumentSpec("ID|-", help: "Session ids, or - to read them from stdin.", optional: true, variadic: true)],
        examples: [
            Example("sl-sessions revoke --others", "Sign out every other device."),
            Example(
                """
                sl-sessions list --all-users --idle-for 30d --jsonl | sl-sessions revoke --journal revoke.journal --reason \
                'idle 30 days' -
                """,
                "Revoke every session idle for 30 days, with an audit trail."),
            Example("sl-sessions revoke --journal revoke.journal --resume - < plan.jsonl", "Finish a run that was interrupted."),
            Example(
                """
                parallel -j4 'sl-sessions revoke --shard {}/4 --journal shard-{}.journal - < plan.jsonl' ::: 0 1 2 3 && \
                sl-sessions journal verify --plan plan.jsonl shard-*.journal
                """,
                "Four shards, then one audit that proves every item was done exactly once.")
        ],
        exitStatuses: [
            (.ok, "every item revoked or already revoked"), (.partial, "some items failed, were not found or were malformed"),
            (.forbidden, "not allowed (not an admin); the login is kept"), (.sessionEnded, "the caller's own session ended mid-run"),
            (.sessionChanged, "the stored account changed mid-run"),
            (.usage, "bad options, or --resume of a journal of another run (JOURNAL_MISMATCH)"), (.notLoggedIn, "no session stored"),
            (.transient, "the server stayed down past --outage-timeout; the unfinished items are skipped (resumable)"),
            (
                .storage,
                """
                the journal is in use by another run (JOURNAL_IN_USE), is not a private regular file of yours \
                (INSECURE_PERMISSIONS), or cannot be written
                """
            ),
            (.interrupted, "interrupted (128 + the signal: 130 SIGINT, 143 SIGTERM, 129 SIGHUP); the summary says so")
        ])

    struct Options {
        var ids: [String]
        var user: String?
        var others: Bool
        var all: Bool
        var engine: BulkConfiguration
        var journal: String?
        var resume: Bool
        var reason: String?
        var dryRun: Bool
        var verify: Bool
        var shard: BulkShard?
        var platform: PlatformOptions

        /// Where the items come from, as the journal's header records it.
        var source: String { others ? "others" : all ? "all" : ids == ["-"] ? "stdin" : "arguments" }
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        let options = Options(
            ids: arguments.positionals, user: try arguments[user], others: try arguments[others], all: try arguments[all],
            engine: BulkConfiguration(
                parallel: (try arguments[parallel] ?? .auto).ceiling, startingParallel: (try arguments[parallel] ?? .auto).start,
                requestsPerSecond: try arguments[rate]?.requestsPerSecond,
                maxAttempts: try arguments[maxAttempts], failFast: try arguments[failFast],
                outageTimeout: Double(try arguments[outageTimeout].components.seconds)),
            journal: try arguments[journal], resume: try arguments[resume], reason: try arguments[reason], dryRun: try arguments[dryRun],
            verify: try arguments[verify], shard: try shard(arguments), platform: try PlatformOptions(arguments))
        let selectors = [options.others, options.all, !options.ids.isEmpty].filter { $0 }.count
        if selectors != 1 {
            throw StarlineError(
                .usage,
                selectors == 0
                    ? "name the sessions to revoke: IDs, - (stdin), --others, or --user UID --all"
                    : "choose one of: IDs or -, --others, --user UID --all")
        }
        if options.all && options.user == nil {
            throw StarlineError(.usage, "--all needs --user UID (an admin revokes every session of that user)")
        }
        if options.others && options.user != nil {
            throw StarlineError(.usage, "--others revokes your own other sessions; it does not take --user")
        }
        if options.resume && options.journal == nil { throw StarlineError(.usage, "--resume needs --journal FILE") }
        if options.ids.contains("-") && options.ids.count > 1 { throw StarlineError(.usage, "- (stdin) cannot be combined with IDs") }
        return options
    }

    static func shard(_ arguments: ParsedArguments) throws -> BulkShard? {
        let given = try arguments[shard], fromEnv = try arguments[shardFromEnv], count = try arguments[shards]
        if fromEnv {
            guard given == nil else {
                throw StarlineError(.usage, "--shard K/N and --shard-from-env are two ways to say one thing: pick one")
            }
            guard let count else { throw StarlineError(.usage, "--shard-from-env needs --shards N (the job's completions)") }
            return try BulkShard(environment: arguments.environment["JOB_COMPLETION_INDEX"], count: count)
        }
        if count != nil { throw StarlineError(.usage, "--shards N goes with --shard-from-env (--shard K/N names the count itself)") }
        return given
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let factory = PlatformFactory(options.platform, context)
        let client = try factory.client(network: !options.dryRun || options.others || options.all)
        let credentials = try client.runCredentials()
        let source = try await RevokeSource.build(options, context, client: client, credentials: credentials)
        if options.dryRun { return try source.printDryRun(context.output, shard: options.shard) }
        let run = try RevokeRun(options, factory: factory, source: source, credentials: credentials, client: client)
        return try run.execute()
    }
}
