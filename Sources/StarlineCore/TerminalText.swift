/// The one sanitiser for text that came from a server, a file or an image and reaches a terminal: stderr
/// notices, error messages, table cells, CSV/TSV and `sl-qr decode --raw` when stdout is a terminal.
///
/// Hidden characters are made visible as escapes: C0 controls and DEL (`\x1b`: ESC starts every escape
/// sequence — OSC 52 writes the clipboard, OSC 8 makes a link whose text and target differ, CSI clears the
/// screen), C1 controls U+0080–U+009F (CSI and OSC in one character on terminals that honour them), bidi
/// controls (U+202E turns `txt.exe` into what reads as `exe.txt`), and zero-width characters (U+200B makes
/// two ids look alike). JSON output escapes the same characters as `\uXXXX` (`JSON.writeString`): the value
/// stays the same for a parser, and a terminal shows the escape. Pipes that are not JSON keep the bytes.
public enum TerminalText {
    /// Whether `scalar` is hidden or acts on the terminal (see the type's comment). Line feed and tab are
    /// hidden too: a caller that keeps lines splits on them first.
    public static func isHidden(_ scalar: UInt32) -> Bool {
        switch scalar {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x061C, 0x200B...0x200F, 0x202A...0x202E, 0x2060...0x2064, 0x2066...0x2069, 0xFEFF: true
        case 0x2028, 0x2029: true
        default: false
        }
    }

    /// `text` with every hidden character replaced by its escape (`\x1b`, `\x9b`, `\u202e`); unchanged (and
    /// not copied) when it has none.
    public static func visible(_ text: String) -> String { escaped(text) { isHidden($0.value) } }

    /// `visible`, keeping line feeds (a multi-line notice or payload stays multi-line; a tab too).
    public static func visibleLines(_ text: String) -> String {
        escaped(text) { $0 != "\n" && $0 != "\t" && isHidden($0.value) }
    }

    private static func escaped(_ text: String, _ hides: (Unicode.Scalar) -> Bool) -> String {
        guard text.unicodeScalars.contains(where: hides) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            if hides(scalar) { out += escape(scalar.value) } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }

    /// `\xHH` below U+0100, `\uHHHH` above.
    static func escape(_ value: UInt32) -> String {
        let hex = String(value, radix: 16)
        return value < 0x100
            ? "\\x" + String(repeating: "0", count: 2 - hex.count) + hex
            : "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
