import StarlineCore
import StarlineQR

/// `sl-qr encode TEXT|-`: text or bytes as a QR code.
enum EncodeCommand: Command {
    static let spec = CommandSpec(
        "encode", abstract: "Encode text or bytes as a QR code",
        discussion: "TEXT is encoded as given; - reads the payload from standard input byte for byte (a trailing newline is part of it: use printf, not echo).",
        options: EncodeOptions.specs,
        arguments: [ArgumentSpec("TEXT|-", help: "The payload; - reads it from standard input.")],
        examples: [
            Example("sl-qr encode 'hello world' -o hello.png", "Write a PNG and print a JSON record describing it."),
            Example("sl-qr encode -f utf8 'https://example.com'", "Show a QR code in the terminal."),
            Example("head -c 100 /dev/urandom | sl-qr encode - -l H -o bytes.png --verify", "Encode binary data with high error correction and check it reads back."),
        ],
        exitStatuses: [(.ok, "encoded (and, with --verify, read back)"), (.usage, "bad options, or a PNG to a terminal"),
                       (.storage, "the output file cannot be written"),
                       (.data, "more data than --max-version holds, or --verify read back something else")])

    struct Options {
        var text: String
        var encoding: EncodeOptions
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(text: arguments.positionals[0], encoding: try EncodeOptions(arguments))
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let payload = options.text == "-" ? try context.readStandardInput() : Array(options.text.utf8)
        return try QRImageWriter.write(payload: payload, options.encoding, extraFields: [], context)
    }
}

/// `sl-qr friend CODE|URL`: a validated friend link as a QR code.
enum FriendCommand: Command {
    static let spec = CommandSpec(
        "friend", abstract: "Build a validated friend link and encode it",
        discussion: "CODE is a friend-link code (8 to 64 characters from A-Z a-z 0-9 _ -) or a friend-link URL of the configured chat service ({chat base}/f/{code}, the chat base being --chat, STARLINE_CHAT_BASE_URL, the profile, or https://chat.thestarline.cn) or of the default one; a bare code is put on the configured chat base, a URL stays on its own.",
        options: EncodeOptions.specs,
        arguments: [ArgumentSpec("CODE|URL", help: "A friend-link code or friend-link URL.")],
        examples: [
            Example("sl-qr friend AbCdEfGh1234 -o friend.png", "Make a friend-link QR code for https://chat.thestarline.cn/f/AbCdEfGh1234."),
            Example("sl-qr friend --chat http://127.0.0.1:8080/chat AbCdEfGh1234 -f ansi", "Show a friend link of a local sl-devserver in the terminal."),
        ],
        exitStatuses: [(.ok, "encoded"), (.usage, "not a valid friend-link code or URL (INVALID_FRIEND_LINK)"),
                       (.storage, "the output file cannot be written"), (.data, "--verify read back something else")])

    struct Options {
        var link: String
        var chatBase: BaseURL
        var encoding: EncodeOptions
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(link: arguments.positionals[0], chatBase: try arguments[StandardOptions.chatBase], encoding: try EncodeOptions(arguments))
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let link = try FriendLink.make(options.link, chatBase: options.chatBase)
        return try QRImageWriter.write(payload: Array(link.url.utf8), options.encoding,
                                       extraFields: [("code", .string(link.code)), ("url", .string(link.url))], context)
    }
}
