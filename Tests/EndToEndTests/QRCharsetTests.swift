import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// sl-qr decode reads payloads in the charset their ECI names, else the one that fits, as ZXing-C++ does (W6):
/// symbols made by segno, a real encoder, in Kanji mode, in byte mode with Shift_JIS or ISO-8859-1 and no ECI,
/// and with an ECI for each charset segno writes one for; the records name the charset and keep the bytes as
/// stored, `--raw` prints the text in UTF-8. A structured-append sequence is joined when whole.
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
        ("cyrillic", "'Привет', encoding='iso-8859-5', eci=True", "Привет", "ISO-8859-5", true),
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

    /// segno's ECI table, with the name the record gives each. Left out: iso8859-1, for which segno writes no ECI
    /// (it is the default; the latin1 case above reads it), cp437, which segno writes as ECI 1 where
    /// the AIM table has ISO-8859-1 (0 and 2 are code page 437), and shift_jis, which segno writes in Kanji mode.
    static let eciCharsets: [(codec: String, charset: String)] =
        (2...16).filter { $0 != 12 }.map { ("iso8859-\($0)", "ISO-8859-\($0)") } + [
            ("cp1250", "windows-1250"), ("cp1251", "windows-1251"), ("cp1252", "windows-1252"), ("cp1256", "windows-1256"),
            ("utf-16-be", "UTF-16BE"), ("big5", "Big5"), ("gb18030", "GB18030"), ("euc_kr", "EUC-KR"),
            // An ASCII payload is the same text in UTF-8, and is not read twice to learn its designator.
            ("ascii", "UTF-8")
        ]

    @Test("W6: an ECI names the charset, for every charset segno writes one for; the bytes are kept as stored")
    func w6EveryECICharsetIsRead() throws {
        // Each codec's text: six characters of its upper half (or a fixed word where a character takes two bytes),
        // made and checked by Python's own codec; the manifest says what was stored.
        let script = """
            import segno, json, sys
            words = {'utf-16-be': 'Hé€ü', 'big5': '中文字', 'gb18030': '中文字', 'euc_kr': '한국어', 'ascii': 'plain'}
            out = []
            for codec in sys.argv[2].split(','):
                if codec in words:
                    text = words[codec]
                else:
                    chars = []
                    for b in range(0xC0, 0x100):
                        try:
                            chars.append(bytes([b]).decode(codec))
                        except UnicodeDecodeError:
                            pass
                    text = 'A' + ''.join(chars[:6])
                data = text.encode(codec)
                segno.make(text, encoding=codec, eci=True, mode='byte', micro=False).save(sys.argv[1] + '/' + codec + '.png', scale=6)
                out.append({'codec': codec, 'text': text, 'bytes': list(data)})
            print(json.dumps(out, ensure_ascii=False))
            """
        let codecs = Self.eciCharsets.map(\.codec)
        let made = try Tools.runInstalled("/usr/bin/python3", ["-c", script, home.path, codecs.joined(separator: ",")])
        try #require(made.status == 0, "segno (python3-segno) is needed; run scripts/bootstrap: \(made.stderrText)")
        let manifest = try #require(try JSON.parse(made.stdoutText).arrayValue)
        let files = codecs.map { home.file($0 + ".png") }
        let run = try Tools.run("sl-qr", ["decode", "--jsonl"] + files, home: home.path)
        #expect(run.status == 0, "\(run.stderrText)")
        let records = try run.jsonLines()
        try #require(records.count == codecs.count, "\(run.stdoutText)")
        for ((record, stored), expected) in zip(zip(records, manifest), Self.eciCharsets) {
            let bytes = stored["bytes"]?.arrayValue?.compactMap { $0.intValue.map { UInt8($0) } }
            #expect(record["text"]?.stringValue == stored["text"]?.stringValue, "\(expected.codec): \(record)")
            #expect(record["charset"]?.stringValue == expected.charset, "\(expected.codec): \(record)")
            #expect(record["bytesBase64"]?.stringValue.flatMap(Base64.decode) == bytes, "\(expected.codec): \(record)")
        }
    }

    @Test(
        """
        W6: a structured-append sequence in one image is one record; the parts of an incomplete one are marked, never \
        classified
        """)
    func w6StructuredAppendIsJoined() throws {
        let url = "https://example.com/" + String(repeating: "structured-append-", count: 8)
        let script = """
            import segno, sys
            from PIL import Image
            parts = [Image.open(q.save(sys.argv[1] + '/part%d.png' % i, scale=5) or sys.argv[1] + '/part%d.png' % i).convert('L')
                     for i, q in enumerate(segno.make_sequence(sys.argv[2], symbol_count=3))]
            def row(images, name):
                out = Image.new('L', (sum(p.width for p in images) + 20 * len(images), max(p.height for p in images)), 255)
                x = 0
                for p in images:
                    out.paste(p, (x, 0))
                    x += p.width + 20
                out.save(sys.argv[1] + '/' + name)
            row(parts, 'whole.png')
            row([parts[0], parts[2]], 'incomplete.png')
            """
        let made = try Tools.runInstalled("/usr/bin/python3", ["-c", script, home.path, url])
        try #require(made.status == 0, "segno and Pillow are needed; run scripts/bootstrap: \(made.stderrText)")

        let whole = try Tools.run("sl-qr", ["decode", "--jsonl", home.file("whole.png")], home: home.path)
        #expect(whole.status == 0, "\(whole.stderrText)")
        let joined = try whole.jsonLines()
        #expect(joined.count == 1 && joined.first?["text"]?.stringValue == url && joined.first?["kind"]?.stringValue == "url", "\(joined)")

        let incomplete = try Tools.run("sl-qr", ["decode", "--jsonl", home.file("incomplete.png")], home: home.path)
        #expect(incomplete.status == 12, "\(incomplete.stderrText)")
        let parts = try incomplete.jsonLines()
        #expect(parts.map { $0["kind"]?.stringValue } == ["part", "part"], "\(parts)")
        #expect(parts.map { $0["sequence"]?["index"]?.intValue } == [0, 2] && parts.allSatisfy { $0["sequence"]?["count"]?.intValue == 3 })
        // The first part starts like a URL; it is not reported as one.
        #expect(parts.first?["text"]?.stringValue.map { url.hasPrefix($0) } == true && parts.first?["url"] == nil)
        #expect(incomplete.stderrText.contains("only 2 of the 3 symbols of a structured-append sequence"), "\(incomplete.stderrText)")
        let raw = try Tools.run("sl-qr", ["decode", "--raw", "-q", home.file("incomplete.png")], home: home.path)
        #expect(raw.status == 12 && raw.stdout.isEmpty, "\(raw.stdoutText)")
    }
}
