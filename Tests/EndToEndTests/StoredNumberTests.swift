import Foundation
import StarlineCore
import StarlineSQLite
import StarlineTestSupport
import Testing

/// Stored numbers at the ends of Int64, through the built tools: a stored session whose `expires_at` is at an end
/// of Int64 (the clear column of `candidates`) used to reach date arithmetic and output. Now it is CORRUPT_FILE
/// (exit 12) naming the column, `sl-restore` still prints its one state record, and `sl-login clear` removes it.
@Suite struct StoredNumberTests {
    @Test(
        """
        expires_at = INT64_MIN / INT64_MAX in the store: sl-restore exits 12 with its state line; status says why; \
        clear recovers
        """,
        arguments: ["-9223372036854775808", "9223372036854775807"])
    func corruptExpiry(_ value: String) throws {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("bob")
        let databasePath = h.home.file("starline/state/sessions.db")
        do {
            let db = try SQLiteDatabase(path: databasePath)
            try db.execute("UPDATE candidates SET expires_at = \(value)")
        }

        let restore = try h.restore()
        #expect(restore.status == 12, "\(restore.run.stderrText)")
        let lines = restore.run.stdoutText.split(separator: "\n")
        #expect(lines.count == 1, "one state record: \(restore.run.stdoutText)")
        #expect(restore.state == "keptUnverified" && restore.result?["reason"]?.stringValue == "corruptRecord")
        let error = try restore.run.error()["error"]
        #expect(error?["code"]?.stringValue == "CORRUPT_FILE")
        #expect(error?["details"]?["column"]?.stringValue == "expires_at" && error?["details"]?["value"]?.intValue == Int64(value))
        #expect(error?["message"]?.stringValue?.contains("expires_at is \(value), outside the years 0001–9999") == true)
        #expect(error?["message"]?.stringValue?.contains("sl-login clear removes it") == true)
        #expect(!restore.run.stderrText.contains("Fatal error"))

        let status = try h.run("sl-login", ["status"])
        #expect(status.status == 12 && status.errorCode == "CORRUPT_FILE", "\(status.stderrText)")
        #expect(try h.run("sl-login", ["token"]).status == 12)

        #expect(try h.run("sl-login", ["clear"]).status == 0)
        let after = try h.restore()
        #expect(after.status == 3 && after.state == "absent")
    }
}
