import StarlineCore
import StarlineQR
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
            case .utf8: #expect(Array(decoded.text.utf8) == payload)
            case .iso8859_1: #expect(decoded.text.unicodeScalars.map { UInt8($0.value) } == payload)
            case .shiftJIS: #expect(!decoded.text.isEmpty && decoded.text.unicodeScalars.allSatisfy { $0.value != 0xFFFD })
            }
        }
    }
}
