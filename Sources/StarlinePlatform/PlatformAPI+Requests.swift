import StarlineCore
import StarlineHTTP

/// How every route is sent and its answer read: one request shape, one success check, one form encoding.
extension PlatformAPI {
    func url(_ path: String) -> String { base.origin + base.path + path }

    /// A JSON API call: the answer's JSON object on 2xx, the mapped error otherwise. GET and DELETE are
    /// repeated on transient failures (`retries`); POST never is.
    func call(_ route: String, _ path: String, method: String = "GET", token: String? = nil, json: JSON? = nil) async throws -> JSON {
        var headers = [("Accept", "application/json")]
        if let token { headers.append(("Authorization", "Bearer " + token)) }
        var body: [UInt8]?
        if let json {
            headers.append(("Content-Type", "application/json"))
            body = Array(json.serialized().utf8)
        }
        let idempotent = method == "GET" || method == "DELETE"
        let reply = try await send(
            route, HTTPRequestSpec(method: method, url: url(path), headers: headers, body: body), idempotent: idempotent)
        return try expectSuccess(reply, route)
    }

    /// A form POST to an OAuth endpoint; the reply whatever its status.
    func send(_ route: String, _ path: String, form: [(String, String)], idempotent: Bool = false) async throws -> HTTPReply {
        let request = HTTPRequestSpec(
            method: "POST", url: url(path),
            headers: [("Accept", "application/json"), ("Content-Type", "application/x-www-form-urlencoded")],
            body: Array(PlatformAPI.formEncode(form).utf8))
        return try await send(route, request, idempotent: idempotent)
    }

    /// Sends with retries when idempotent, adding `route` to transport errors.
    func send(_ route: String, _ request: HTTPRequestSpec, idempotent: Bool) async throws -> HTTPReply {
        var request = request
        if let requestTimeout { request.timeout = requestTimeout }
        do {
            return try await transport.send(request, retry: RetryPolicy(retries: idempotent ? retries : 0), clock: clock)
        } catch var error as StarlineError {
            error.details = PlatformHTTP.adding([("route", .string(route))], to: error.details)
            throw error
        }
    }

    /// The JSON body of a 2xx answer, or the mapped error.
    func expectSuccess(_ reply: HTTPReply, _ route: String, allowEmpty: Bool = false) throws -> JSON {
        guard (200...299).contains(reply.status) else {
            throw PlatformHTTP.error(status: reply.status, body: reply.body, headers: reply.headers, route: route, now: clock.now())
        }
        if allowEmpty, reply.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .object([]) }
        let json: JSON
        do {
            json = try JSON.parse(reply.body)
        } catch let error as StarlineError {
            throw StarlineError(
                .data, "unexpected answer from \(route) (HTTP \(reply.status)): not JSON (\(error.message))",
                details: .object([("status", .int(reply.status)), ("route", .string(route))]))
        }
        guard case .object = json else {
            throw StarlineError(
                .data, "unexpected answer from \(route) (HTTP \(reply.status)): not a JSON object",
                details: .object([("status", .int(reply.status)), ("route", .string(route))]))
        }
        return json
    }

    static func tokenGrant(_ json: JSON, route: String) throws -> TokenGrant {
        let d = AnswerReader(json: json, route: route)
        if let type = json["token_type"]?.stringValue, type.lowercased() != "bearer" {
            throw d.malformed("token_type '\(type)' is not Bearer")
        }
        return TokenGrant(
            accessToken: try d.string("access_token"), sessionId: try d.string("session_id"),
            expiresIn: try d.lifetime("expires_in", max: ReplyLimits.maxTokenLifetime),
            user: json["user"] ?? .null, roles: json["roles"] == nil ? [] : try d.strings("roles"))
    }

    /// `application/x-www-form-urlencoded` (RFC 3986 unreserved characters kept, everything else %XX).
    static func formEncode(_ fields: [(String, String)]) -> String {
        fields.map { PercentEncoding.encode($0.0) + "=" + PercentEncoding.encode($0.1) }.joined(separator: "&")
    }

}
