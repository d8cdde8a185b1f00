import Foundation

extension Tools {
    /// `command`, a shell command line, run by script(1) on a pseudo-terminal `columns` wide: what a person
    /// sees, the tty's CRLF turned back into LF. `term` is the TERM the terminal claims (`dumb` unless the test
    /// runs a program that draws, such as less). With `harness`, in the harness's home, against its server.
    public static func onTerminal(
        _ command: String, home: String, columns: Int = 100, term: String = "dumb", harness: SessionToolsHarness? = nil
    ) throws -> ToolRun {
        let arguments = ["-qec", command, "/dev/null"]
        let environment = ["COLUMNS": String(columns), "TERM": term]
        var result =
            try harness?.run("/usr/bin/script", arguments, environment: environment)
            ?? run("/usr/bin/script", arguments, home: home, environment: environment)
        result.stdout = Array(result.stdoutText.replacingOccurrences(of: "\r\n", with: "\n").utf8)
        return result
    }
}
