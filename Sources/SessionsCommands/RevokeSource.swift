import StarlineCore
import StarlinePlatform
import PlatformCommands
import StarlineBulk

/// Where a revoke run's items come from: the arguments, `--others` and `--user UID --all`
/// (listed before the run), or stdin read as it arrives (`RevokeInputStream`) — one unit at a time, so a
/// pipe streams and no input is too large.
final class RevokeSource: @unchecked Sendable {
    // @unchecked: `next` is called under the bulk run's source lock, one worker at a time.
    private var listed: [BulkRevocation.Input]
    private var position = 0
    private let stream: RevokeInputStream?

    private init(listed: [BulkRevocation.Input], stream: RevokeInputStream?) {
        self.listed = listed
        self.stream = stream
    }

    @MainActor
    static func build(
        _ options: RevokeCommand.Options, _ context: CommandContext, client: StarlightClient,
        credentials: StarlightClient.RunCredentials
    ) async throws -> RevokeSource {
        if options.others {
            let sessions = try await client.sessions()
            let ids = sessions.filter { $0["current"] != .bool(true) }.compactMap { $0["id"]?.stringValue }
            return RevokeSource(
                listed: ids.enumerated().map { .target(.init(line: $0.offset + 1, target: RevocationTarget(id: $0.element, user: nil))) },
                stream: nil)
        }
        if options.all, let user = options.user {
            let platform = client.platform
            let token = credentials.token
            let sessions = try await client.authenticated { _ in try await platform.adminSessions(token: token, user: user) }
            let ids = sessions.compactMap { $0["id"]?.stringValue }
            return RevokeSource(
                listed: ids.enumerated().map { .target(.init(line: $0.offset + 1, target: RevocationTarget(id: $0.element, user: user))) },
                stream: nil)
        }
        if options.ids == ["-"] {
            let reader = LineReader(context.io.stdin, name: "standard input", maxLineBytes: RevokeInput.maxLineBytes)
            return RevokeSource(listed: [], stream: RevokeInputStream(reader, defaultUser: options.user))
        }
        let parsed = RevokeInput.fromArguments(options.ids, defaultUser: options.user)
        var inputs = parsed.items.map {
            BulkRevocation.Input.target(.init(line: $0.line, target: RevocationTarget(id: $0.id, user: $0.user)))
        }
        inputs += parsed.malformed.map { .malformed(line: $0.line, text: $0.text, reason: $0.reason) }
        return RevokeSource(listed: inputs.sorted { $0.line < $1.line }, stream: nil)
    }

    /// Known before the run (arguments, listings); nil for stdin.
    var total: Int? { stream == nil ? listed.count : nil }

    /// The next unit of input; nil at the end.
    func next() throws -> BulkRevocation.Input? {
        if let stream {
            switch try stream.next() {
            case .item(let item)?: return .target(.init(line: item.line, target: RevocationTarget(id: item.id, user: item.user)))
            case .malformed(let bad)?: return .malformed(line: bad.line, text: bad.text, reason: bad.reason)
            case nil: return nil
            }
        }
        guard position < listed.count else { return nil }
        defer { position += 1 }
        return listed[position]
    }

    /// `--dry-run`: this shard's plan as JSON Lines that `revoke -` reads back (duplicates left out), as the
    /// input arrives; unreadable lines go to stderr as errors.
    func printDryRun(_ output: Output, shard: BulkShard?) throws -> ExitStatus {
        let index = try BulkItemIndex()
        var planned = 0, malformed = 0
        while let input = try next() {
            switch input {
            case .malformed(let line, let text, let reason):
                guard (shard?.index ?? 0) == 0 else { continue }
                malformed += 1
                output.notice(
                    StarlineError(.data, "line \(line): \(reason)", details: .object([("line", .int(line)), ("text", .string(text))])).json
                        .serialized())
            case .owed: continue  // only a resumed run is owed items, never the input read here
            case .target(let entry):
                if let shard, !shard.contains(entry.target) { continue }
                guard case .first(_) = try index.see(id: entry.target.id, user: entry.target.user, line: entry.line) else { continue }
                planned += 1
                output.emitLine(
                    .object([("line", .int(entry.line)), ("id", .string(entry.target.id)), ("user", .optional(entry.target.user))]))
            }
        }
        guard malformed == 0 else {
            throw StarlineError(
                .partial, "\(malformed) input line\(malformed == 1 ? "" : "s") could not be read",
                details: .object([("malformed", .int(malformed)), ("planned", .int(planned))]))
        }
        return .ok
    }
}

extension BulkRevocation.Input {
    var line: Int {
        switch self {
        case .target(let entry), .owed(let entry): entry.line
        case .malformed(let line, _, _): line
        }
    }
}
