/// One HTTP request.
public struct HTTPRequestSpec: Sendable {
    public var method: String
    public var url: String
    /// Sent in order; values must not contain line breaks.
    public var headers: [(String, String)]
    /// The request body, sent as is (nil: none; POST without a body sends an empty one).
    public var body: [UInt8]?
    /// Overrides the transport's timeout for this request (e.g. a long poll), in seconds.
    public var timeout: Double?

    public init(method: String = "GET", url: String, headers: [(String, String)] = [], body: [UInt8]? = nil, timeout: Double? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}
