import StarlineCore
@testable import StarlineQR
import StarlineTestSupport
import Testing

/// A QR payload's text in the charset that fits (QRText, W6): UTF-8 first, then Shift_JIS or ISO-8859-1 as
/// ZXing guesses, null only when none fits. The byte strings are what segno writes (Kanji mode and byte mode
/// without an ECI) and libzbar hands back.
@Suite struct QRTextTests {
    func bytes(_ base64: String) -> [UInt8] { Base64.decode(base64) ?? [] }

    @Test("W6: UTF-8 (and ASCII) is UTF-8, as it always was")
    func w6UTF8StaysUTF8() {
        #expect(QRText.decode(Array("https://chat.thestarline.cn/f/AbCdEfGh1234".utf8))?.charset == .utf8)
        #expect(QRText.decode(Array("Grüße 日本".utf8)) == QRText(text: "Grüße 日本", charset: .utf8))
        #expect(QRText.decode([]) == QRText(text: "", charset: .utf8))
    }

    @Test("W6: Shift_JIS without an ECI (Kanji mode, half-width katakana, a URL with a tilde) reads as Japanese")
    func w6ShiftJISIsRead() {
        // 日本語のテキスト in Kanji mode, as libzbar returns it: Shift_JIS pairs.
        #expect(QRText.decode(bytes("k/qWe4zqgsyDZYNMg1iDZw==")) == QRText(text: "日本語のテキスト", charset: .shiftJIS))
        // Half-width katakana and a full-width word.
        #expect(QRText.decode(bytes("tsC2xSCDZYNYg2c=")) == QRText(text: "ｶﾀｶﾅ テスト", charset: .shiftJIS))
        // Windows-31J keeps 0x7E a tilde (JIS X 0201 would make it ‾ and break the URL).
        #expect(
            QRText.decode(bytes("aHR0cHM6Ly9leGFtcGxlLmpwL351c2VyL5P6lns="))
                == QRText(text: "https://example.jp/~user/日本", charset: .shiftJIS))
        // Two half-width katakana alone decide for Shift_JIS (ZXing's tie-break).
        #expect(QRText.decode([0x41, 0xB1, 0xB2, 0x42])?.charset == .shiftJIS)
    }

    @Test("W6: ISO-8859-1 without an ECI reads as Latin-1; bytes no charset fits are binary")
    func w6Latin1AndBinary() {
        #expect(QRText.decode(bytes("Y2Fm6SBjcuhtZQ==")) == QRText(text: "café crème", charset: .iso8859_1))
        // Ü could start half-width katakana in Shift_JIS; one is not enough to say so.
        #expect(QRText.decode([0xDC, 0x62, 0x65, 0x72]) == QRText(text: "Über", charset: .iso8859_1))
        #expect(QRText.decode(Array("Ünïcödé".unicodeScalars.map { UInt8($0.value) }))?.charset == .iso8859_1)
        // C1 controls are no Latin-1 text, and 0x80 no Shift_JIS.
        #expect(QRText.decode([0x00, 0x80, 0xFF, 0x9F]) == nil)
        // Control characters are data in a guessed charset (UTF-8 keeps them, as it always did).
        #expect(QRText.decode([0xE9, 0x00, 0x41]) == nil)
        #expect(QRText.decode([0xE9, 0x09, 0x0A, 0x0D])?.charset == .iso8859_1)
        // A Shift_JIS pair cut short is not Shift_JIS either.
        #expect(QRText.decode([0x93, 0xFA, 0x96]) == nil)
    }

    @Test("W6: any bytes: a text that fits gives back the bytes it was read from, and binary stays binary")
    func w6AnyBytesRoundTrip() {
        var random = SeededRandom(seed: 0x51_7E57)
        for round in 0..<2000 {
            let count = Int(random.next() % 48)
            // Half the rounds from the high half only, where the charsets differ.
            let payload = random.bytes(count).map { round % 2 == 0 ? $0 : $0 | 0x80 }
            guard let decoded = QRText.decode(payload) else {
                #expect(String(validating: payload, as: UTF8.self) == nil)
                continue
            }
            let controls = payload.contains { $0 < 0x20 && ![0x09, 0x0A, 0x0D].contains($0) || $0 == 0x7F }
            #expect(decoded.charset == .utf8 || !controls)
            switch decoded.charset {
            case .utf8?: #expect(Array(decoded.text.utf8) == payload)
            case .iso8859_1?: #expect(decoded.text.unicodeScalars.map { UInt8($0.value) } == payload)
            case .shiftJIS?: #expect(!decoded.text.isEmpty && decoded.text.unicodeScalars.allSatisfy { $0.value != 0xFFFD })
            default: Issue.record("a guess is UTF-8, Shift_JIS or ISO-8859-1, not \(decoded.charsetName)")
            }
        }
    }

    func eci(_ assignment: Int, at offset: Int = 0) -> QRSymbol.ECIDesignator {
        QRSymbol.ECIDesignator(offset: offset, assignment: assignment)
    }

    @Test("W6: an ECI designator decides the charset, for every charset of the AIM ECI table")
    func w6ECINamesTheCharset() {
        // (ECI, the bytes as an encoder stores them, the text, the name the record gives)
        let cases: [(Int, [UInt8], String, String)] = [
            (3, [0x63, 0x61, 0x66, 0xE9], "café", "ISO-8859-1"),
            (4, [0xA3, 0xF3, 0x64, 0xBC], "Łódź", "ISO-8859-2"),
            (7, [0xBF, 0xE0, 0xD8, 0xD2, 0xD5, 0xE2], "Привет", "ISO-8859-5"),
            (9, [0xD9, 0xEC, 0xDD, 0xE3, 0xE1], "Ωμέγα", "ISO-8859-7"),
            (10, [0xF9, 0xEC, 0xE5, 0xED], "שלום", "ISO-8859-8"),
            (13, [0xA1, 0xA2], "กข", "ISO-8859-11"),
            (17, [0xA4, 0x31], "€1", "ISO-8859-15"),
            (18, [0xAA, 0xBA], "Șș", "ISO-8859-16"),
            (2, [0xB0, 0xC9], "░╔", "IBM437"),
            (20, [0x93, 0xFA, 0x96, 0x7B], "日本", "Shift_JIS"),
            (21, [0x8A, 0x9A], "Šš", "windows-1250"),
            (22, [0xCF, 0xF0, 0xE8], "При", "windows-1251"),
            (23, [0x80, 0x99], "€™", "windows-1252"),
            (24, [0xC7, 0xE1], "ال", "windows-1256"),
            (25, [0x00, 0x48, 0x00, 0xE9, 0x20, 0xAC], "Hé€", "UTF-16BE"),
            (26, [0xC3, 0xA9], "é", "UTF-8"),
            (27, Array("plain".utf8), "plain", "US-ASCII"),
            (28, [0xA4, 0xA4, 0xA4, 0xE5], "中文", "Big5"),
            (29, [0xD6, 0xD0, 0xCE, 0xC4], "中文", "GB18030"),
            (30, [0xC7, 0xD1, 0xB1, 0xB9], "한국", "EUC-KR"),
            (33, [0x48, 0x00, 0xE9, 0x00], "Hé", "UTF-16LE"),
            (34, [0x00, 0x01, 0xF6, 0x00], "😀", "UTF-32BE")
        ]
        for (assignment, bytes, text, name) in cases {
            let decoded = QRText.decode(bytes, designators: [eci(assignment)])
            #expect(decoded?.text == text && decoded?.charsetName == name, "ECI \(assignment): \(String(describing: decoded))")
            // Without the designator the guess reads the others wrongly, or not at all.
            if !["UTF-8", "US-ASCII", "ISO-8859-1", "Shift_JIS"].contains(name) {
                #expect(QRText.decode(bytes)?.text != text, "ECI \(assignment)")
            }
        }
    }

    @Test("W6: bytes that are no text in the charset their ECI names, and ECI 899, are binary")
    func w6ECIRefusesWhatDoesNotFit() {
        #expect(QRText.decode([0x41, 0xE9], designators: [eci(27)]) == nil)
        #expect(QRText.decode([0xC3], designators: [eci(26)]) == nil)
        #expect(QRText.decode([0x00, 0x48, 0x00], designators: [eci(25)]) == nil)
        #expect(QRText.decode(Array("text".utf8), designators: [eci(QRText.binaryECI)]) == nil)
        // An ECI no charset is known for: the bytes are guessed, as without one.
        #expect(QRText.decode([0x63, 0x61, 0x66, 0xE9], designators: [eci(811_799)]) == QRText(text: "café", charset: .iso8859_1))
    }

    @Test("W6: designators that switch charset read each part in its own, and the record names them in order")
    func w6ECISegmentsSwitchCharset() {
        // "Ω" in ISO-8859-7, then "日本" in Shift_JIS, after an ASCII prefix read as the guess.
        let bytes: [UInt8] = [0x41, 0x3A, 0xD9, 0x93, 0xFA, 0x96, 0x7B]
        let decoded = QRText.decode(bytes, designators: [eci(9, at: 2), eci(20, at: 3)])
        #expect(decoded == QRText(text: "A:Ω日本", charsets: [.utf8, .iso8859_7, .shiftJIS]))
        #expect(decoded?.charsetName == "UTF-8+ISO-8859-7+Shift_JIS" && decoded?.charset == nil)
        // The same charset twice is named once; an empty payload is in the charset its designator names.
        #expect(QRText.decode([0xE9, 0xE8], designators: [eci(3), eci(3, at: 1)])?.charsetName == "ISO-8859-1")
        #expect(QRText.decode([], designators: [eci(7)]) == QRText(text: "", charset: .iso8859_5))
        // Designators out of order or past the end are not trusted: the bytes are guessed.
        #expect(QRText.decode([0xE9], designators: [eci(7, at: 5)]) == QRText(text: "é", charset: .iso8859_1))
    }

    @Test("W6: ZXing's ECI protocol text gives the designators at their byte offsets, or none when it disagrees")
    func w6ECIProtocolIsParsed() {
        func designators(_ text: String, _ payload: [UInt8]) -> [QRSymbol.ECIDesignator]? {
            ZXingLibrary.designators(eciProtocol: Array(text.utf8), payload: payload)
        }
        #expect(designators("]Q2plain", Array("plain".utf8)) == [])
        #expect(designators("]Q2\\000009ab\\000020cd", Array("abcd".utf8)) == [eci(9), eci(20, at: 2)])
        // A doubled backslash is one backslash of the payload.
        #expect(designators("]Q2a\\\\b", Array("a\\b".utf8)) == [])
        #expect(designators("]Q2\\000003a\\\\\\000026b", Array("a\\b".utf8)) == [eci(3), eci(26, at: 2)])
        // Not the payload, a cut designator, a letter for a digit: nothing is claimed.
        #expect(designators("]Q2abc", Array("abd".utf8)) == nil)
        #expect(designators("]Q2a\\0000", Array("a".utf8)) == nil)
        #expect(designators("]Q2\\00000Xa", Array("a".utf8)) == nil)
    }
}
