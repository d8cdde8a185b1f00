import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// Every cron line of the README (its ```cron blocks) holds on a quiet day: nothing due, nothing queued,
/// nobody to offboard, an empty vault. Each line runs once, as cron would run it (`sh -c`, `\%` → `%`, the
/// block's variable lines set, an empty stdin), against a real sl-devserver with a signed-in admin and an
/// initialised vault under a temporary HOME and STARLINE_HOME. A line passes when it exits 0 and no error
/// object reached its stderr or the logs it writes — a `cmd ; other` line that exits 0 while `cmd` failed
/// does not pass. `mail` and `ifne` (not installed here) are small stand-ins that record what they were given.
///
/// `@reboot` lines start services that run until stopped: each must come up (sl-devserver prints its first
/// line; `tail --follow` reaches its long poll) and still be running, then ends cleanly on SIGTERM — exit 0
/// for sl-devserver, as documented, and 143 (128 + SIGTERM, README, Conventions: "Signals") for every other tool.
@Suite struct ReadmeCronLinesTests {
    struct CronLine: CustomStringConvertible {
        /// The README line it is on (1-based).
        var number: Int
        var schedule: String
        /// The command as cron gives it to sh (`\%` already turned into `%`).
        var command: String
        /// Variable lines above it in its block (`OFFBOARDED=carol`), as cron sets them.
        var variables: [String: String]
        var description: String { "README.md:\(number): \(command)" }
        var runsUntilStopped: Bool { schedule == "@reboot" && (command.contains("sl-devserver") || command.contains("--follow")) }
    }

    /// The ```cron blocks of `readme`: comment and blank lines skipped, `NAME=value` lines kept as variables,
    /// a schedule of five fields or one `@word`, then the command.
    static func cronLines(_ readme: String) throws -> [CronLine] {
        var lines: [CronLine] = []
        var inBlock = false
        var variables: [String: String] = [:]
        for (index, raw) in readme.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw)
            if line.hasPrefix("```") {
                inBlock = line == "```cron"
                variables = [:]
                continue
            }
            guard inBlock else { continue }
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let fields = trimmed.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            if fields.count == 1, let equals = trimmed.firstIndex(of: "="), !trimmed.hasPrefix("@") {
                variables[String(trimmed[..<equals])] = String(trimmed[trimmed.index(after: equals)...])
                continue
            }
            let scheduleFields = fields[0].hasPrefix("@") ? 1 : 5
            guard fields.count > scheduleFields else { throw StarlineError(.data, "README.md:\(index + 1): not a cron line: \(line)") }
            // The command is the rest of the line after the schedule's fields, spacing kept.
            var rest = Substring(trimmed)
            for _ in 0..<scheduleFields {
                rest = rest.drop(while: { $0 != " " }).drop(while: { $0 == " " })
            }
            // cron turns an unescaped % into a newline (the rest is stdin): the README must escape every one.
            let unescaped = rest.replacingOccurrences(of: "\\%", with: "")
            guard !unescaped.contains("%") else {
                throw StarlineError(.data, "README.md:\(index + 1): an unescaped % (cron makes it a newline): \(line)")
            }
            lines.append(
                CronLine(
                    number: index + 1, schedule: fields[0...(scheduleFields - 1)].joined(separator: " "),
                    command: rest.replacingOccurrences(of: "\\%", with: "%"), variables: variables))
        }
        return lines
    }

    /// A quiet day's machine: a dev server with alice (admin) signed in, an empty vault with its passphrase
    /// file, the directories the lines write into, a job for the login gate, and `mail`/`ifne` stand-ins.
    struct QuietDay {
        let harness: SessionToolsHarness
        let stubs = TemporaryDirectory("cron-stubs")
        var home: String { harness.home.path }
        var mailLog: String { home + "/mail.log" }

        init() throws {
            // A session of a month (the dev server's last a day): the README's expiry check warns 3 days ahead.
            harness = try SessionToolsHarness(server: try DevServerProcess(["--session-ttl", "30d"]))
            try harness.storeLogin("alice")
            // Written by a child process, never by this (multi-threaded) one: a script this process had open
            // for writing when another test forked could not be executed (ETXTBSY).
            let setup = """
                set -e
                cd '\(home)'
                mkdir -p logs public backup audit bin .cache .config/starline
                printf '#!/bin/sh\\necho ran >> "$HOME/job.ran"\\n' > bin/job-that-needs-the-login
                chmod 755 bin/job-that-needs-the-login
                (umask 077; printf 'a quiet day passphrase\\n' > .config/starline/memory.pass)
                # mail: records its arguments and its message.
                printf '#!/bin/sh\\n{ echo "mail $*"; cat; } >> "$HOME/mail.log"\\n' > '\(stubs.path)/mail'
                # ifne (moreutils): runs the command only when stdin is not empty, passing stdin on.
                printf '#!/bin/sh\\nt=$(mktemp) || exit 1\\ncat > "$t"\\nif [ -s "$t" ]; then "$@" < "$t"; s=$?; else s=0; fi\\nrm -f "$t"\\nexit $s\\n' > '\(stubs.path)/ifne'
                chmod 755 '\(stubs.path)/mail' '\(stubs.path)/ifne'
                """
            let prepared = try Tools.run("/bin/sh", ["-c", setup], home: home)
            guard prepared.status == 0 else { throw StarlineError(.internalError, "setup failed: \(prepared.stderrText)") }
            let vault = try harness.run("sl-memory", ["--passphrase-file", home + "/.config/starline/memory.pass", "init"])
            guard vault.status == 0 else { throw StarlineError(.internalError, "sl-memory init failed: \(vault.stderrText)") }
        }

        /// What cron gives a line: cron's own PATH (/usr/bin:/bin) unless the block sets one, HOME, the
        /// platform of this test, the block's variables. The README's PATH line names /usr/local/bin, where
        /// `make install PREFIX=/usr/local` puts the tools: under `make test` that entry stands for the build
        /// directory; scripts/package-check runs this test again with STARLINE_BIN_DIR=/usr/local/bin after a real
        /// `make install PREFIX=/usr/local` (a tmpfs over /usr/local in a private mount namespace), so there it is
        /// that directory itself. The stand-ins are beside it. A block without a PATH line gets cron's, and a bare
        /// tool name in it is not found (exit 127), as under cron.
        func environment(_ line: CronLine) -> [String: String] {
            var env = harness.environment
            env["PATH"] = "/usr/bin:/bin"
            env["SHELL"] = "/bin/sh"
            for (k, v) in line.variables { env[k] = v }
            env["PATH"] = (env["PATH"] ?? "").split(separator: ":").map {
                $0 == "/usr/local/bin" ? "\(Tools.binDirectory):\(stubs.path)" : String($0)
            }.joined(separator: ":")
            return env
        }

        /// Substitutions for this machine: the dev server line takes a free port, not 8080.
        func command(_ line: CronLine) -> String {
            line.command.replacingOccurrences(of: "sl-devserver --port 8080", with: "sl-devserver --port 0")
        }

        func messages(_ conversation: String) throws -> Int {
            let alice = try harness.server.login("alice")
            return try harness.server.request("GET", "/chat/v1/conversations/\(conversation)/messages?limit=200", token: alice.token)
                .json()["messages"]?.arrayValue?.count ?? -1
        }

        func syncRequests() throws -> Int {
            let counters = try harness.server.dev("GET", "/__dev/counters").json()["counters"]?.objectValue ?? []
            return counters.filter { $0.0.contains("/v1/sync") }.reduce(0) { $0 + Int($1.1.intValue ?? 0) }
        }

        /// Error objects written to the logs under HOME.
        func errorsInLogs() -> [String] {
            var found: [String] = []
            for directory in ["logs", "audit"] {
                let path = home + "/" + directory
                for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
                    let text = (try? String(contentsOfFile: path + "/" + name, encoding: .utf8)) ?? ""
                    for line in text.split(separator: "\n") where line.contains(#"{"error":"#) {
                        found.append("\(directory)/\(name): \(line)")
                    }
                }
            }
            return found
        }
    }

    /// Every Starline tool process at or below `pid` (the shell may have exec'd into the tool, or forked it).
    static func toolProcesses(under pid: pid_t) -> [pid_t] {
        var found: [pid_t] = []
        let comm = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? ""
        if comm.hasPrefix("sl-") { found.append(pid) }
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        for child in children.split(separator: " ").compactMap({ pid_t(String($0).trimmingWhitespace()) }) {
            found += toolProcesses(under: child)
        }
        return found
    }

    @Test func theReadmeHasTheCronLinesThisTestExpects() throws {
        let lines = try Self.cronLines(try String(contentsOfFile: repositoryRoot + "/README.md", encoding: .utf8))
        // A README without cron blocks (or a parser that finds none) would make the next test prove nothing.
        #expect(lines.count >= 10, "\(lines)")
        #expect(lines.contains { $0.variables["OFFBOARDED"] == "carol" })
        #expect(lines.contains { $0.command.contains("sl-chat send") && $0.command.contains("date +%F") })
        #expect(lines.filter(\.runsUntilStopped).count == 2, "\(lines)")
    }

    @Test("W4 W5: every cron line of the README exits 0 on a quiet day, with no error and nothing sent or mailed")
    func w4W5EveryReadmeCronLineHoldsOnAQuietDay() throws {
        let lines = try Self.cronLines(try String(contentsOfFile: repositoryRoot + "/README.md", encoding: .utf8))
        let day = try QuietDay()
        let teamBefore = try day.messages("c_team")
        for line in lines {
            let before = day.errorsInLogs().count
            let process = try Tools.spawn(
                "/bin/sh", ["-c", day.command(line)], stdin: [], home: day.home, environment: day.environment(line))
            let run: ToolRun
            if line.runsUntilStopped {
                // Up: sl-devserver's first line in the file its stdout goes to; tail in its long poll.
                let syncs = try day.syncRequests()
                var up = false
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline, process.wait(seconds: 0.1) == nil {
                    up =
                        line.command.contains("sl-devserver")
                        ? ((try? String(contentsOfFile: day.home + "/logs/dev.json", encoding: .utf8)) ?? "").contains("\"listening\"")
                        : (try day.syncRequests()) > syncs
                    if up { break }
                }
                #expect(up, "\(line): never came up: \(process.stderrSoFar)")
                #expect(process.wait(seconds: 0.5) == nil, "\(line): ended by itself: \(process.stderrSoFar)")
                let tools = Self.toolProcesses(under: process.pid)
                #expect(!tools.isEmpty, "\(line): no tool process to stop")
                for pid in tools { kill(pid, SIGTERM) }
                run = process.waitOrKill(seconds: 30)
                let expected: Int32 = line.command.contains("sl-devserver") ? 0 : 143
                #expect(run.status == expected, "\(line): exit \(run.status): \(run.stderrText)")
            } else {
                run = process.waitOrKill(seconds: 120)
                #expect(run.status == 0, "\(line): exit \(run.status): \(run.stderrText)")
            }
            #expect(!run.stderrText.contains(#"{"error":"#), "\(line): \(run.stderrText)")
            let logged = day.errorsInLogs()
            #expect(logged.count == before, "\(line): \(logged.dropFirst(before))")
        }
        // A quiet day: nothing was posted to the team, nobody was mailed, and the login gate let its job run.
        #expect(try day.messages("c_team") == teamBefore)
        let mailed = (try? String(contentsOfFile: day.mailLog, encoding: .utf8)) ?? ""
        #expect(!FileManager.default.fileExists(atPath: day.mailLog), "\(mailed)")
        #expect(FileManager.default.fileExists(atPath: day.home + "/job.ran"))
    }
}
