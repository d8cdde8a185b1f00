/// A login transaction between `sl-login start` and `sl-login complete` (or a running loopback/device
/// login): while one exists and has not expired, restores answer NO_RESULT (S6).
///
/// The PKCE verifier and the device code are sealed in the store; the other fields are clear.
public struct PendingLogin: Sendable, Equatable {
    /// Which flow the login is; stored in the session store as its raw value.
    public enum Mode: String, Sendable, CaseIterable {
        /// `sl-login --with-token`: a token being verified.
        case token
        /// A device code (RFC 8628) waiting for approval on another device.
        case device
        /// A browser sign-in with a loopback redirect (RFC 8252) waiting for its callback.
        case loopback
        /// `sl-login start`: a callback to be pasted or scanned into `sl-login complete`.
        case paste

        /// The flows that finish with an authorization-code callback.
        public var takesCallback: Bool { self == .paste || self == .loopback }
    }

    public var mode: Mode
    /// The OAuth `state` the callback must carry.
    public var state: String
    /// The PKCE code verifier (secret).
    public var verifier: String
    public var redirectURI: String
    /// The RFC 8628 device code (secret), for mode "device".
    public var deviceCode: String?
    public var createdAt: Int64
    public var expiresAt: Int64

    /// The longest a pending login lasts (`--pending-ttl`'s upper bound): while one does, every `sl-restore`
    /// answers NO_RESULT.
    public static let maxTTL: Int64 = 86400

    /// `ttl` within 1 s … `maxTTL`, so `now + ttl` is always a time the store can hold.
    public static func clampedTTL(_ ttl: Int64) -> Int64 { min(max(ttl, 1), maxTTL) }

    public init(
        mode: Mode, state: String, verifier: String, redirectURI: String, deviceCode: String? = nil,
        createdAt: Int64, expiresAt: Int64
    ) {
        self.mode = mode
        self.state = state
        self.verifier = verifier
        self.redirectURI = redirectURI
        self.deviceCode = deviceCode
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

extension PendingLogin: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "PendingLogin(mode: \(mode.rawValue), redirectURI: \(redirectURI), createdAt: \(createdAt), expiresAt: \(expiresAt), "
            + "verifier: <redacted>, deviceCode: \(deviceCode == nil ? "nil" : "<redacted>"))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "mode": mode.rawValue, "redirectURI": redirectURI, "createdAt": createdAt,
                "expiresAt": expiresAt
            ], displayStyle: .struct)
    }
}
