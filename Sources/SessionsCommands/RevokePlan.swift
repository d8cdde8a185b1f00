import StarlineCore
import StarlinePlatform
import PlatformCommands

/// What a revoke run will do, resolved before the first request: the targets with their input line numbers,
/// the input lines that could not be read, and the duplicates (reported `skipped`, pointing at the first).
struct RevokePlan {
    struct Entry: Sendable {
        var line: Int
        var target: RevocationTarget
    }

    var entries: [Entry]
    var malformed: [MalformedInput]
    var duplicates: [(line: Int, target: RevocationTarget, firstLine: Int)]

    @MainActor
    static func build(_ options: RevokeCommand.Options, _ context: CommandContext, client: StarlightClient,
                      credentials: StarlightClient.RunCredentials) async throws -> RevokePlan {
        if options.others {
            let sessions = try await client.sessions()
            let ids = sessions.filter { $0["current"] != .bool(true) }.compactMap { $0["id"]?.stringValue }
            return RevokePlan(entries: ids.enumerated().map { Entry(line: $0.offset + 1, target: RevocationTarget(id: $0.element, user: nil)) },
                              malformed: [], duplicates: [])
        }
        if options.all, let user = options.user {
            let platform = client.platform
            let token = credentials.token
            let sessions = try await client.authenticated { _ in try await platform.adminSessions(token: token, user: user) }
            let ids = sessions.compactMap { $0["id"]?.stringValue }
            return RevokePlan(entries: ids.enumerated().map { Entry(line: $0.offset + 1, target: RevocationTarget(id: $0.element, user: user)) },
                              malformed: [], duplicates: [])
        }
        let parsed: (items: [RevokeItem], malformed: [MalformedInput])
        if options.ids == ["-"] {
            let input = try RevokeInput.parse(try context.readStandardInput(maxBytes: RevokeInput.maxInputBytes), defaultUser: options.user)
            parsed = (input.items, input.malformed)
        } else {
            parsed = RevokeInput.fromArguments(options.ids, defaultUser: options.user)
        }
        return deduplicated(parsed.items, malformed: parsed.malformed)
    }

    /// The first of identical targets is revoked; the others are reported as duplicates of it.
    static func deduplicated(_ items: [RevokeItem], malformed: [MalformedInput]) -> RevokePlan {
        var first: [RevocationTarget: Int] = [:]
        var plan = RevokePlan(entries: [], malformed: malformed, duplicates: [])
        plan.entries.reserveCapacity(items.count)
        for item in items {
            let target = RevocationTarget(id: item.id, user: item.user)
            if let line = first[target] {
                plan.duplicates.append((item.line, target, line))
            } else {
                first[target] = item.line
                plan.entries.append(Entry(line: item.line, target: target))
            }
        }
        return plan
    }

    /// `--dry-run`: the plan as JSON Lines that `revoke -` reads back; unreadable lines go to stderr as errors.
    func printDryRun(_ output: Output) throws -> ExitStatus {
        for entry in entries {
            output.emitLine(.object([("line", .int(entry.line)), ("id", .string(entry.target.id)), ("user", .optional(entry.target.user))]))
        }
        for bad in malformed {
            output.notice(StarlineError(.data, "line \(bad.line): \(bad.reason)", details: .object([("line", .int(bad.line)), ("text", .string(bad.text))])).json.serialized())
        }
        guard malformed.isEmpty else {
            throw StarlineError(.partial, "\(malformed.count) input line\(malformed.count == 1 ? "" : "s") could not be read",
                                details: .object([("malformed", .int(malformed.count)), ("planned", .int(entries.count))]))
        }
        return .ok
    }
}
