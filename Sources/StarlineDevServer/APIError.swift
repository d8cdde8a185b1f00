import StarlineCore

/// An error answer of the HTTP contract: `{"error":{"code":…,"message":…}}` with a status.
struct APIError: Error {
    var status: Int
    var code: String
    var message: String
    var headers: [(String, String)] = []

    init(_ status: Int, _ code: String, _ message: String, headers: [(String, String)] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    var response: HTTPResponse {
        var r = HTTPResponse.error(status, code, message)
        r.headers += headers
        return r
    }

    static func invalidRequest(_ message: String) -> APIError { APIError(400, "INVALID_REQUEST", message) }
    static func notFound(_ what: String) -> APIError { APIError(404, "NOT_FOUND", "\(what) not found") }
    static let forbidden = APIError(403, "FORBIDDEN", "this action needs the admin role")
}

/// RFC 6749 §5.2 token-endpoint errors.
struct OAuthError: Error {
    var error: String
    var description: String
    var status = 400
    init(_ error: String, _ description: String, status: Int = 400) {
        self.error = error
        self.description = description
        self.status = status
    }
}
