import Foundation
import StarlineCore
@testable import StarlinePlatform
import StarlineTestSupport
import Testing
@testable import StarlineHTTP

/// `PlatformAPI.adminUsers` against a real sl-devserver.
@Suite struct AdminUsersClientTests {
    func api(_ server: DevServerProcess) throws -> PlatformAPI {
        PlatformAPI(base: try BaseURL(validating: server.baseURL), appId: "workbench", transport: HTTPTransport(timeout: 10), retries: 0)
    }

    func failure<T>(_ body: () async throws -> T) async -> StarlineError? {
        do {
            let value = try await body()
            Issue.record("expected an error, got \(value)")
            return nil
        } catch {
            return error as? StarlineError
        }
    }

    @Test("adminUsers pages to the end with nextCursor, each user once")
    func pagesThroughEveryUser() async throws {
        let server = try DevServerProcess()
        #expect(try server.dev("POST", "/__dev/users", .object([("count", .int(25)), ("prefix", .string("c"))])).status == 201)
        let alice = try server.login("alice")
        let api = try api(server)
        var ids: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let page = try await api.adminUsers(token: alice.token, limit: 10, cursor: cursor)
            ids += page.users.compactMap { $0["id"]?.stringValue }
            cursor = page.nextCursor
            pages += 1
        } while cursor != nil && pages < 100
        #expect(pages == 3)
        #expect(ids == (["alice", "bob", "carol"] + (1...25).map { String(format: "c%04d", $0) }).sorted())
        let all = try await api.adminUsers(token: alice.token, limit: nil, cursor: nil)
        #expect(all.users.count == 28 && all.nextCursor == nil)
    }

    @Test("adminUsers maps 400 and 403 with the route")
    func refusals() async throws {
        let server = try DevServerProcess()
        let alice = try server.login("alice")
        let api = try api(server)
        let badLimit = await failure { try await api.adminUsers(token: alice.token, limit: 1001, cursor: nil) }
        #expect(badLimit?.code == .requestRejected && badLimit?.details?["serverCode"]?.stringValue == "INVALID_REQUEST")
        #expect(badLimit?.details?["route"]?.stringValue == "GET /api/admin/users")
        let badCursor = await failure { try await api.adminUsers(token: alice.token, limit: nil, cursor: "not a cursor") }
        #expect(badCursor?.code == .requestRejected)
        let bob = try server.login("bob")
        let forbidden = await failure { try await api.adminUsers(token: bob.token, limit: nil, cursor: nil) }
        #expect(forbidden?.code == .forbidden && forbidden?.details?["serverCode"]?.stringValue == "FORBIDDEN")
    }
}
