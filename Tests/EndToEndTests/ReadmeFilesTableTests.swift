import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// README's table of files says where every tool keeps what, with `STARLINE_HOME` and without it (XDG). The
/// test reads the table, runs the built tools once per layout so that each file comes to exist (a login, a
/// chat sync, a task, a vault with its agent), and checks every path of the table exists with its mode, and
/// that the tools left nothing under their directories the table does not name.
@Suite(.serialized) struct ReadmeFilesTableTests {
    struct Row {
        var name: String
        var withHome: String
        var withHomeExtras: [String]
        var xdg: String
        var mode: String
    }

    static var readme: String { Tools.binDirectory.components(separatedBy: "/.build/").first! + "/README.md" }

    /// The rows of the table whose header starts `| file | with \`STARLINE_HOME=DIR\``.
    static func rows() throws -> [Row] {
        let text = try String(contentsOfFile: readme, encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        guard let header = lines.firstIndex(where: { $0.hasPrefix("| file | with `STARLINE_HOME=DIR`") }) else { return [] }
        func code(_ cell: String) -> [String] {
            cell.components(separatedBy: "`").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        }
        return lines[(header + 2)...].prefix { $0.hasPrefix("|") }.map { line in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { String($0).trimmingCharacters(in: .whitespaces) }
            let home = code(cells[2])
            return Row(
                name: cells[1], withHome: home.first ?? "", withHomeExtras: Array(home.dropFirst()), xdg: code(cells[3]).first ?? "",
                mode: cells[4])
        }
    }

    /// One layout: the environment the tools get and how a table path maps to a real one.
    struct Layout {
        var label: String
        var environment: [String: String]
        var roots: [String]
        var resolve: (Row) -> String
    }

    /// Runs the tools that create every file of the table, in `layout`.
    func populate(_ harness: SessionToolsHarness, _ layout: Layout, configFile: String) throws -> [String] {
        var failures: [String] = []
        func run(_ tool: String, _ arguments: [String], stdin: [UInt8]? = nil, _ extra: [String: String] = [:]) throws -> ToolRun {
            let result = try harness.run(tool, arguments, stdin: stdin, environment: layout.environment.merging(extra) { $1 })
            if result.status != 0 {
                failures.append(
                    "\(layout.label): \(tool) \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderrText.prefix(300))"
                )
            }
            return result
        }
        let login = try harness.server.login("alice")
        _ = try run("sl-login", ["--with-token"], stdin: Array(login.token.utf8))
        _ = try run("sl-chat", ["sync"])
        _ = try run("sl-tasks", ["add", "files table"])
        let memory = ["STARLINE_MEMORY_PASSPHRASE": "files table passphrase", "STARLINE_KEYRING": "no"]
        _ = try run("sl-memory", ["init"], memory)
        _ = try run("sl-memory", ["unlock", "--ttl", "5m"], memory)
        // The profile is read from the table's path: a profile timeout of 5x there is a usage error naming it.
        try FileManager.default.createDirectory(
            atPath: (configFile as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        _ = FileManager.default.createFile(
            atPath: configFile, contents: Data(#"{"profiles":{"default":{"timeout":"5x"}}}"#.utf8),
            attributes: [.posixPermissions: 0o600])
        let profiled = try harness.run("sl-restore", [], environment: layout.environment)
        if !(profiled.status == 2 && profiled.stderrText.contains("profile")) {
            failures.append(
                "\(layout.label): sl-restore did not read the profile at \(configFile): \(profiled.status) \(profiled.stderrText.prefix(300))"
            )
        }
        try? FileManager.default.removeItem(atPath: configFile)
        return failures
    }

    func mode(_ path: String) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return "0" + String(info.st_mode & 0o777, radix: 8)
    }

    @Test(
        """
        README's table of files: every path, with STARLINE_HOME and without (XDG), is where the tools put it, with \
        its mode; nothing else is there
        """)
    func tableMatchesWhatTheToolsCreate() throws {
        let rows = try Self.rows()
        #expect(rows.count >= 9, "the table of files was not found in README.md")
        let server = try DevServerProcess()
        let home = TemporaryDirectory("files-table")
        let starlineHome = home.file("starline")
        let xdg = [
            "XDG_CONFIG_HOME": home.file("xdg-config"), "XDG_STATE_HOME": home.file("xdg-state"), "XDG_DATA_HOME": home.file("xdg-data"),
            "XDG_RUNTIME_DIR": home.file("xdg-run")
        ]
        try FileManager.default.createDirectory(
            atPath: home.file("xdg-run"), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let layouts = [
            Layout(label: "STARLINE_HOME", environment: [:], roots: ["/state", "/data"].map { starlineHome + $0 }) { row in
                row.withHome.replacingOccurrences(of: "DIR/", with: starlineHome + "/")
            },
            // Tools.spawn sets STARLINE_HOME; empty, it is ignored (as unset).
            Layout(
                label: "XDG", environment: xdg.merging(["STARLINE_HOME": ""]) { $1 },
                roots: ["XDG_STATE_HOME", "XDG_DATA_HOME"].map { xdg[$0]! + "/starline" }
            ) { row in
                var path = row.xdg
                for (name, value) in xdg { path = path.replacingOccurrences(of: "$" + name + "/", with: value + "/") }
                return path
            }
        ]
        var problems: [String] = []
        for layout in layouts {
            let harness = try SessionToolsHarness(server: server, home: TemporaryDirectory("files-table-harness"))
            harness.extraEnvironment = ["HOME": home.path]
            // Both layouts live in `home`: the harness's own STARLINE_HOME is replaced below.
            harness.extraEnvironment["STARLINE_HOME"] = layout.label == "XDG" ? "" : starlineHome
            let configRow = try #require(rows.first { $0.name == "profiles" })
            problems += try populate(harness, layout, configFile: layout.resolve(configRow))
            defer { _ = try? harness.run("sl-memory", ["lock"], environment: layout.environment) }

            var covered: [String] = []
            for row in rows {
                let path = layout.resolve(row)
                let directory = path.hasSuffix("/")
                let real = directory ? String(path.dropLast()) : path
                covered.append(real)
                covered += row.withHomeExtras.map { real + $0 }
                if row.name == "profiles" { continue }  // read, never written: checked through the profile above
                guard let found = mode(real) else { problems.append("\(layout.label): \(row.name) \(real) does not exist"); continue }
                if row.mode.hasPrefix("0") && found != row.mode {
                    problems.append("\(layout.label): \(real) has mode \(found), the table says \(row.mode)")
                }
            }
            // Nothing the tools left in the state and data directories is missing from the table (the config
            // directory holds only what the user writes; the runtime directory, the sockets its row names).
            for root in layout.roots {
                for entry in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] {
                    let path = root + "/" + entry
                    if !covered.contains(path) { problems.append("\(layout.label): \(path) is not in the table") }
                }
            }
        }
        #expect(problems.isEmpty, "\(problems.count) problems:\n\(problems.joined(separator: "\n"))")
    }
}
