#if canImport(Glibc)
import Glibc
#endif

/// The text of a QR payload, as the decoders people compare us with give it.
///
/// With ECI designators (ISO/IEC 18004 §7.4.3; `QRSymbol.designators`), each part of the payload is read in the
/// charset its designator names (`Charset.init(eci:)`: every charset of the AIM ECI table ZXing-C++ reads), and
/// text is null only when the bytes are not text in that charset (or ECI 899 declares them binary).
///
/// Without one (ISO/IEC 18004 says byte mode is then ISO-8859-1, and Japanese encoders write Shift_JIS without
/// one), ZXing's guess. libzbar hands over the bytes as stored (ZBAR_CFG_BINARY: a Kanji-mode segment comes
/// back as its Shift_JIS bytes), and they are read here:
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
    /// A charset a QR payload can be in, named as IANA registers it (what the record's `charset` says).
    public enum Charset: String, Sendable, CaseIterable {
        case utf8 = "UTF-8"
        case shiftJIS = "Shift_JIS"
        case iso8859_1 = "ISO-8859-1", iso8859_2 = "ISO-8859-2", iso8859_3 = "ISO-8859-3", iso8859_4 = "ISO-8859-4"
        case iso8859_5 = "ISO-8859-5", iso8859_6 = "ISO-8859-6", iso8859_7 = "ISO-8859-7", iso8859_8 = "ISO-8859-8"
        case iso8859_9 = "ISO-8859-9", iso8859_10 = "ISO-8859-10", iso8859_11 = "ISO-8859-11", iso8859_13 = "ISO-8859-13"
        case iso8859_14 = "ISO-8859-14", iso8859_15 = "ISO-8859-15", iso8859_16 = "ISO-8859-16"
        case ibm437 = "IBM437"
        case windows1250 = "windows-1250", windows1251 = "windows-1251", windows1252 = "windows-1252", windows1256 = "windows-1256"
        case utf16BE = "UTF-16BE", utf16LE = "UTF-16LE", utf32BE = "UTF-32BE", utf32LE = "UTF-32LE"
        case usASCII = "US-ASCII"
        case big5 = "Big5"
        case gb18030 = "GB18030"
        case eucKR = "EUC-KR"

        /// The charset of ECI assignment number `eci` (the AIM ECI table, as ZXing-C++ reads it: 0 and 2 are
        /// code page 437, 1 and 3 ISO-8859-1, 4–18 the rest of ISO-8859 (no 14: there is no ISO-8859-12),
        /// 20 Shift_JIS, 21–24 Windows code pages, 25 UTF-16BE, 26 UTF-8, 27 and 170 ASCII, 28 Big5,
        /// 29 and 32 GB18030 (GB 2312's superset), 30 EUC-KR, 33–35 UTF-16LE and UTF-32); nil for any other.
        public init?(eci: Int) {
            let iso8859: [Charset] = [
                .iso8859_1, .iso8859_2, .iso8859_3, .iso8859_4, .iso8859_5, .iso8859_6, .iso8859_7, .iso8859_8, .iso8859_9,
                .iso8859_10, .iso8859_11
            ]
            switch eci {
            case 0, 2: self = .ibm437
            case 1: self = .iso8859_1
            case 3...13: self = iso8859[eci - 3]
            case 15: self = .iso8859_13
            case 16: self = .iso8859_14
            case 17: self = .iso8859_15
            case 18: self = .iso8859_16
            case 20: self = .shiftJIS
            case 21: self = .windows1250
            case 22: self = .windows1251
            case 23: self = .windows1252
            case 24: self = .windows1256
            case 25: self = .utf16BE
            case 26: self = .utf8
            case 27, 170: self = .usASCII
            case 28: self = .big5
            case 29, 32: self = .gb18030
            case 30: self = .eucKR
            case 33: self = .utf16LE
            case 34: self = .utf32BE
            case 35: self = .utf32LE
            default: return nil
            }
        }

        /// What glibc's iconv calls it (Shift_JIS as Windows-31J, see above).
        var iconvName: String {
            switch self {
            case .shiftJIS: "CP932"
            case .ibm437: "CP437"
            case .windows1250: "CP1250"
            case .windows1251: "CP1251"
            case .windows1252: "CP1252"
            case .windows1256: "CP1256"
            case .usASCII: "ASCII"
            case .big5: "BIG5"
            default: rawValue
            }
        }
    }

    /// ECI 899: "8-bit binary data", no charset at all.
    public static let binaryECI = 899

    public var text: String
    /// The charsets the text was read in, in the order they first apply: one for all but payloads whose ECI
    /// designators switch between charsets.
    public var charsets: [Charset]

    /// The one charset, nil when the payload switches between several.
    public var charset: Charset? { charsets.count == 1 ? charsets[0] : nil }
    /// What a record's `charset` says: the charset, or the charsets in order joined by `+` (`ISO-8859-7+Shift_JIS`).
    public var charsetName: String { charsets.map(\.rawValue).joined(separator: "+") }

    public init(text: String, charset: Charset) {
        self.text = text
        self.charsets = [charset]
    }

    public init(text: String, charsets: [Charset]) {
        self.text = text
        self.charsets = charsets
    }

    /// The text of `bytes` read as `designators` say (nil when one part is not text in its charset); without
    /// designators, `decode(_:)`'s guess. The bytes before the first designator, and those after one naming no
    /// charset this knows, are guessed on their own.
    public static func decode(_ bytes: [UInt8], designators: [QRSymbol.ECIDesignator]) -> QRText? {
        guard !designators.isEmpty else { return decode(bytes) }
        var parts: [(eci: Int?, range: Range<Int>)] = []
        var start = 0, eci: Int? = nil
        for designator in designators {
            // The parser gives them in order and in range; anything else is not trusted, and the bytes are guessed.
            guard designator.offset >= start, designator.offset <= bytes.count else { return decode(bytes) }
            parts.append((eci, start..<designator.offset))
            (start, eci) = (designator.offset, designator.assignment)
        }
        parts.append((eci, start..<bytes.count))
        var text = "", charsets: [Charset] = []
        for part in parts where !part.range.isEmpty {
            if part.eci == binaryECI { return nil }
            let slice = Array(bytes[part.range])
            let read: QRText?
            if let eci = part.eci, let charset = Charset(eci: eci) {
                read = convert(slice, from: charset).map { QRText(text: $0, charset: charset) }
            } else {
                read = decode(slice)
            }
            guard let read else { return nil }
            text += read.text
            for charset in read.charsets where !charsets.contains(charset) { charsets.append(charset) }
        }
        if charsets.isEmpty {
            // No byte at all: the charset the last designator names, as the symbol states it.
            guard let last = designators.last?.assignment, last != binaryECI else { return nil }
            charsets = [Charset(eci: last) ?? .utf8]
        }
        return QRText(text: text, charsets: charsets)
    }

    /// The text of `bytes`, or nil when no charset fits (binary data).
    public static func decode(_ bytes: [UInt8]) -> QRText? {
        if let text = String(validating: bytes, as: UTF8.self) { return QRText(text: text, charset: .utf8) }
        // Control characters other than tab, LF and CR are data, not text, in a charset that was only guessed.
        guard !bytes.contains(where: { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D || $0 == 0x7F }) else { return nil }
        switch guess(bytes) {
        case .shiftJIS?: return convert(bytes, from: .shiftJIS).map { QRText(text: $0, charset: .shiftJIS) } ?? latin1IfItFits(bytes)
        case .iso8859_1?: return latin1IfItFits(bytes)
        default: return nil
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

    /// `bytes` read as `charset` through iconv(3); nil when they are not text in it.
    static func convert(_ bytes: [UInt8], from charset: Charset) -> String? {
        if charset == .utf8 { return String(validating: bytes, as: UTF8.self) }
        let converter = iconv_open("UTF-8", charset.iconvName)
        guard converter != iconv_t(bitPattern: -1) else { return nil }
        defer { iconv_close(converter) }
        // UTF-8 takes at most 3 bytes for a 1-byte character (a half-width katakana, €) and 4 for a 2-byte one.
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
