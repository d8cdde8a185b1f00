import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// S16: a few bad items never stall or stop a bulk run — the built sl-sessions against a real sl-devserver
/// with faults on single sessions' paths. GAM retries an item and moves on; so does a revocation: an outage
/// is the server failing across many distinct items, and only the caller's own authentication stops a run.
@Suite struct BulkBadItemTests {
    func harness() throws -> SessionToolsHarness {
        let h = try SessionToolsHarness(server: try DevServerProcess())
        try h.storeLogin("alice")
        return h
    }

    func createSessions(_ h: SessionToolsHarness, count: Int) throws -> [String] {
        try h.server.createSessions(count: count)
    }

    func fault(_ h: SessionToolsHarness, session: String, _ fields: [(String, JSON)]) throws {
        let route = "DELETE /api/admin/users/carol/sessions/\(session)"
        _ = try h.server.dev("POST", "/__dev/faults", .object([("route", .string(route))] + fields))
    }

    func lines(_ run: ToolRun) throws -> (items: [JSON], summary: JSON?) {
        let all = try run.jsonLines()
        return (all.filter { $0["summary"] == nil }, all.last?["summary"])
    }

    /// 1,000 sessions of which five always answer 500 (side by side in the plan, as one user's would be) and
    /// three hang past the client's timeout: the other 992 are revoked, those eight fail with their causes
    /// after their own attempts, exit 8 — not exit 7 with the rest skipped, as when they passed for an outage.
    @Test func testS16FiveBrokenAndThreeHangingItemsFailAloneAndTheRestIsRevoked() throws {
        let h = try harness()
        let ids = try createSessions(h, count: 1000)
        #expect(ids.count == 1000)
        let broken = Array(ids[100..<105]), hanging = [ids[300], ids[301], ids[302]]
        for id in broken { try fault(h, session: id, [("status", .int(500))]) }
        for id in hanging { try fault(h, session: id, [("delayMs", .int(35_000))]) }
        let plan = ids.map { "carol,\($0)" }.joined(separator: "\n") + "\n"
        let run = try h.spawn(
            "sl-sessions", ["revoke", "--timeout", "1", "--outage-timeout", "60s", "-"], stdin: Array(("user,id\n" + plan).utf8)
        ).waitOrKill(seconds: 240)
        #expect(run.status == 8, "\(run.stderrText.suffix(2000))")
        let (items, summary) = try lines(run)
        let byId = Dictionary(items.compactMap { line in line["id"]?.stringValue.map { ($0, line) } }, uniquingKeysWith: { a, _ in a })
        #expect(byId.count == 1000)
        let bad = Set(broken + hanging)
        #expect(ids.filter { !bad.contains($0) }.allSatisfy { byId[$0]?["status"]?.stringValue == "revoked" })
        for id in broken {
            #expect(byId[id]?["status"]?.stringValue == "failed" && byId[id]?["error"]?["code"]?.stringValue == "SERVER_ERROR", "\(id)")
        }
        for id in hanging {
            #expect(byId[id]?["status"]?.stringValue == "failed" && byId[id]?["error"]?["code"]?.stringValue == "TIMEOUT", "\(id)")
        }
        #expect(summary?["revoked"]?.intValue == 992 && summary?["failed"]?.intValue == 8 && summary?["skipped"]?.intValue == 0)
    }

    /// A 403 on one target is that item's failure while the caller is still an admin: the other 99 are
    /// revoked (exit 8). A caller without the admin role is stopped at once (exit 5).
    @Test func testS16AForbiddenItemFailsAloneAndALostAdminRoleStopsTheRun() throws {
        let h = try harness()
        let ids = try createSessions(h, count: 100)
        try fault(h, session: ids[40], [("status", .int(403))])
        let plan = "user,id\n" + ids.map { "carol,\($0)\n" }.joined()
        let run = try h.run("sl-sessions", ["revoke", "-"], stdin: Array(plan.utf8))
        #expect(run.status == 8, "\(run.stderrText.suffix(2000))")
        let (items, summary) = try lines(run)
        #expect(summary?["revoked"]?.intValue == 99 && summary?["failed"]?.intValue == 1 && summary?["skipped"]?.intValue == 0)
        let refused = items.first { $0["id"]?.stringValue == ids[40] }
        #expect(refused?["status"]?.stringValue == "failed" && refused?["error"]?["code"]?.stringValue == "FORBIDDEN")

        // A caller without the admin role: every target is refused, the server's /api/me says why, the run stops.
        let bob = try SessionToolsHarness(server: h.server)
        try bob.storeLogin("bob")
        let more = try createSessions(h, count: 50)
        let stopped = try bob.run("sl-sessions", ["revoke", "-"], stdin: Array(("user,id\n" + more.map { "carol,\($0)\n" }.joined()).utf8))
        #expect(stopped.status == 5, "\(stopped.stderrText.suffix(2000))")
        let (_, stoppedSummary) = try lines(stopped)
        #expect((stoppedSummary?["skipped"]?.intValue ?? 0) > 0, "the rest is not attempted once the caller is refused")
    }
}
