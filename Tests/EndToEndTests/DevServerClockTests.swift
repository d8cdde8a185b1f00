import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// sl-devserver's clock (`/__dev/clock`): tests move the server's wall time instead of sleeping out lifetimes.
@Suite struct DevServerClockTests {
    @Test("the clock moves forward and back within ten years, needs the dev token, and a reset puts it back")
    func theClockMovesAndResets() throws {
        let server = try DevServerProcess()
        let before = try server.dev("GET", "/__dev/clock").json()
        #expect(before["offsetSeconds"]?.intValue == 0)
        try server.advanceClock(86_400)
        try server.advanceClock(-400)
        let moved = try server.dev("GET", "/__dev/clock").json()
        #expect(moved["offsetSeconds"]?.intValue == 86_000)
        let shown = try #require(moved["now"]?.stringValue.flatMap { Timestamp(rfc3339: $0) })
        #expect(abs(shown.seconds - Timestamp.now().seconds - 86_000) <= 5, "\(moved)")

        // Out of bounds, not an integer, or no member at all: 400 and the clock unchanged.
        for body: JSON in [
            .object([("advanceSeconds", .int(315_360_000))]), .object([("advanceSeconds", .string("1"))]), .object([])
        ] {
            let refused = try server.dev("POST", "/__dev/clock", body)
            #expect(refused.status == 400, "\(body): \(refused.text)")
        }
        #expect(try server.request("POST", "/__dev/clock", body: .json(.object([("advanceSeconds", .int(1))]))).status == 401)
        #expect(try server.dev("GET", "/__dev/clock").json()["offsetSeconds"]?.intValue == 86_000)

        #expect(try server.dev("POST", "/__dev/reset").status == 200)
        #expect(try server.dev("GET", "/__dev/clock").json()["offsetSeconds"]?.intValue == 0)
    }

    @Test("S4 a session outlives its lifetime on the server's clock: the API answers SESSION_EXPIRED")
    func s4SessionsExpireOnTheServersClock() throws {
        let server = try DevServerProcess(["--session-ttl", "60"])
        let login = try server.login("alice")
        #expect(try server.request("GET", "/api/me", token: login.token).status == 200)
        try server.advanceClock(61)
        let expired = try server.request("GET", "/api/me", token: login.token)
        #expect(expired.status == 401 && expired.errorCode == "SESSION_EXPIRED", "\(expired.text)")
    }
}
