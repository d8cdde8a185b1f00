import StarlineCore
import StarlineSQLite
import StarlineCrypto

/// The device authorization grant (RFC 8628): a device code and a short user code, the page where a person
/// approves it, and the approval itself; the token endpoint (OAuthRoutes.swift) answers the device's polls.
extension PlatformRoutes {
    static func deviceAuthorization(_ c: RouteContext) throws -> HTTPResponse {
        let form = c.form()
        guard let app = form["client_id"], try appExists(c, app) else {
            throw OAuthError("invalid_client", "unknown client_id", status: 401)
        }
        let deviceCode = Base64.encodeURL(Sodium.randomBytes(32))
        // RFC 8628 §6.1: a short code from an alphabet without look-alike characters.
        let alphabet = Array("BCDFGHJKLMNPQRSTVWXZ")
        let letters = Sodium.randomBytes(8).map { alphabet[Int($0) % alphabet.count] }
        let userCode = String(letters[0..<4]) + "-" + String(letters[4..<8])
        let auto = c.server.configuration.autoApprove
        let interval = c.server.configuration.deviceInterval
        try c.store.prunePending("device_codes")
        try c.db.run(
            """
            INSERT INTO device_codes(device_code, user_code, app_id, status, user_id, expires_at, interval, slow_downs) \
            VALUES(?,?,?,?,?,?,?,?)
            """,
            [
                .text(deviceCode), .text(userCode), .text(app), .text(auto == nil ? "pending" : "approved"),
                auto.map(SQLiteValue.text) ?? .null, .integer(c.server.clock.now().seconds + c.server.configuration.deviceCodeTTL),
                .integer(Int64(interval)),
                .integer(Int64(c.server.configuration.deviceSlowDowns))
            ])
        let verification = c.server.baseURL + "/oauth/device"
        return .json(
            200,
            .object([
                ("device_code", .string(deviceCode)), ("user_code", .string(userCode)),
                ("verification_uri", .string(verification)),
                ("verification_uri_complete", .string(verification + "?user_code=" + userCode)),
                ("expires_in", .int(Int(c.server.configuration.deviceCodeTTL))), ("interval", .int(interval))
            ]))
    }

    static func devicePage(_ c: RouteContext) throws -> HTTPResponse {
        .html(200, Pages.device(userCode: c.request.queryValue("user_code") ?? "", message: nil))
    }

    static func deviceSubmit(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let form = c.form()
        let userCode = (form["user_code"] ?? "").uppercased()
        guard let row = try c.db.queryFirst("SELECT * FROM device_codes WHERE user_code = ?", [.text(userCode)]),
            row.string("status") == "pending", (row.int64("expires_at") ?? 0) > c.server.clock.now().seconds
        else {
            return .html(400, Pages.device(userCode: userCode, message: "This code is unknown, expired or already used."))
        }
        if form["action"] == "deny" {
            try c.db.run("UPDATE device_codes SET status = 'denied' WHERE user_code = ?", [.text(userCode)])
            return .html(200, Pages.done("Request denied", "The device was not signed in. You can close this page."))
        }
        let user = form["username"] ?? ""
        guard form["action"] == "approve" else {
            return .html(401, Pages.device(userCode: userCode, message: "Wrong user name or password."))
        }
        switch try attemptPassword(c, &state, user: user, password: form["password"] ?? "") {
        case .accepted: break
        case .wrong: return .html(401, Pages.device(userCode: userCode, message: "Wrong user name or password."))
        case .throttled(let wait): return throttledPage(Pages.device(userCode: userCode, message: throttledMessage(wait)), retryAfter: wait)
        }
        try c.db.run("UPDATE device_codes SET status = 'approved', user_id = ? WHERE user_code = ?", [.text(user), .text(userCode)])
        return .html(200, Pages.done("Device signed in", "You can close this page and return to your device."))
    }

}
