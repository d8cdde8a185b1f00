/// What a command runs with besides its options: the parsed command line (for values whose source
/// matters), the I/O streams, the output built on them, and the tool's file locations.
public struct CommandContext: Sendable {
    public let arguments: ParsedArguments
    public let output: Output
    public let io: IOStreams
    public let paths: StarlinePaths

    public init(arguments: ParsedArguments, output: Output, io: IOStreams, paths: StarlinePaths) {
        self.arguments = arguments
        self.output = output
        self.io = io
        self.paths = paths
    }

    public var environment: Environment { io.environment }

    /// The chat base URL from `--chat`, `STARLINE_CHAT_BASE_URL`, the profile or the default, validated (W4).
    public func chatBase() throws -> BaseURL { try arguments[StandardOptions.chatBase] }

    /// The platform API base URL, validated (W4).
    public func apiBase() throws -> BaseURL { try arguments[StandardOptions.apiBase] }

    /// Standard input to its end, refused past `maxBytes` as soon as it is seen: every read of it is bounded
    /// (`… < /dev/zero` must not grow a tool's memory without end), so the bound is not optional.
    public func readStandardInput(maxBytes: Int) throws -> [UInt8] { try io.stdin.readAll(maxBytes: maxBytes) }
}
