import FuzzSupport
import StarlineCore
import StarlineChat
@testable import StarlineHTTP
@testable import StarlinePlatform

// The readers of HTTP answers: the error mapping, Retry-After, the token grant and the other platform answer
// readers, and the chat answers (messages, sync events). Input: a status byte, one header line
// ("Name: value"), then the body.
let base = try! BaseURL(validating: "https://account.example.test")
let api = PlatformAPI(base: base, appId: "fuzz", transport: HTTPTransport(timeout: 1))
let chat = ChatAPI(
    base: try! BaseURL(validating: "https://chat.example.test"), token: "t", transport: HTTPTransport(timeout: 1), timeout: 1,
    clock: .system)
let statuses = [200, 201, 204, 301, 400, 401, 403, 404, 409, 410, 413, 429, 500, 503, 100, 599]

Fuzz.run { bytes in
    var input = FuzzInput(bytes)
    let selector = input.byte()
    let status = statuses[Int(selector & 0x0F)]
    let headerLine = String(fuzz: input.field())
    var headers: [String: String] = [:]
    if let colon = headerLine.firstIndex(of: ":") {
        headers[headerLine[..<colon].lowercased()] = String(headerLine[headerLine.index(after: colon)...])
    }
    let body = input.remaining
    let reply = HTTPReply(status: status, headers: headers, body: body)

    _ = PlatformHTTP.error(status: status, body: body, headers: headers, route: "GET /fuzz", now: 1_767_225_600)
    _ = RetryPolicy.retryAfterSeconds(headerLine, now: 1_767_225_600)
    _ = RetryPolicy(retries: 3).delay(after: .success(reply), attempt: Int(selector >> 4), now: 1_767_225_600)
    _ = HTTPDate.parseIMFFixdate(headerLine)
    _ = try? reply.json()

    if let json = try? api.expectSuccess(reply, "GET /fuzz", allowEmpty: selector & 0x10 != 0) {
        _ = try? PlatformAPI.tokenGrant(json, route: "POST /oauth/token")
        _ = try? PlatformAPI.userPage(AnswerReader(json: json, route: "GET /fuzz"))
        _ = ReplyLimits.pollInterval(json["interval"])
        _ = try? AnswerReader(json: json, route: "GET /fuzz").lifetime("expires_in", max: ReplyLimits.maxTokenLifetime)
        for value in json.objectValue?.map(\.1) ?? [] { _ = ReplyLimits.saturatingInteger(value) }
    }
    if let json = try? chat.success(reply, "GET /v1/sync") {
        for key in ["messages", "events"] {
            for item in json[key]?.arrayValue ?? [] {
                _ = try? ChatMessage(json: item, route: "GET /fuzz")
                _ = ChatEvents.message(of: item)
                _ = ChatEvents.conversation(of: item)
            }
        }
    }
}
