import StarlineCore
import StarlinePlatform
import StarlineChat
import PlatformCommands
import StarlineBulk

/// The engine options every delivering command shares (send, outbox flush, moments post).
struct DeliveryOptions: Sendable {
    static let maxAttempts = Option<Int>.integer(
        "max-attempts", "N", help: "Attempts per message on network errors and 5xx (429s are waited out).", default: 5, range: 1...20)
    static let rate = Option<Int?>.integer("rate", "N", help: "At most N sends a second.", range: 1...10_000)
    static var specs: [OptionSpec] { [maxAttempts.spec, rate.spec] }

    var engine: BulkConfiguration

    init(_ arguments: ParsedArguments) throws {
        engine = BulkConfiguration(
            parallel: 1, requestsPerSecond: try arguments[Self.rate].map(Double.init), maxAttempts: try arguments[Self.maxAttempts])
    }
}

/// Delivers outbox entries and prints one result line each (the entry as stored afterwards), and for a
/// multi-entry run a summary line. The exit status says whether everything was sent.
@MainActor
struct OutboxRun {
    let session: ChatSession
    let context: CommandContext

    struct Outcome {
        var counts: [OutboxState: Int] = [:]
        var busy = 0
        /// Not sent because an earlier entry of their conversation was not (W5); they stay pending.
        var held = 0
        /// Entries queued earlier that the run delivered first (a `send` behind them).
        var earlier = 0
        var stopError: StarlineError?
        var throttledMs = 0
        /// The result of the last of the command's own entries (not one delivered first because it was earlier).
        var last: OutboxDelivery.Result?
        var total: Int { counts.values.reduce(0, +) + busy + held }
    }

    /// `printEarlier`: print the result lines of the entries queued before the command's own (a single
    /// `send` prints only its own entry; they are counted on stderr instead).
    func deliver(_ jobs: [OutboxDelivery.Job], _ options: DeliveryOptions, printEarlier: Bool = true) -> Outcome {
        let output = context.output
        let delivery = session.delivery(notice: { output.notice("sl-chat: " + $0) })
        let collected = Locked(Outcome())
        var engine = options.engine
        engine.clock = session.factory.bulkClock
        let summary = delivery.run(jobs, configuration: engine) { result in
            if printEarlier || !result.job.earlier {
                output.emitLine(Self.record(result))
                output.flush()
            }
            collected.withLock { o in
                if result.job.earlier { o.earlier += 1 } else { o.last = result }
                if result.heldBy != nil {
                    o.held += 1
                } else if result.busy {
                    o.busy += 1
                } else if let state = result.entry?.state {
                    o.counts[state, default: 0] += 1
                }
            }
            return output.failure.map { _ in StarlineError(.writeFailed, "cannot write the results to stdout") }
        }
        var outcome = collected.withLock { $0 }
        outcome.throttledMs = summary.throttledMilliseconds
        outcome.stopError = summary.stopError.map(session.ended)
        return outcome
    }

    nonisolated static func record(_ result: OutboxDelivery.Result) -> JSON {
        var record =
            result.entry?.json ?? .object([("type", .string("outbox")), ("clientId", .string(result.job.clientId)), ("state", .null)])
        if let line = result.job.line { record.set("line", .int(line)) }
        if result.busy { record.set("busy", .bool(true)) }
        if let holder = result.heldBy { record.set("heldBy", .string(holder.clientId)) }
        if let error = result.error, result.entry?.state != .sent { record.set("error", error.json["error"] ?? .null) }
        return record
    }

    func summary(_ outcome: Outcome) {
        var fields: [(String, JSON)] = OutboxState.allCases.filter { $0 != .sending }.map { ($0.rawValue, .int(outcome.counts[$0] ?? 0)) }
        fields += [
            ("busy", .int(outcome.busy)), ("held", .int(outcome.held)), ("items", .int(outcome.total)),
            ("throttledMs", .int(outcome.throttledMs))
        ]
        context.output.emitLine(.object([("summary", .object(fields))]))
    }

    /// 0 when everything was sent (or is being sent by another process); the stop error; 8 otherwise.
    static func status(_ outcome: Outcome) throws -> ExitStatus {
        if let stop = outcome.stopError { throw stop }
        let open = (outcome.counts[.pending] ?? 0) + (outcome.counts[.unknown] ?? 0) + (outcome.counts[.sending] ?? 0) + outcome.held
        let failed = outcome.counts[.failed] ?? 0
        guard open + failed == 0 else {
            throw StarlineError(
                .partial,
                "\(failed) failed, \(open) not sent yet (\(outcome.held) of them held behind an earlier entry of their conversation; kept in the outbox: sl-chat outbox flush sends them)",
                details: .object([("failed", .int(failed)), ("open", .int(open)), ("held", .int(outcome.held))]))
        }
        return .ok
    }

    /// A single send's status: its entry's error when it failed, TRANSIENT when it is still queued.
    static func singleStatus(_ outcome: Outcome) throws -> ExitStatus {
        if let stop = outcome.stopError { throw stop }
        guard let result = outcome.last, let entry = result.entry else { return .ok }
        switch entry.state {
        case .sent: return .ok
        case .failed:
            let error = result.error ?? StarlineError(.requestRejected, "the server refused it")
            throw StarlineError(error.code, "not sent: \(error.message)", retryable: false, details: error.details)
        case .pending, .unknown, .sending:
            var details: [(String, JSON)] = [("clientId", .string(entry.clientId)), ("state", .string(entry.state.rawValue))]
            let why: String
            if let holder = result.heldBy {
                details.append(("heldBy", .string(holder.clientId)))
                let remedy =
                    holder.state == .failed
                    ? " (sl-chat outbox retry \(holder.clientId) sends it again, outbox drop \(holder.clientId) gives it up)" : ""
                why =
                    ": \(holder.clientId), queued before it in \(holder.conversationId), is \(holder.state.rawValue) and leaves first\(remedy)"
            } else {
                why =
                    result.error.map { ": \($0.message)" }
                    ?? (result.busy ? ": another process (\(entry.owner?.pid ?? 0)) is sending it" : "")
            }
            throw StarlineError(
                .network, "not sent yet\(why); it stays in the outbox as \(entry.state.rawValue) (sl-chat outbox flush sends it)",
                retryable: true, details: .object(details))
        }
    }
}
