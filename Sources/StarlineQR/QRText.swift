#if canImport(Glibc)
import Glibc
#endif

/// The text of a QR payload, as the decoders people compare us with give it (ZXing's guess; ISO/IEC 18004
/// says byte mode is ISO-8859-1 unless an ECI says otherwise, and Japanese encoders write Shift_JIS
/// without one). libzbar hands over the bytes as stored (ZBAR_CFG_BINARY: a Kanji-mode segment comes back as
/// its Shift_JIS bytes, an ECI designator is dropped), and they are read here:
///
/// - valid UTF-8 (ASCII included) is UTF-8, as it always was;
/// - else the first charset that fits by ZXing's rules: Shift_JIS when there are 3 or more Japanese characters
///   in a row (or the bytes can only be Shift_JIS), ISO-8859-1 when they can only be that, and between the
///   two the crude tie-break ZXing uses (exactly two half-width katakana, or one byte in ten a Latin-1 symbol,
///   reads as Shift_JIS);
/// - no charset at all (bytes that are neither, such as 0x80–0x9F outside a Shift_JIS pair, or control
///   characters other than tab, LF and CR, which are data whatever the charset): binary, no text.
///
/// Shift_JIS is read as Windows-31J (CP932, through iconv): what Japanese phones and generators write, with
/// 0x5C and 0x7E as `\` and `~` (JIS X 0201 would turn them into ¥ and ‾ and break every URL with a tilde).
public struct QRText: Sendable, Equatable {
    public enum Charset: String, Sendable, CaseIterable {
        case utf8 = "UTF-8"
        case shiftJIS = "Shift_JIS"
        case iso8859_1 = "ISO-8859-1"
    }

    public var text: String
    public var charset: Charset

    public init(text: String, charset: Charset) {
        self.text = text
        self.charset = charset
    }

    /// The text of `bytes`, or nil when no charset fits (binary data).
    public static func decode(_ bytes: [UInt8]) -> QRText? {
        if let text = String(validating: bytes, as: UTF8.self) { return QRText(text: text, charset: .utf8) }
        // Control characters other than tab, LF and CR are data, not text, in a charset that was only guessed.
        guard !bytes.contains(where: { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D || $0 == 0x7F }) else { return nil }
        switch guess(bytes) {
        case .shiftJIS?: return shiftJIS(bytes).map { QRText(text: $0, charset: .shiftJIS) } ?? latin1IfItFits(bytes)
        case .iso8859_1?: return latin1IfItFits(bytes)
        case .utf8?, nil: return nil
        }
    }

    /// ZXing's choice between Shift_JIS and ISO-8859-1 for bytes that are not UTF-8 (nil: neither fits).
    static func guess(_ bytes: [UInt8]) -> Charset? {
        var latin1 = true, sjis = true
        var sjisPending = 0, katakana = 0, katakanaRun = 0, longestKatakanaRun = 0, doubleRun = 0, longestDoubleRun = 0
        var latin1Symbols = 0
        for byte in bytes where latin1 || sjis {
            if latin1 {
                // C1 controls are never ISO-8859-1 text; the symbols of 0xA0–0xBF, × and ÷ are rare in it.
                if (0x80...0x9F).contains(byte) {
                    latin1 = false
                } else if byte >= 0xA0 && (byte < 0xC0 || byte == 0xD7 || byte == 0xF7) {
                    latin1Symbols += 1
                }
            }
            if sjis {
                if sjisPending > 0 {
                    // The second byte of a pair: 0x40–0xFC without 0x7F.
                    if byte < 0x40 || byte == 0x7F || byte > 0xFC { sjis = false } else { sjisPending -= 1 }
                } else if byte == 0x80 || byte == 0xA0 || byte > 0xEF {
                    sjis = false
                } else if byte > 0xA0 && byte < 0xE0 {
                    // Half-width katakana, one byte each.
                    katakana += 1
                    doubleRun = 0
                    katakanaRun += 1
                    longestKatakanaRun = max(longestKatakanaRun, katakanaRun)
                } else if byte > 0x7F {
                    sjisPending += 1
                    katakanaRun = 0
                    doubleRun += 1
                    longestDoubleRun = max(longestDoubleRun, doubleRun)
                } else {
                    katakanaRun = 0
                    doubleRun = 0
                }
            }
        }
        if sjisPending > 0 { sjis = false }
        if sjis && (longestKatakanaRun >= 3 || longestDoubleRun >= 3) { return .shiftJIS }
        if latin1 && sjis {
            return (longestKatakanaRun == 2 && katakana == 2) || latin1Symbols * 10 >= bytes.count ? .shiftJIS : .iso8859_1
        }
        return latin1 ? .iso8859_1 : sjis ? .shiftJIS : nil
    }

    private static func latin1IfItFits(_ bytes: [UInt8]) -> QRText? {
        guard !bytes.contains(where: { (0x80...0x9F).contains($0) }) else { return nil }
        // ISO-8859-1 is the first 256 code points of Unicode.
        var scalars = String.UnicodeScalarView()
        for byte in bytes { scalars.append(Unicode.Scalar(byte)) }
        return QRText(text: String(scalars), charset: .iso8859_1)
    }

    /// Windows-31J through iconv(3); nil when a pair is not a character of it.
    static func shiftJIS(_ bytes: [UInt8]) -> String? {
        let converter = iconv_open("UTF-8", "CP932")
        guard converter != iconv_t(bitPattern: -1) else { return nil }
        defer { iconv_close(converter) }
        // UTF-8 takes at most 3 bytes per Shift_JIS byte (a half-width katakana: 1 → 3).
        var output = [UInt8](repeating: 0, count: bytes.count * 3 + 4)
        var input = bytes.map { CChar(bitPattern: $0) }
        let written: Int? = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBytes { outBuffer in
                var inPointer = inBuffer.baseAddress
                var inLeft = inBuffer.count
                var outPointer = outBuffer.baseAddress?.assumingMemoryBound(to: CChar.self)
                var outLeft = outBuffer.count
                // "The iconv() function returns the number of characters converted in a nonreversible way
                // during this call; reversible conversions are not counted. In case of error, it sets errno and
                // returns (size_t) -1" (iconv(3)): EILSEQ for a pair that is no character, EINVAL for a cut one.
                guard iconv(converter, &inPointer, &inLeft, &outPointer, &outLeft) != -1, inLeft == 0 else { return nil }
                return outBuffer.count - outLeft
            }
        }
        guard let written else { return nil }
        return String(validating: output[..<written], as: UTF8.self)
    }
}
