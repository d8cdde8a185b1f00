import StarlineCore
import StarlineCrypto

/// Passwords and SMS codes: checking them under the guessing limits (`Limits`), changing and
/// resetting them.
extension PlatformRoutes {
    static func checkPassword(_ c: RouteContext, user: String, password: String) throws -> Bool {
        guard let row = try c.db.queryFirst("SELECT password_salt, password_hash FROM users WHERE id = ?", [.text(user)]),
            let salt = row.blob("password_salt"), let hash = row.blob("password_hash")
        else { return false }
        return Sodium.constantTimeEquals(DevServerStore.passwordHash(password, salt: salt), hash)
    }

    /// The answer to a password typed for `user`: sign-in forms and the password change share one
    /// throttle per user, so guessing gets `Limits.signInFailures` tries per `Limits.signInWindow`.
    enum PasswordAttempt {
        case accepted, wrong
        case throttled(retryAfter: Int64)
    }

    static func attemptPassword(_ c: RouteContext, _ state: inout DevServerState, user: String, password: String) throws -> PasswordAttempt
    {
        // Checked before the password: while throttled the right password gets the same 429, so the
        // answers reveal nothing.
        if let wait = state.signInFailures.retryAfter(user) { return .throttled(retryAfter: wait) }
        if try checkPassword(c, user: user, password: password) {
            state.signInFailures.clear(user)
            return .accepted
        }
        // Only existing users are keys: names typed into the form must not grow the table.
        if try c.db.queryFirst("SELECT id FROM users WHERE id = ?", [.text(user)]) != nil { state.signInFailures.record(user) }
        return .wrong
    }

    static func throttledPage(_ page: String, retryAfter: Int64, formRedirect: String? = nil) -> HTTPResponse {
        var r = HTTPResponse.html(429, page, formRedirect: formRedirect)
        r.headers.append(("Retry-After", String(retryAfter)))
        return r
    }

    static func throttledMessage(_ retryAfter: Int64) -> String {
        "Too many wrong passwords for this user. Try again in \(retryAfter) seconds."
    }

    static func setPassword(_ c: RouteContext, user: String, _ password: String) throws {
        guard password.count >= 8 else { throw APIError(400, "WEAK_PASSWORD", "the new password must have at least 8 characters") }
        let salt = Sodium.randomBytes(16)
        try c.db.run(
            "UPDATE users SET password_salt = ?, password_hash = ?, password_updated_at = ? WHERE id = ?",
            [.blob(salt), .blob(DevServerStore.passwordHash(password, salt: salt)), .integer(c.server.clock.now().seconds), .text(user)])
    }

    static func changePassword(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let body = try c.jsonBody()
        let old = try c.string(body, "oldPassword"), new = try c.string(body, "newPassword")
        switch try attemptPassword(c, &state, user: c.user, password: old) {
        case .accepted: break
        case .wrong: throw APIError(403, "WRONG_PASSWORD", "the old password is wrong")
        case .throttled(let wait):
            throw APIError(
                429, "TOO_MANY_ATTEMPTS", "too many wrong passwords for this user; try again in \(wait) seconds",
                headers: [("Retry-After", String(wait))])
        }
        try setPassword(c, user: c.user, new)
        return .json(200, .object([("revokedOthers", .int(try revokeAll(c, user: c.user, except: c.session?.id)))]))
    }

    static func smsRequest(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let phone = try c.string(try c.jsonBody(), "phone", maxLength: 32)
        // Each code allows `Limits.smsCodeAttempts` guesses, so the codes sent per phone are bounded too;
        // unknown phones are counted alike, so neither answer can be used to find accounts.
        if let wait = state.smsSends.retryAfter(phone) {
            throw APIError(
                429, "TOO_MANY_ATTEMPTS", "too many SMS codes sent to this number; try again in \(wait) seconds",
                headers: [("Retry-After", String(wait))])
        }
        state.smsSends.record(phone)
        if try c.db.queryFirst("SELECT id FROM users WHERE phone = ?", [.text(phone)]) != nil {
            state.smsWrongAttempts[phone] = nil
            let code = String(format6(Int(Sodium.randomBytes(4).reduce(0) { $0 << 8 | UInt32($1) } % 1_000_000)))
            try c.db.run(
                "INSERT OR REPLACE INTO sms_codes(phone, code, expires_at) VALUES(?,?,?)",
                [.text(phone), .text(code), .integer(c.server.clock.now().seconds + 300)])
        }
        return .json(202, .object([("sent", .bool(true)), ("expiresIn", .int(300))]))
    }

    static func format6(_ n: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, 6 - s.count)) + s
    }

    static let codeBurned = APIError(400, "CODE_BURNED", "too many wrong codes: this SMS code is void, request a new one")

    static func smsReset(_ c: RouteContext, _ state: inout DevServerState) throws -> HTTPResponse {
        let body = try c.jsonBody()
        let phone = try c.string(body, "phone", maxLength: 32), code = try c.string(body, "code", maxLength: 16)
        let password = try c.string(body, "newPassword")
        // A 6-digit code is a million guesses: after `Limits.smsCodeAttempts` wrong ones it is void, even
        // for the right code, until a new one is requested.
        if (state.smsWrongAttempts[phone] ?? 0) >= Limits.smsCodeAttempts { throw codeBurned }
        let invalid = APIError(400, "INVALID_CODE", "the SMS code is wrong or expired")
        guard let row = try c.db.queryFirst("SELECT code, expires_at FROM sms_codes WHERE phone = ?", [.text(phone)]),
            (row.int64("expires_at") ?? 0) > c.server.clock.now().seconds,
            let user = try c.db.queryFirst("SELECT id FROM users WHERE phone = ?", [.text(phone)])?.string("id")
        else { throw invalid }
        guard Sodium.constantTimeEquals(Array((row.string("code") ?? "").utf8), Array(code.utf8)) else {
            // Keys are phones that have a code, so the table is bounded by the accounts.
            let wrong = (state.smsWrongAttempts[phone] ?? 0) + 1
            state.smsWrongAttempts[phone] = wrong
            guard wrong < Limits.smsCodeAttempts else {
                try c.db.run("DELETE FROM sms_codes WHERE phone = ?", [.text(phone)])
                throw codeBurned
            }
            throw invalid
        }
        try setPassword(c, user: user, password)
        try c.db.run("DELETE FROM sms_codes WHERE phone = ?", [.text(phone)])
        state.smsWrongAttempts[phone] = nil
        return .json(200, .object([("reset", .bool(true)), ("revoked", .int(try revokeAll(c, user: user, except: nil)))]))
    }
}
