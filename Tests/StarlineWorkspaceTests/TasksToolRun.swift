import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
@testable import TasksCommands

/// sl-tasks run in-process (`ToolMain.execute`) with STARLINE_HOME in `home`, captured streams and `now` as
/// the clock: the one runner of this target's in-process suites.
func runTasks(
    _ words: [String], home: TemporaryDirectory, stdin: [UInt8] = [], environment: [String: String] = [:],
    now: Timestamp? = nil
) -> (status: StarlineCore.ExitStatus, stdout: String, stderr: String) {
    var env = ["STARLINE_HOME": home.path + "/starline"]
    for (k, v) in environment { env[k] = v }
    let captured = IOStreams.capturing(stdin: stdin, environment: Environment(env), now: now)
    let status = ToolMain.execute(TasksTool.tool, words, io: captured.io)
    return (status, captured.stdout.text, captured.stderr.text)
}

/// The error object on the first line of stderr.
func firstError(_ stderr: String) throws -> JSON {
    try #require(try JSON.parse(String(stderr.split(separator: "\n").first ?? ""))["error"])
}
