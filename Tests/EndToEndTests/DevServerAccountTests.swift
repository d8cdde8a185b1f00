import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// The account API: /api/me, center, device sessions, password change, SMS reset, admin routes.
@Suite struct DevServerAccountTests {
    @Test func meAndCenter() throws {
        let server = try DevServerProcess()
        let login = try server.login("alice")
        let me = try server.request("GET", "/api/me", token: login.token).json()
        #expect(me["user"]?["id"]?.stringValue == "alice")
        #expect(me["roles"] == .array([.string("admin")]))
        #expect(me["session"]?["id"]?.stringValue == login.sessionId)
        #expect(me["session"]?["appId"]?.stringValue == "workbench")
        #expect(Timestamp(rfc3339: me["session"]?["expiresAt"]?.stringValue ?? "")?.seconds != nil)
        let center = try server.request("GET", "/api/center", token: login.token).json()
        #expect(center["security"]?["phoneMasked"]?.stringValue == "+861******0001")
        #expect(center["sessionCount"]?.intValue == 3)  // two seeded + this one
        #expect(center["currentSessionId"]?.stringValue == login.sessionId)
    }

    @Test(arguments: [nil, "Bearer", "Bearer ", "Basic abc", "Bearer unknown-token"])
    func missingMalformedOrUnknownTokensAre401InvalidToken(_ header: String?) throws {
        let server = try DevServerProcess()
        let r = try server.request("GET", "/api/me", headers: header.map { [("Authorization", $0)] } ?? [])
        #expect(r.status == 401 && r.errorCode == "INVALID_TOKEN")
        #expect(r.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
    }

    @Test func expiredRestrictedAndDisabledSessions() throws {
        let server = try DevServerProcess()
        let bob = try server.login("bob")
        #expect(try server.dev("POST", "/__dev/users/bob/restrict").status == 200)
        let restricted = try server.request("GET", "/api/me", token: bob.token)
        #expect(restricted.status == 403 && restricted.errorCode == "ACCOUNT_RESTRICTED")
        _ = try server.dev("POST", "/__dev/users/bob/unrestrict")
        #expect(try server.request("GET", "/api/me", token: bob.token).status == 200)
        _ = try server.dev("POST", "/__dev/apps/workbench/disable")
        let disabled = try server.request("GET", "/api/me", token: bob.token)
        #expect(disabled.status == 403 && disabled.errorCode == "APP_UNAVAILABLE")
        _ = try server.dev("POST", "/__dev/apps/workbench/enable")
        #expect(try server.request("GET", "/api/me", token: bob.token).status == 200)
        #expect(try server.dev("POST", "/__dev/sessions/\(bob.sessionId)/expire").status == 200)
        let expired = try server.request("GET", "/api/me", token: bob.token)
        #expect(expired.status == 401 && expired.errorCode == "SESSION_EXPIRED")
        #expect(try server.dev("POST", "/__dev/users/nobody/restrict").status == 404)
        #expect(try server.dev("POST", "/__dev/apps/nope/disable").status == 404)
        #expect(try server.dev("POST", "/__dev/sessions/nope/expire").status == 404)
    }

    @Test func sessionsListRevokeOneAndOthers() throws {
        let server = try DevServerProcess()
        let a = try server.login("carol"), b = try server.login("carol")
        let sessions = try server.request("GET", "/api/sessions", token: a.token).json()["sessions"]?.arrayValue ?? []
        #expect(sessions.count == 2)
        #expect(sessions.first { $0["id"]?.stringValue == a.sessionId }?["current"] == .bool(true))
        #expect(sessions.first { $0["id"]?.stringValue == b.sessionId }?["current"] == .bool(false))
        #expect(sessions.first?["device"]?["platform"] != nil && sessions.first?["ip"]?.stringValue == "127.0.0.1")
        let revoked = try server.request("DELETE", "/api/sessions/\(b.sessionId)", token: a.token).json()
        #expect(revoked == .object([("revoked", .bool(true)), ("current", .bool(false))]))
        let again = try server.request("DELETE", "/api/sessions/\(b.sessionId)", token: a.token)
        #expect(again.status == 200)
        #expect(try again.json()["revoked"] == .bool(false))
        #expect(try server.request("DELETE", "/api/sessions/ses_unknown", token: a.token).status == 404)
        // Another user's session is not found, not revoked.
        let bob = try server.login("bob")
        #expect(try server.request("DELETE", "/api/sessions/\(bob.sessionId)", token: a.token).status == 404)
        let c = try server.login("carol"), d = try server.login("carol")
        let others = try server.request("POST", "/api/sessions/revoke-others", token: c.token).json()
        #expect(others["revoked"]?.intValue == 2)  // a and d
        #expect(try server.request("GET", "/api/me", token: c.token).status == 200)
        #expect(try server.request("GET", "/api/me", token: d.token).errorCode == "SESSION_REVOKED")
        let current = try server.request("DELETE", "/api/sessions/\(c.sessionId)", token: c.token).json()
        #expect(current["current"] == .bool(true))
        #expect(try server.request("GET", "/api/me", token: c.token).errorCode == "SESSION_REVOKED")
    }

    @Test func passwordChangeKeepsTheCallerAndRevokesTheOthers() throws {
        let server = try DevServerProcess()
        let a = try server.login("bob"), b = try server.login("bob")
        let wrong = try server.request(
            "POST", "/api/password", token: a.token,
            body: .json(.object([("oldPassword", .string("nope")), ("newPassword", .string("long-enough-1"))])))
        #expect(wrong.status == 403 && wrong.errorCode == "WRONG_PASSWORD")
        let weak = try server.request(
            "POST", "/api/password", token: a.token,
            body: .json(.object([("oldPassword", .string("bob-pass")), ("newPassword", .string("short"))])))
        #expect(weak.status == 400 && weak.errorCode == "WEAK_PASSWORD")
        let ok = try server.request(
            "POST", "/api/password", token: a.token,
            body: .json(.object([("oldPassword", .string("bob-pass")), ("newPassword", .string("new-bob-pass"))])))
        #expect(try ok.json()["revokedOthers"]?.intValue == 2)  // b and the seeded laptop session
        #expect(try server.request("GET", "/api/me", token: a.token).status == 200)
        #expect(try server.request("GET", "/api/me", token: b.token).errorCode == "SESSION_REVOKED")
        #expect(throws: StarlineError.self) { try server.login("bob") }
        _ = try server.login("bob", password: "new-bob-pass")
    }

    @Test func smsResetRevokesEverySessionOfTheAccount() throws {
        let server = try DevServerProcess()
        let a = try server.login("carol")
        let phone = "+8613800000003"
        let request = try server.request("POST", "/api/password/sms-reset/request", body: .json(.object([("phone", .string(phone))])))
        #expect(request.status == 202)
        let code = try #require(try server.dev("GET", "/__dev/sms/\(PercentEncoding.encode(phone))").json()["code"]?.stringValue)
        #expect(code.count == 6)
        let wrong = try server.request(
            "POST", "/api/password/sms-reset",
            body: .json(.object([("phone", .string(phone)), ("code", .string("000000x")), ("newPassword", .string("carol-new-pass"))])))
        #expect(wrong.status == 400 && wrong.errorCode == "INVALID_CODE")
        let reset = try server.request(
            "POST", "/api/password/sms-reset",
            body: .json(.object([("phone", .string(phone)), ("code", .string(code)), ("newPassword", .string("carol-new-pass"))])))
        #expect(reset.status == 200)
        #expect(try reset.json()["revoked"]?.intValue == 1)
        #expect(try server.request("GET", "/api/me", token: a.token).errorCode == "SESSION_REVOKED")
        _ = try server.login("carol", password: "carol-new-pass")
        // Unknown phones get the same answer and no code.
        #expect(
            try server.request("POST", "/api/password/sms-reset/request", body: .json(.object([("phone", .string("+100"))]))).status == 202)
        #expect(try server.dev("GET", "/__dev/sms/%2B100").status == 404)
    }

    @Test func adminRoutesNeedTheAdminRole() throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice"), bob = try server.login("bob")
        let forbidden = try server.request("GET", "/api/admin/users/alice/sessions", token: bob.token)
        #expect(forbidden.status == 403 && forbidden.errorCode == "FORBIDDEN")
        #expect(try server.request("POST", "/api/admin/users/alice/sessions/revoke-all", token: bob.token).errorCode == "FORBIDDEN")
        let list = try server.request("GET", "/api/admin/users/bob/sessions", token: alice.token).json()
        #expect(list["user"]?["id"]?.stringValue == "bob")
        #expect(list["sessions"]?.arrayValue?.count == 2)
        let one = try server.request("DELETE", "/api/admin/users/bob/sessions/\(bob.sessionId)", token: alice.token).json()
        #expect(one["revoked"] == .bool(true))
        #expect(try server.request("GET", "/api/me", token: bob.token).errorCode == "SESSION_REVOKED")
        let all = try server.request("POST", "/api/admin/users/bob/sessions/revoke-all", token: alice.token).json()
        #expect(all["revoked"]?.intValue == 1)
        #expect(try server.request("GET", "/api/admin/users/nobody/sessions", token: alice.token).status == 404)
        #expect(try server.request("DELETE", "/api/admin/users/bob/sessions/ses_nope", token: alice.token).status == 404)
        let created = try server.dev("POST", "/__dev/users/bob/sessions", .object([("count", .int(25)), ("appId", .string("workbench"))]))
            .json()
        #expect(created["ids"]?.arrayValue?.count == 25)
        #expect(
            try server.request("POST", "/api/admin/users/bob/sessions/revoke-all", token: alice.token).json()["revoked"]?.intValue == 25)
    }
}
