import StarlineCore

extension StarlightClient {
    /// A callback of the authorization-code flow: a redirect URL, or the JSON line `sl-qr decode --show-secrets` prints.
    public struct Callback: Sendable {
        public var code: String?
        public var state: String?
        public var error: String?

        public init(code: String?, state: String?, error: String?) {
            self.code = code
            self.state = state
            self.error = error
        }

        public static func parse(_ input: String) throws -> Callback {
            let text =
                input.split(separator: "\n").first { !$0.allSatisfy { $0 == " " || $0 == "\t" || $0 == "\r" } }.map(String.init) ?? ""
            if text.hasPrefix("{") {
                let record = try JSON.parse(text)
                if record["code"]?.stringValue == "redacted" {
                    throw StarlineError(.usage, "the callback code is redacted: decode the QR code with sl-qr decode --show-secrets")
                }
                if let url = record["text"]?.stringValue, !url.contains("code=redacted") { return try parse(url) }
                guard record["kind"]?.stringValue == "authCallback" else {
                    throw StarlineError(.usage, "the JSON record is not an authCallback (kind \(record["kind"]?.stringValue ?? "missing"))")
                }
                return Callback(code: record["code"]?.stringValue, state: record["state"]?.stringValue, error: record["error"]?.stringValue)
            }
            guard let url = WebURL(text.trimmingWhitespace()), url.hasAuthority else {
                throw StarlineError(
                    .usage, "not a callback URL: expected starline-APPID://auth/callback?code=…&state=… or http://127.0.0.1:PORT/callback?…"
                )
            }
            return Callback(code: url.queryValue("code"), state: url.queryValue("state"), error: url.queryValue("error"))
        }
    }
}
