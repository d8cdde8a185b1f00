import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// sl-qr decode reads payloads in the charset that fits, as zbarimg and ZXing-C++ do (W6): symbols made by
/// segno, a real encoder, in Kanji mode, in byte mode with Shift_JIS or ISO-8859-1 and no ECI, and with an
/// ECI for ISO-8859-5; the records name the charset and keep the bytes, `--raw` prints the text in UTF-8.
@Suite struct QRCharsetTests {
    let home = TemporaryDirectory("sl-qr-charset")

    /// (file name, segno arguments, text, charset, zbarimg prints the same text)
    static let symbols: [(String, String, String, String, Bool)] = [
        ("kanji", "'日本語のテキスト', mode='kanji'", "日本語のテキスト", "Shift_JIS", true),
        ("katakana", "'ｶﾀｶﾅ テスト', encoding='shift_jis', mode='byte', eci=False", "ｶﾀｶﾅ テスト", "Shift_JIS", true),
        // zbarimg reads 0x7E as JIS X 0201's overline (‾): Windows-31J's tilde keeps the URL a URL.
        (
            "url", "'https://example.jp/~user/日本', encoding='shift_jis', mode='byte', eci=False", "https://example.jp/~user/日本",
            "Shift_JIS", false
        ),
        ("latin1", "'café crème', encoding='iso-8859-1', eci=False", "café crème", "ISO-8859-1", true),
        ("cyrillic", "'Привет', encoding='iso-8859-5', eci=True", "Привет", "UTF-8", true),
        ("utf8", "'Grüße', encoding='utf-8', eci=True", "Grüße", "UTF-8", true)
    ]

    @Test("W6: Kanji mode, Shift_JIS and ISO-8859-1 without an ECI, and an ECI: text in the charset that fits, named")
    func w6PayloadsReadInTheirCharset() throws {
        let script = Self.symbols.map { name, arguments, _, _, _ in
            "segno.make(\(arguments), micro=False).save('\(home.file(name + ".png"))', scale=6)"
        }
        let made = try Tools.runInstalled("/usr/bin/python3", ["-c", "import segno\n" + script.joined(separator: "\n")])
        try #require(made.status == 0, "segno (python3-segno) is needed; run scripts/bootstrap: \(made.stderrText)")
        let files = Self.symbols.map { home.file($0.0 + ".png") }
        let run = try Tools.run("sl-qr", ["decode", "--jsonl"] + files, home: home.path)
        #expect(run.status == 0, "\(run.stderrText)")
        let records = try run.jsonLines()
        try #require(records.count == Self.symbols.count, "\(run.stdoutText)")
        for (record, symbol) in zip(records, Self.symbols) {
            #expect(record["text"]?.stringValue == symbol.2, "\(symbol.0): \(record)")
            #expect(record["charset"]?.stringValue == symbol.3, "\(symbol.0): \(record)")
            #expect(record["kind"]?.stringValue == (symbol.0 == "url" ? "url" : "text"), "\(symbol.0): \(record)")
            #expect(record["bytesBase64"]?.stringValue.flatMap(Base64.decode)?.isEmpty == false)
        }
        // The bytes are kept as stored: Shift_JIS pairs for Kanji mode.
        #expect(records[0]["bytesBase64"]?.stringValue == "k/qWe4zqgsyDZYNMg1iDZw==")

        // --raw prints the text in UTF-8, as zbarimg --raw does.
        let raw = try Tools.run("sl-qr", ["decode", "--raw", "-q"] + files, home: home.path)
        #expect(raw.status == 0 && raw.stdoutText == Self.symbols.map { $0.2 + "\n" }.joined(), "\(raw.stdoutText)")
        try #require(Tools.available("zbarimg"), "zbarimg is needed; run scripts/bootstrap")
        for (file, symbol) in zip(files, Self.symbols) where symbol.4 {
            let zbar = try Tools.shell("zbarimg --raw -q '\(file)'", environment: ["DBUS_SESSION_BUS_ADDRESS": "disabled:"])
            #expect(zbar.stdoutText == symbol.2 + "\n", "zbarimg on \(symbol.0): \(zbar.stdoutText)")
        }
    }

    @Test("W6: a binary payload has no text and no charset, and its bytes whole")
    func w6BinaryHasNoCharset() throws {
        // 0x80 and the C1 controls fit neither Shift_JIS nor ISO-8859-1.
        let made = try Tools.runInstalled(
            "/usr/bin/python3",
            [
                "-c",
                "import segno\nsegno.make(bytes([0, 0x80, 0x9f, 0xff, 1, 2]), mode='byte', micro=False).save('\(home.file("b.png"))', scale=6)"
            ])
        try #require(made.status == 0, "\(made.stderrText)")
        let run = try Tools.run("sl-qr", ["decode", "--jsonl", home.file("b.png")], home: home.path)
        let record = try #require(try run.jsonLines().first)
        #expect(record["kind"]?.stringValue == "binary" && record["text"] == .null && record["charset"] == .null, "\(record)")
        #expect(record["bytesBase64"]?.stringValue.flatMap(Base64.decode) == [0, 0x80, 0x9F, 0xFF, 1, 2])
    }
}
