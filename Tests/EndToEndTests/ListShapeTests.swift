import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
import ChatCommands
import MemoryCommands
import QRCommands
import SessionsCommands
import TasksCommands

/// One shape for every list (README, Conventions): piped, each list command prints JSON Lines — one object
/// per line — and `-o json` one array of the same records. The commands are found in the tools' specs (every
/// command that declares `-o/--output FORMAT`), so a new list command that this test does not run fails it.
/// W1 (tasks), W2 (memory), W4 (chat), S16 (sessions), W5 (sl-qr).
@Suite(.serialized) struct ListShapeTests {
    static let tools: [ToolSpec] = [
        QRTool.tool.spec, TasksTool.tool.spec, SessionsTool.tool.spec, MemoryTool.tool.spec, ChatTool.tool.spec
    ]

    /// A signed-in home against a real dev server with something in every list: two tasks, a site and a
    /// recent page, a note, a sent and a queued chat message, a moment, a QR image.
    final class Fixture: @unchecked Sendable {
        let server: DevServerProcess
        let harness: SessionToolsHarness
        let scratch = TemporaryDirectory("list-shape")
        var image: String { scratch.file("link.png") }
        let environment = ["STARLINE_MEMORY_PASSPHRASE": "correct horse battery staple"]

        init() throws {
            server = try DevServerProcess()
            harness = try SessionToolsHarness(server: server)
            try harness.storeLogin("alice")
            let setup: [(String, [String])] = [
                ("sl-tasks", ["add", "Pay rent", "--due", "2020-01-01T09:00:00Z", "--tag", "home"]),
                ("sl-tasks", ["add", "Call back"]),
                ("sl-tasks", ["sites", "add", "https://example.com/", "--title", "Example"]),
                ("sl-tasks", ["recent", "add", "https://example.com/news"]),
                ("sl-memory", ["init"]),
                ("sl-memory", ["add", "--title", "router", "--tag", "home", "wifi password is on the box"]),
                ("sl-chat", ["send", "c_team", "deploy done"]),
                ("sl-chat", ["send", "c_team", "--queue", "later"]),
                ("sl-chat", ["moments", "post", "shipped"]),
                ("sl-qr", ["encode", "-o", scratch.file("link.png"), "https://example.com/qr"])
            ]
            for (tool, arguments) in setup {
                let run = try harness.run(tool, arguments, environment: environment)
                guard run.status == 0 else {
                    throw StarlineError(.data, "\(tool) \(arguments.joined(separator: " ")) exited \(run.status): \(run.stderrText)")
                }
            }
        }

        func run(_ tool: String, _ arguments: [String]) throws -> ToolRun {
            try harness.run(tool, arguments, environment: environment)
        }
    }

    /// The arguments each list command needs to list something.
    static func arguments(_ command: String, _ fixture: Fixture) -> [String]? {
        switch command {
        case "sl-sessions list", "sl-tasks sites list", "sl-tasks recent list", "sl-memory list", "sl-chat conversations",
            "sl-chat unread", "sl-chat friends", "sl-chat moments list", "sl-chat outbox list":
            []
        case "sl-tasks list": ["--all"]
        case "sl-memory search": ["router"]
        case "sl-chat history": ["c_team"]
        case "sl-qr decode": [fixture.image]
        default: nil
        }
    }

    /// Every command that prints a list: it declares ListOptions' `-o/--output FORMAT`.
    static var listCommands: [(tool: String, path: [String])] {
        tools.flatMap { tool in
            tool.allCommands.filter { entry in
                entry.command.options.contains {
                    $0.long == ListOptions.format.spec.long && $0.valueName == ListOptions.format.spec.valueName
                }
            }.map { (tool.name, $0.path) }
        }
    }

    @Test("every list command prints JSON Lines when piped, and -o json one array of the same records")
    func everyListCommandPrintsJSONLinesWhenPiped() throws {
        let fixture = try Fixture()
        defer { _ = fixture.server.stop() }
        let commands = Self.listCommands
        #expect(commands.count >= 13, "the specs name the list commands: \(commands)")
        for (tool, path) in commands {
            let name = ([tool] + path).joined(separator: " ")
            guard let arguments = Self.arguments(name, fixture) else {
                Issue.record("\(name) prints a list: teach ListShapeTests the arguments that make it list something")
                continue
            }
            let piped = try fixture.run(tool, path + arguments)
            #expect(piped.status == 0, "\(name): \(piped.stderrText)")
            let lines = piped.stdoutText.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            #expect(!lines.isEmpty, "\(name) listed nothing: the fixture must give every list a record")
            #expect(piped.stdoutText.hasSuffix("\n"), "\(name): \(piped.stdoutText)")
            let records = lines.map { try? JSON.parse(String($0)) }
            #expect(records.allSatisfy { $0?.objectValue != nil }, "\(name): each line one JSON object: \(piped.stdoutText)")

            let array = try fixture.run(tool, path + arguments + ["-o", "json"])
            #expect(array.status == 0, "\(name) -o json: \(array.stderrText)")
            let elements = (try? JSON.parse(array.stdout))?.arrayValue
            #expect(elements?.count == records.count, "\(name) -o json: one array of the same records: \(array.stdoutText)")
            // The same records (the keys of each; a chat read's freshAsOf moves between the two runs).
            #expect(
                elements?.map { $0.objectValue?.map(\.0) } == records.map { $0?.objectValue?.map(\.0) },
                "\(name): \(array.stdoutText) vs \(piped.stdoutText)")

            // --compact asks for the same lines, --pretty for one indented array.
            let compact = try fixture.run(tool, path + arguments + ["--compact"])
            #expect(compact.stdoutText.split(separator: "\n").count == records.count, "\(name) --compact: \(compact.stdoutText)")
            let pretty = try fixture.run(tool, path + arguments + ["--pretty"])
            #expect(pretty.stdoutText.hasPrefix("[\n  {"), "\(name) --pretty: \(pretty.stdoutText)")
            #expect((try? JSON.parse(pretty.stdout))?.arrayValue?.count == records.count, "\(name) --pretty")
        }
    }

    /// The JSON type of a value, as a glossary names it (null is absent, not a type of its own).
    static func type(_ value: JSON) -> String? {
        switch value {
        case .null: nil
        case .bool: "boolean"
        case .int, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        default: "number"
        }
    }

    /// Every key in `value` (at any depth, through arrays) with the type of its value, tagged with `source`.
    static func collect(_ value: JSON, _ source: String, into types: inout [String: [String: String]]) {
        switch value {
        case .object(let members):
            for (key, member) in members {
                if let t = type(member), types[key]?[t] == nil { types[key, default: [:]][t] = source }
                collect(member, source, into: &types)
            }
        case .array(let elements): for e in elements { collect(e, source, into: &types) }
        default: break
        }
    }

    @Test("one name, one type: a field name means the same JSON type in every record every tool prints (docs/formats.md)")
    func aFieldNameHasOneTypeAcrossTools() throws {
        let fixture = try Fixture()
        defer { _ = fixture.server.stop() }
        var types: [String: [String: String]] = [:]
        var runs: [(String, [String])] = Self.listCommands.compactMap { tool, path in
            Self.arguments(([tool] + path).joined(separator: " "), fixture).map { (tool, path + $0) }
        }
        runs += [
            ("sl-restore", []), ("sl-login", ["status"]), ("sl-login", ["center"]),
            ("sl-tasks", ["add", "Walk", "--due", "2030-01-01T09:00:00Z"]), ("sl-memory", ["add", "a note"]),
            ("sl-chat", ["send", "c_team", "hello"]), ("sl-chat", ["friend-link", "create"]), ("sl-chat", ["sync"]),
            ("sl-qr", ["encode", "-o", fixture.scratch.file("b.png"), "https://example.com/b"]),
            ("sl-sessions", ["revoke", "--dry-run", "-"])
        ]
        for (tool, arguments) in runs {
            // revoke reads what list printed (its input form), as the README's recipes pipe it.
            let stdin = tool == "sl-sessions" && arguments.first == "revoke" ? try fixture.run("sl-sessions", ["list"]).stdout : nil
            let run = try fixture.harness.run(tool, arguments, stdin: stdin, environment: fixture.environment)
            let source = ([tool] + arguments).joined(separator: " ")
            #expect(run.status == 0, "\(source): \(run.stderrText)")
            for line in run.stdoutText.split(separator: "\n") {
                guard let record = try? JSON.parse(String(line)) else { continue }
                Self.collect(record, source, into: &types)
            }
        }
        let glossary = try Self.glossary()
        for (key, seen) in types.sorted(by: { $0.key < $1.key }) {
            let documented = glossary[key]
            #expect(documented != nil, "\"\(key)\" (in `\(seen.values.sorted()[0])`) is not in docs/formats.md's field glossary")
            if let documented, seen.count == 1, let type = seen.keys.first {
                #expect(documented == type, "\"\(key)\" is \(type) in `\(seen[type]!)` but the glossary says \(documented)")
            }
        }
        for (key, seen) in types.sorted(by: { $0.key < $1.key }) where seen.count > 1 {
            Issue.record(
                "\"\(key)\" has \(seen.count) types: \(seen.map { "\($0.key) in `\($0.value)`" }.sorted().joined(separator: ", "))")
        }
    }

    /// docs/formats.md's field glossary: `| \`name\` | type | meaning |` rows.
    static func glossary() throws -> [String: String] {
        let text = try String(contentsOfFile: repositoryRootForTests + "/docs/formats.md", encoding: .utf8)
        guard let start = text.range(of: "## Field glossary") else { return [:] }
        var entries: [String: String] = [:]
        for line in text[start.upperBound...].split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            entries[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = cells[1]
        }
        return entries
    }
}
