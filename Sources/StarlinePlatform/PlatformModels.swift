import StarlineCore
import StarlineCrypto

/// A successful `POST /oauth/token`. The description never shows the access token.
public struct TokenGrant: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var accessToken: String
    public var sessionId: String
    /// Lifetime of the access token in seconds, from the moment of the answer.
    public var expiresIn: Int64
    public var user: JSON
    public var roles: [String]

    public init(accessToken: String, sessionId: String, expiresIn: Int64, user: JSON, roles: [String]) {
        self.accessToken = accessToken
        self.sessionId = sessionId
        self.expiresIn = expiresIn
        self.user = user
        self.roles = roles
    }

    public var description: String {
        "TokenGrant(sessionId: \(sessionId), user: \(user["id"]?.stringValue ?? "?"), roles: \(roles), expiresIn: \(expiresIn), accessToken: <redacted>)"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["sessionId": sessionId, "expiresIn": expiresIn, "user": user, "roles": roles, "accessToken": "<redacted>"])
    }
}

/// A `POST /oauth/device_authorization` answer (RFC 8628 §3.2). The device code is a secret: it is
/// left out of the description.
public struct DeviceAuthorization: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var deviceCode: String
    public var userCode: String
    public var verificationURI: String
    public var verificationURIComplete: String?
    public var expiresIn: Int64
    /// Seconds to wait between polls (RFC 8628 default 5 when the server gives none).
    public var interval: Int64

    public init(
        deviceCode: String, userCode: String, verificationURI: String, verificationURIComplete: String?, expiresIn: Int64, interval: Int64
    ) {
        self.deviceCode = deviceCode
        self.userCode = userCode
        self.verificationURI = verificationURI
        self.verificationURIComplete = verificationURIComplete
        self.expiresIn = expiresIn
        self.interval = interval
    }

    public var description: String {
        "DeviceAuthorization(userCode: \(userCode), verificationURI: \(verificationURI), expiresIn: \(expiresIn), interval: \(interval), deviceCode: <redacted>)"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "userCode": userCode, "verificationURI": verificationURI, "expiresIn": expiresIn, "interval": interval,
                "deviceCode": "<redacted>"
            ])
    }
}

/// One poll of the device-code grant (RFC 8628 §3.5).
public enum DevicePoll: Sendable, Equatable {
    /// `authorization_pending`: ask again after the interval.
    case pending
    /// `slow_down`: ask again after the interval plus 5 seconds (and keep the longer interval).
    case slowDown
    case granted(TokenGrant)
}

/// `GET /api/me`.
public struct Me: Sendable, Equatable {
    public var user: JSON
    public var roles: [String]
    public var sessionId: String
    public var appId: String
    /// Unix seconds.
    public var expiresAt: Int64

    public init(user: JSON, roles: [String], sessionId: String, appId: String, expiresAt: Int64) {
        self.user = user
        self.roles = roles
        self.sessionId = sessionId
        self.appId = appId
        self.expiresAt = expiresAt
    }
}

/// PKCE (RFC 7636) with S256.
public enum PKCE {
    /// A verifier (base64url of 32 random bytes: 43 characters) and its challenge.
    public static func make() -> (verifier: String, challenge: String) {
        let verifier = Base64.encodeURL(Sodium.randomBytes(32))
        return (verifier, challenge(for: verifier))
    }

    /// base64url(SHA-256(verifier)), without padding.
    public static func challenge(for verifier: String) -> String {
        Base64.encodeURL(SHA256.hash(Array(verifier.utf8)))
    }
}
