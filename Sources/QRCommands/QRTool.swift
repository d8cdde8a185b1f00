import StarlineCore
import StarlineQR

/// `sl-qr`: make friend-link QR codes and decode images into classified JSON.
public enum QRTool {
    public static let tool = Tool<CommandRunner>(
        name: "sl-qr",
        commands: .group(
            CommandSpec(
                "sl-qr", abstract: "make friend-link QR codes and decode QR images into classified JSON",
                discussion: """
                    sl-qr encodes text, bytes or Starline friend links as QR codes (libqrencode) and decodes PNG, JPEG, \
                    PBM/PGM/PPM, BMP, GIF, WebP and TIFF images (libzbar, then ZXing-C++ when it is installed: `sl-qr --version` lists the decoders) into \
                    one JSON record per symbol. Decoded payloads are classified in the order of the Starline client: a login \
                    callback first, then a friend link (of the configured chat service, or of the default \
                    https://chat.thestarline.cn), then a web URL, then text.\n\nNon-ASCII UTF-8 text is encoded in byte mode with \
                    a UTF-8 ECI header; plain ASCII needs none; binary input (including NUL bytes) is encoded byte for byte. \
                    Images are never written to a terminal.
                    """,
                examples: [
                    Example(
                        "sl-qr friend AbCdEfGh1234 -o friend.png && sl-qr decode friend.png",
                        "Make a friend-link QR code and decode it back.")
                ]),
            [.command(EncodeCommand.self), .command(FriendCommand.self), .command(DecodeCommand.self)]),
        globalOptions: StandardOptions.output + [StandardOptions.chat, StandardOptions.showSecrets.spec],
        environment: StandardOptions.environment,
        files: [StandardOptions.configFile],
        seeAlso: ["qrencode(1)", "zbarimg(1)", "sl-chat(1)", "sl-login(1)"],
        // Which decoders and image formats this install has: libzbar always (decode fails without it), ZXing-C++
        // when its shim and libzxing2 are installed, WebP when libwebp is. Loads them, so only --version pays for it.
        versionDetails: { [ZXingLibrary.status, ImageLoader.formatsStatus] })

    public static func main() -> Never {
        let arguments = CommandLine.arguments
        if arguments.count == 2, arguments[1] == IsolatedScan.helperArgument { IsolatedScan.serveHelper() }
        IsolatedScan.available = true
        ToolMain.main(tool)
    }
}
