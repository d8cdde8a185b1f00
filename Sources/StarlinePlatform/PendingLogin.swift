/// A login transaction between `sl-login start` and `sl-login complete` (or a running loopback/device
/// login): while one exists and has not expired, restores answer NO_RESULT (S6).
///
/// The PKCE verifier and the device code are sealed in the store; the other fields are clear.
public struct PendingLogin: Sendable, Equatable {
    /// "paste" | "loopback" | "device".
    public var mode: String
    /// The OAuth `state` the callback must carry.
    public var state: String
    /// The PKCE code verifier (secret).
    public var verifier: String
    public var redirectURI: String
    /// The RFC 8628 device code (secret), for mode "device".
    public var deviceCode: String?
    public var createdAt: Int64
    public var expiresAt: Int64

    public init(mode: String, state: String, verifier: String, redirectURI: String, deviceCode: String? = nil,
                createdAt: Int64, expiresAt: Int64) {
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
        "PendingLogin(mode: \(mode), redirectURI: \(redirectURI), createdAt: \(createdAt), expiresAt: \(expiresAt), "
            + "verifier: <redacted>, deviceCode: \(deviceCode == nil ? "nil" : "<redacted>"))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["mode": mode, "redirectURI": redirectURI, "createdAt": createdAt,
                                "expiresAt": expiresAt], displayStyle: .struct)
    }
}
