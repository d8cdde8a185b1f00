import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// End-to-end tests of the built `sl-qr` with a temporary STARLINE_HOME.
@Suite struct SLQRTests {
    let home = TemporaryDirectory("sl-qr-e2e")

    func qr(_ arguments: [String], stdin: [UInt8]? = nil, environment: [String: String] = [:]) throws -> ToolRun {
        try Tools.run("sl-qr", arguments, stdin: stdin, home: home.path, environment: environment)
    }

    /// Encodes `payload` (through stdin) to a PNG and decodes it back; returns the decoded records.
    func roundTrip(_ payload: [UInt8], level: String = "M", extra: [String] = []) throws -> [JSON] {
        let png = home.file("rt-\(UUID().uuidString).png")
        let enc = try qr(["encode", "-", "-l", level, "-o", png, "--verify"] + extra, stdin: payload)
        #expect(enc.status == 0, "encode failed: \(enc.stderrText)")
        let dec = try qr(["decode", png, "--show-secrets"])
        #expect(dec.status == 0, "decode failed: \(dec.stderrText)")
        return try dec.jsonLines()
    }

    @Test(
        "round trip of ASCII, CJK, emoji, binary with NULs and invalid UTF-8",
        arguments: [
            Array("https://example.com/path?q=1".utf8),
            Array("星线 — 你好，世界".utf8),
            Array("emoji 😀👩‍👩‍👧 ok".utf8),
            [0, 1, 2, 0, 255, 0, 10, 13, 0],
            [0xC3, 0x28, 0xA0, 0xA1, 0xFF],
            Array("0123456789".utf8),
            Array("with a trailing newline\n".utf8)
        ])
    func roundTrip(payload: [UInt8]) throws {
        let records = try roundTrip(payload)
        let record = try #require(records.first)
        #expect(records.count == 1)
        #expect(record["bytesBase64"]?.stringValue == Base64.encode(payload))
        if let text = String(validating: payload, as: UTF8.self) {
            #expect(record["text"]?.stringValue == text && record["charset"]?.stringValue == "UTF-8")
        } else if let latin1 = payload.first, latin1 == 0xC3 {
            // Not UTF-8, but ISO-8859-1 fits (no C1 or other control character): text, as zbarimg and ZXing read it.
            #expect(record["text"]?.stringValue == "\u{C3}(\u{A0}\u{A1}\u{FF}" && record["charset"]?.stringValue == "ISO-8859-1")
        } else {
            // NUL and other control characters are no text in any charset but UTF-8.
            #expect(record["charset"] == .null)
            #expect(record["text"] == .null)
            #expect(record["kind"]?.stringValue == "binary")
        }
        #expect(record["index"]?.intValue == 0)
        #expect(record["attempt"]?.stringValue == "original")
        #expect(record["corners"]?.arrayValue?.count == 4)
    }

    @Test(
        "maximum byte capacity at each EC level round-trips; one byte more exits 12 naming the capacity",
        arguments: [("L", 2953), ("M", 2331), ("Q", 1663), ("H", 1273)])
    func maximumCapacity(level: String, capacity: Int) throws {
        let payload = (0..<capacity).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }  // includes NUL bytes
        let record = try #require(try roundTrip(payload, level: level).first)
        #expect(record["bytesBase64"]?.stringValue == Base64.encode(payload))
        let over = try qr(["encode", "-", "-l", level, "-o", home.file("over.png")], stdin: payload + [42])
        #expect(over.status == 12)
        let error = try over.error()["error"]
        #expect(error?["code"]?.stringValue == "CAPACITY_EXCEEDED")
        #expect(error?["details"]?["capacity"]?.intValue == Int64(capacity))
        #expect(error?["message"]?.stringValue?.contains("\(capacity)") == true)
    }

    @Test func maxVersionLimitsTheSymbol() throws {
        let run = try qr(["encode", String(repeating: "x", count: 100), "--max-version", "3", "-o", home.file("v.png")])
        #expect(run.status == 12)
        #expect(run.errorCode == "CAPACITY_EXCEEDED")
        let ok = try qr(["encode", "hi", "--min-version", "7", "-o", home.file("v7.png")])
        #expect(try ok.json()["version"]?.intValue == 7)
    }

    @Test func everyFormat() throws {
        let text = "format test"
        let png = try qr(["encode", text, "-f", "png"])
        #expect(Array(png.stdout.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let svg = try qr(["encode", text, "-f", "svg"])
        #expect(svg.stdoutText.hasPrefix("<?xml") && svg.stdoutText.contains("<svg") && svg.stdoutText.contains("viewBox"))
        let utf8 = try qr(["encode", text, "-f", "utf8", "-m", "2"])
        #expect(utf8.stdoutText.contains("█") || utf8.stdoutText.contains("▀"))
        let ansi = try qr(["encode", text, "-f", "ansi"])
        #expect(ansi.stdoutText.contains("\u{1B}[40m") && ansi.stdoutText.contains("\u{1B}[0m"))
        let ascii = try qr(["encode", text, "-f", "ascii", "-m", "0"])
        let matrix = try qr(["encode", text, "-f", "matrix"])
        let m = try ModuleMatrix(json: try matrix.json())
        let asciiLines = ascii.stdoutText.split(separator: "\n")
        #expect(asciiLines.count == m.size)
        #expect(asciiLines.first?.count == m.size * 2)
        #expect(try matrix.json()["version"]?.intValue == 1)
        for format in ["png", "svg", "utf8", "ansi", "ascii", "matrix"] {
            let verified = try qr(["encode", text, "-f", format, "--verify"])
            #expect(verified.status == 0, "\(format) --verify: \(verified.stderrText)")
        }
    }

    @Test func formatFollowsTheOutputExtensionAndRecordDescribesTheFile() throws {
        let run = try qr(["encode", "ext", "-o", home.file("x.svg"), "-s", "3", "-m", "2"])
        let record = try run.json()
        #expect(record["format"]?.stringValue == "svg")
        #expect(record["pixels"]?.intValue == Int64((21 + 4) * 3))
        #expect(String(decoding: home.read("x.svg"), as: UTF8.self).contains("<svg"))
        _ = try qr(["encode", "ext", "-o", home.file("x.json")])
        #expect(try JSON.parse(home.read("x.json"))["rows"] != nil)
        let png = try qr(["encode", "ext", "-o", home.file("x.png")])
        #expect(try png.json()["format"]?.stringValue == "png")
        #expect(try png.json()["modules"]?.intValue == 21)
    }

    @Test(
        """
        -o FILE: created with the umask like any output, replaced atomically (temp file + rename, nothing left \
        behind), not fsync'ed
        """)
    func outputFileIsAnOrdinaryAtomicallyReplacedFile() throws {
        try #require(Tools.available("strace"), "strace is needed for this test; run scripts/bootstrap")
        let dir = home.file("out")
        let script = """
            set -e
            mkdir -p '\(dir)' && cd '\(dir)'
            echo old > a.png
            umask 027
            strace -f -qq -e trace=fsync,fdatasync,rename,renameat,renameat2 -o trace '\(Tools.path("sl-qr"))' encode 'output file' -o a.png >/dev/null
            stat -c %a a.png
            ls -A
            cat trace
            """
        let run = try Tools.shell(script)
        #expect(run.status == 0, "\(run.stderrText)")
        let lines = run.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines.first == "640", "mode of a new output file under umask 027: \(lines.first ?? "")")
        #expect(lines.dropFirst().prefix(2) == ["a.png", "trace"], "only the output remains: \(lines)")
        #expect(run.stdoutText.contains("rename"), "replaced by rename: \(run.stdoutText)")
        #expect(
            !run.stdoutText.contains("fsync") && !run.stdoutText.contains("fdatasync"), "output files are not fsync'ed: \(run.stdoutText)")
        let decoded = try qr(["decode", dir + "/a.png"]).json()
        #expect(decoded["text"]?.stringValue == "output file")
    }

    @Test(
        """
        on a terminal: encode draws the code in UTF-8 blocks and refuses to write a PNG (exit 2); redirected, PNG \
        bytes
        """)
    func terminalOutput() throws {
        try #require(Tools.available("script"), "script(1) (bsdutils) gives the tool a terminal; run scripts/bootstrap")
        let bin = Tools.path("sl-qr")
        // script(1) runs the command on a pseudo-terminal; -e passes its exit status on.
        let drawn = try Tools.shell("script -qec \"'\(bin)' encode 'on a tty'\" /dev/null")
        #expect(drawn.status == 0, "\(drawn.stdoutText)")
        #expect(drawn.stdoutText.contains("█") && !drawn.stdoutText.contains("PNG"))
        let refused = try Tools.shell("script -qec \"'\(bin)' encode 'on a tty' -f png\" /dev/null")
        #expect(refused.status == 2)
        #expect(refused.stdoutText.contains("refusing to write a PNG image to a terminal"))
        let piped = try qr(["encode", "on a tty"])
        #expect(Array(piped.stdout.prefix(4)) == [0x89, 0x50, 0x4E, 0x47], "not a terminal: PNG by default")
    }

    @Test(
        """
        W6 decode --raw: a payload's escape sequences reach a terminal made visible and a pipe byte for byte; a file \
        name in a notice is made visible too
        """)
    func w6RawPayloadsAndNoticesShowEscapesOnATerminal() throws {
        try #require(Tools.available("script"), "script(1) (bsdutils) gives the tool a terminal; run scripts/bootstrap")
        let payload = Array("clip\u{1B}]52;c;ZXZpbA==\u{7}\u{202E}txt.exe".utf8)
        let png = home.file("hostile.png")
        #expect(try qr(["encode", "-", "-o", png], stdin: payload).status == 0)
        let piped = try qr(["decode", "--raw", png])
        #expect(piped.status == 0 && piped.stdout == payload + [0x0A], "a pipe keeps the bytes")
        let bin = Tools.path("sl-qr")
        let shown = try Tools.shell("script -qec \"'\(bin)' decode --raw '\(png)'\" /dev/null")
        #expect(shown.status == 0, "\(shown.stdoutText)")
        #expect(
            !shown.stdout.contains(0x1B) && !shown.stdoutText.unicodeScalars.contains("\u{202E}"), "\(shown.stdoutText.debugDescription)")
        #expect(shown.stdoutText.contains("clip\\x1b]52;c;ZXZpbA==\\x07\\u202etxt.exe"), "\(shown.stdoutText.debugDescription)")

        let blank = home.file("no code \u{1B}[2J.pgm")
        try Data(Canvas(width: 64, height: 64).pgm).write(to: URL(fileURLWithPath: blank))
        let notice = try qr(["decode", "--raw", blank])
        #expect(
            !notice.stderr.contains(0x1B) && notice.stderrText.contains("no code \\x1b[2J.pgm"), "\(notice.stderrText.debugDescription)")
    }

    /// A build with RUNPATH $ORIGIN (a plain `swift build`, as this debug build is) would have dlopen look beside
    /// the executable first: a library dropped there by anyone who can write the directory would run its
    /// constructor inside the tool. Libraries are looked up in the system's library directories only, and read
    /// from a descriptor that passed the trust rule (SharedLibrary).
    @Test("a libzbar dropped beside a tool is never loaded: system libraries come from the system's directories")
    func aLibraryBesideTheToolIsNotLoaded() throws {
        let beside = TemporaryDirectory("beside-the-tool")
        let tool = beside.file("sl-qr")
        try FileManager.default.copyItem(atPath: Tools.path("sl-qr"), toPath: tool)
        let marker = beside.file("constructor-ran")
        let source = beside.file("fake.c")
        try "#include <fcntl.h>\n__attribute__((constructor)) static void ran(void) { creat(\"\(marker)\", 0644); }\n".write(
            toFile: source, atomically: true, encoding: .utf8)
        for name in ["libzbar.so.0", "libzbar.so", "libcurl.so.4", "libcrypto.so.3"] {
            let built = try Tools.runInstalled("/usr/bin/gcc", ["-shared", "-fPIC", "-o", beside.file(name), source])
            try #require(built.status == 0, "gcc: \(built.stderrText)")
        }
        let png = beside.file("code.png")
        #expect(try qr(["encode", "-o", png, "beside"]).status == 0)
        let decoded = try Tools.run(tool, ["decode", "--raw", png], home: home.path)
        #expect(decoded.status == 0 && decoded.stdoutText == "beside\n", "\(decoded.stderrText)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the library beside the tool was loaded")
    }

    @Test func pngIsByteIdenticalForIdenticalInput() throws {
        let a = try qr(["encode", "same input", "-f", "png"]).stdout
        let b = try qr(["encode", "same input", "-f", "png"]).stdout
        #expect(!a.isEmpty && a == b)
    }

    @Test func friendBuildsTheLinkOnTheConfiguredChatBase() throws {
        let run = try qr(["friend", "AbCdEfGh1234", "-o", home.file("f.png"), "--verify"])
        #expect(run.status == 0, "\(run.stderrText)")
        let record = try run.json()
        #expect(record["url"]?.stringValue == "https://chat.thestarline.cn/f/AbCdEfGh1234")
        #expect(record["verified"] == .bool(true))
        let decoded = try qr(["decode", home.file("f.png")]).jsonLines()
        #expect(decoded.first?["kind"]?.stringValue == "friendLink")
        #expect(decoded.first?["code"]?.stringValue == "AbCdEfGh1234")

        let local = try qr(
            ["friend", "http://127.0.0.1:8080/chat/f/Zz_-0123456789", "-o", home.file("l.png")],
            environment: ["STARLINE_CHAT_BASE_URL": "http://127.0.0.1:8080/chat"])
        #expect(try local.json()["url"]?.stringValue == "http://127.0.0.1:8080/chat/f/Zz_-0123456789")
        let localDecoded = try qr(["decode", home.file("l.png"), "--chat", "http://127.0.0.1:8080/chat"]).jsonLines()
        #expect(localDecoded.first?["kind"]?.stringValue == "friendLink")
        // The same image under the default chat base is only a URL.
        let elsewhere = try qr(["decode", home.file("l.png")]).jsonLines()
        #expect(elsewhere.first?["kind"]?.stringValue == "url")
        // A link of the default chat base stays a friend link when another base is configured (W6).
        let production = try qr(["decode", home.file("f.png"), "--chat", "http://127.0.0.1:8080/chat"]).jsonLines()
        #expect(production.first?["kind"]?.stringValue == "friendLink")
        let rebuilt = try qr(["friend", "https://chat.thestarline.cn/f/AbCdEfGh1234", "-f", "utf8", "--chat", "http://127.0.0.1:8080/chat"])
        #expect(rebuilt.status == 0, "a default-base link is accepted and kept on its base: \(rebuilt.stderrText)")
    }

    @Test func friendRejectsBadCodesForeignLinksAndUnsafeBaseURLs() throws {
        let short = try qr(["friend", "abc", "-f", "utf8"])
        #expect(short.status == 2 && short.errorCode == "INVALID_FRIEND_LINK")
        let foreign = try qr(["friend", "https://chat.thestarline.cn.evil.com/f/AbCdEfGh1234", "-f", "utf8"])
        #expect(foreign.status == 2 && foreign.errorCode == "INVALID_FRIEND_LINK")
        let unsafe = try qr(["friend", "AbCdEfGh1234", "-f", "utf8"], environment: ["STARLINE_CHAT_BASE_URL": "http://chat.example.com"])
        #expect(unsafe.status == 2 && unsafe.errorCode == "INVALID_URL")
        #expect(try unsafe.error()["error"]?["message"]?.stringValue?.contains("STARLINE_CHAT_BASE_URL") == true)
    }

    @Test("W6 decode classifies auth callbacks before friend links, and redacts the code")
    func w6AuthCallbackRedaction() throws {
        let callback = "starline-workbench://auth/callback?code=SECRET123&state=st4te"
        _ = try qr(["encode", callback, "-o", home.file("cb.png")])
        let hidden = try #require(try qr(["decode", home.file("cb.png")]).jsonLines().first)
        #expect(hidden["kind"]?.stringValue == "authCallback")
        #expect(hidden["appId"]?.stringValue == "workbench")
        #expect(hidden["code"]?.stringValue == "redacted")
        #expect(hidden["state"]?.stringValue == "st4te")
        #expect(hidden["bytesBase64"] == nil)
        #expect(hidden["text"]?.stringValue?.contains("SECRET123") == false)
        let shown = try #require(try qr(["decode", home.file("cb.png"), "--show-secrets"]).jsonLines().first)
        #expect(shown["code"]?.stringValue == "SECRET123")
        #expect(shown["text"]?.stringValue == callback)
        #expect(shown["bytesBase64"]?.stringValue == Base64.encode(Array(callback.utf8)))

        let loopback = "http://127.0.0.1:53682/callback?error=access_denied&state=x"
        _ = try qr(["encode", loopback, "-o", home.file("lb.png")])
        let denied = try #require(try qr(["decode", home.file("lb.png")]).jsonLines().first)
        #expect(denied["kind"]?.stringValue == "authCallback")
        #expect(denied["error"]?.stringValue == "access_denied")
        #expect(denied["code"] == .null)
    }

    @Test(
        "W6 look-alike friend links are not friend links",
        arguments: [
            "https://chat.thestarline.cn.evil.com/f/AbCdEfGh1234",
            "https://chat.thestarline.cn@evil.com/f/AbCdEfGh1234",
            "https://evil.com@chat.thestarline.cn/f/AbCdEfGh1234",
            "https://evil.com/chat.thestarline.cn/f/AbCdEfGh1234",
            "http://chat.thestarline.cn/f/AbCdEfGh1234",
            "https://chat.thestarline.cn:8443/f/AbCdEfGh1234",
            "https://chat-thestarline.cn/f/AbCdEfGh1234",
            "https://chat.thestarline.cn/f/AbCdEfGh1234/extra",
            "https://chat.thestarline.cn/x/f/AbCdEfGh1234",
            "https://chat.thestarline.cn/f/AbCdEfGh1234?ref=1",
            "https://chat.thestarline.cn/f/AbCdEfGh1234#x",
            "https://chat.thestarline.cn/f/short",
            "https://chat.thestarline.cn/f/bad!chars1",
            "starline-chat://chat.thestarline.cn/f/AbCdEfGh1234"
        ])
    func w6LookAlikes(url: String) throws {
        let file = home.file("look-\(UUID().uuidString).png")
        _ = try qr(["encode", url, "-o", file])
        let run = try qr(["decode", file, "--expect", "friendLink"])
        #expect(run.status == 12)
        #expect(run.errorCode == "UNEXPECTED_KIND")
        // With --expect, stdout carries only records of that kind: none here.
        #expect(run.stdout.isEmpty)
        let record = try #require(try qr(["decode", file]).jsonLines().first)
        #expect(record["kind"]?.stringValue != "friendLink")
        #expect(record["text"]?.stringValue == url)
    }

    @Test func multipleSymbolsInReadingOrderWithCorners() throws {
        var canvas = Canvas(width: 400, height: 400)
        let texts = ["top-left", "top-right", "bottom-left", "bottom-right"]
        for (i, text) in texts.enumerated() {
            let m = try ModuleMatrix(json: try qr(["encode", text, "-f", "matrix"]).json())
            canvas.draw(m, x: 40 + (i % 2) * 200, y: 40 + (i / 2) * 200, scale: 4)
        }
        let file = home.write("grid.pgm", canvas.pgm)
        let records = try qr(["decode", file]).jsonLines()
        #expect(records.compactMap { $0["text"]?.stringValue } == texts)
        #expect(records.compactMap { $0["index"]?.intValue } == [0, 1, 2, 3])
        for (i, record) in records.enumerated() {
            let xs = record["corners"]?.arrayValue?.compactMap { $0[0]?.intValue } ?? []
            let ys = record["corners"]?.arrayValue?.compactMap { $0[1]?.intValue } ?? []
            #expect(xs.count == 4)
            let x0 = Int64(40 + (i % 2) * 200), y0 = Int64(40 + (i / 2) * 200)
            #expect(xs.allSatisfy { $0 >= x0 - 4 && $0 <= x0 + 21 * 4 + 4 })
            #expect(ys.allSatisfy { $0 >= y0 - 4 && $0 <= y0 + 21 * 4 + 4 })
        }
    }

    @Test func invertedImagesAreRetried() throws {
        let m = try ModuleMatrix(json: try qr(["encode", "inverted payload", "-f", "matrix"]).json())
        var canvas = Canvas(width: (m.size + 8) * 4, height: (m.size + 8) * 4)
        canvas.draw(m, x: 16, y: 16, scale: 4)
        let file = home.write("inv.ppm", canvas.inverted().plainPPM)
        let record = try #require(try qr(["decode", file]).jsonLines().first)
        #expect(record["text"]?.stringValue == "inverted payload")
        #expect(record["attempt"]?.stringValue == "inverted")
    }

    @Test func decodeReadsStdin() throws {
        _ = try qr(["encode", "from stdin", "-o", home.file("s.png")])
        let run = try qr(["decode", "-"], stdin: home.read("s.png"))
        #expect(try run.jsonLines().first?["text"]?.stringValue == "from stdin")
        #expect(try run.jsonLines().first?["file"]?.stringValue == "-")
    }

    @Test func exitCodesForNothingFoundCorruptAndPartialBatches() throws {
        let blank = home.write("blank.pgm", Canvas(width: 64, height: 64).pgm)
        let none = try qr(["decode", blank])
        #expect(none.status == 12 && none.errorCode == "NO_SYMBOL")
        // Every attempt ran (a 64-pixel image is far inside the work budget), and the record says how many: ten
        // with libzbar alone or with both engines.
        #expect(
            try none.jsonLines()
                == [.object([("file", .string(blank)), ("found", .int(0)), ("tried", .int(10))])])

        let corrupt = home.write("corrupt.png", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 1, 2])
        let bad = try qr(["decode", corrupt])
        #expect(bad.status == 12 && bad.errorCode == "UNREADABLE_IMAGE")
        #expect(try bad.jsonLines().first?["error"]?["code"]?.stringValue == "UNREADABLE_IMAGE")
        // The record names the file once, in "file"; the run's error on stderr names it in its message.
        let pdf = home.write("scan.pdf", Array("%PDF-1.7\n%\u{E2}\u{E3}".utf8))
        let unreadable = try qr(["decode", pdf])
        let record = try unreadable.jsonLines().first
        #expect(record?["file"]?.stringValue == pdf && record?["error"]?["details"]?["file"] == nil)
        #expect(record.map { "\($0)" }?.components(separatedBy: "scan.pdf").count == 2, "\(unreadable.stdoutText)")
        #expect(
            record?["error"]?["message"]?.stringValue?.contains("a PDF file") == true
                && unreadable.stderrText.contains("convert it to PNG"))

        let missing = try qr(["decode", home.file("missing.png")])
        #expect(missing.status == 12 && missing.errorCode == "UNREADABLE_IMAGE")

        _ = try qr(["encode", "good", "-o", home.file("good.png")])
        let batch = try qr(["decode", corrupt, home.file("good.png"), blank, "-j", "2"])
        #expect(batch.status == 8 && batch.errorCode == "PARTIAL_FAILURE")
        let lines = try batch.jsonLines()
        #expect(lines.compactMap { $0["file"]?.stringValue } == [corrupt, home.file("good.png"), blank])
        #expect(lines[1]["text"]?.stringValue == "good")

        let allBad = try qr(["decode", corrupt, blank])
        #expect(allBad.status == 12 && allBad.errorCode == "NO_SYMBOL")
    }

    @Test func usageErrorsExit2WithSuggestions() throws {
        let run = try qr(["encode", "x", "--fromat", "svg"])
        #expect(run.status == 2)
        #expect(run.errorCode == "USAGE")
        #expect(try run.error()["error"]?["message"]?.stringValue?.contains("--format") == true)
        #expect(run.stderrText.contains("Usage: sl-qr encode"))
        #expect(try qr(["encode", "x", "-l", "X"]).status == 2)
        #expect(try qr(["encode", "x", "-s", "0"]).status == 2)
        #expect(try qr(["encode", "x", "--min-version", "9", "--max-version", "3"]).status == 2)
        #expect(try qr(["encode", "-"], stdin: []).status == 2)
        #expect(try qr(["decod", "x.png"]).status == 2)
        #expect(try qr(["decode", "-", "-"]).status == 2)
    }

    @Test func helpAndVersion() throws {
        let help = try qr(["decode", "--help"])
        #expect(help.status == 0 && help.stdoutText.contains("Usage: sl-qr decode [OPTIONS] FILE|-…") && help.stderr.isEmpty)
        let version = try qr(["--version"])
        // The version, then which decoders this install has (PhotoCorpusTests covers both answers).
        #expect(version.stdoutText.hasPrefix("sl-qr \(StarlineVersion.current)\ndecoders: libzbar"))
        #expect(
            version.stdoutText.contains(
                "\nimage formats: PNG, JPEG, PBM/PGM/PPM, BMP, GIF, WebP (libwebp), TIFF (libtiff), HEIC and AVIF (libheif 1."),
            "\(version.stdoutText)")
    }

    @Test("decode reads a QR code saved as BMP, GIF and TIFF (Pillow) and WebP (cwebp: lossy, lossless, with alpha)")
    func everyFormatABrowserOrPhoneSaves() throws {
        let png = home.file("code.png")
        #expect(try qr(["encode", "https://chat.thestarline.cn/f/Formats123", "-o", png]).status == 0)
        let pillow = """
            import sys
            from PIL import Image
            im = Image.open(sys.argv[1]).convert('L')
            im.save(sys.argv[2] + '/code.bmp')
            im.convert('1').save(sys.argv[2] + '/code-1bit.bmp')
            im.convert('RGB').save(sys.argv[2] + '/code-rgb.bmp')
            im.save(sys.argv[2] + '/code.gif', interlace=True)
            rgba = Image.new('RGBA', im.size, (0, 0, 0, 0))
            rgba.putalpha(im.point(lambda v: 255 - v))
            rgba.save(sys.argv[2] + '/alpha.png')
            im.save(sys.argv[2] + '/code-lzw.tiff', compression='tiff_lzw')
            im.convert('1').save(sys.argv[2] + '/code-g4.tiff', compression='group4')
            """
        let made = try Tools.runInstalled("/usr/bin/python3", ["-c", pillow, png, home.path])
        try #require(made.status == 0, "Pillow (python3-pil): \(made.stderrText)")
        for (options, name) in [(["-q", "80"], "lossy.webp"), (["-lossless"], "lossless.webp")] {
            let run = try Tools.runInstalled("/usr/bin/cwebp", ["-quiet"] + options + [png, "-o", home.file(name)])
            try #require(run.status == 0, "cwebp (webp): \(run.stderrText)")
        }
        // Black modules drawn only by their alpha, on a transparent page: white behind them.
        #expect(
            try Tools.runInstalled("/usr/bin/cwebp", ["-quiet", "-exact", home.file("alpha.png"), "-o", home.file("alpha.webp")]).status
                == 0)
        let names = [
            "code.bmp", "code-1bit.bmp", "code-rgb.bmp", "code.gif", "code-lzw.tiff", "code-g4.tiff", "lossy.webp", "lossless.webp",
            "alpha.webp"
        ]
        for name in names {
            let run = try qr(["decode", home.file(name)])
            #expect(run.status == 0, "\(name): \(run.stderrText)")
            #expect(try run.jsonLines().first?["text"]?.stringValue == "https://chat.thestarline.cn/f/Formats123", "\(name)")
        }
        // An animation is refused with what to do (the simple API reads still images).
        let frames = try Tools.runInstalled("/usr/bin/img2webp", ["-lossless", png, home.file("alpha.png"), "-o", home.file("anim.webp")])
        try #require(frames.status == 0, "img2webp (webp): \(frames.stderrText)")
        let animated = try qr(["decode", home.file("anim.webp")])
        #expect(animated.status == 12 && animated.errorCode == "UNREADABLE_IMAGE")
        #expect(animated.stderrText.contains("an animated WebP") && animated.stderrText.contains("convert"), "\(animated.stderrText)")
    }

    @Test func decodesEverythingZbarimgDecodesAndKeepsUTF8Intact() throws {
        try #require(Tools.available("zbarimg") && Tools.available("qrencode"), "zbarimg and qrencode are needed; run scripts/bootstrap")
        // qrencode writes UTF-8 without an ECI header, where zbar guesses a character set unless told not to.
        for text in ["plain ascii", "héllo wörld", "星线 二维码", "Ünïcödé 😀"] {
            let file = home.file("z-\(UUID().uuidString).png")
            let made = try Tools.shell("qrencode -o '\(file)' '\(text)'")
            #expect(made.status == 0)
            let zbar = try Tools.shell("zbarimg -q --raw '\(file)'")
            let ours = try qr(["decode", file])
            #expect(zbar.status == 0)
            #expect(ours.status == 0)
            #expect(try ours.jsonLines().first?["text"]?.stringValue == text)
        }
    }

    @Test("endless standard input is refused at once, never buffered")
    func endlessStandardInputIsBounded() throws {
        let bin = Tools.path("sl-qr")
        // Before: `< /dev/zero` grew until the allocator aborted (16 GB). A 1 GB address-space cap and a
        // 20 s timeout turn that into a failure here instead of a swapping machine.
        let encode = try Tools.shell("ulimit -v 1000000; timeout 20 '\(bin)' encode - -o '\(home.file("zero.png"))' < /dev/zero")
        #expect(encode.status == 12, "\(encode.stderrText)")
        #expect(encode.errorCode == "CAPACITY_EXCEEDED")
        let decode = try Tools.shell("ulimit -v 1000000; timeout 20 '\(bin)' decode - --max-file-size 8 < /dev/zero")
        #expect(decode.status == 12, "\(decode.stderrText)")
        #expect(decode.stdoutText.contains("file too large (over 8 MiB"))
    }

    /// zbarimg's habits: `zbarimg --raw -q IMG` users switch by changing the command name. Compared on the
    /// same images: the payloads, each on its own line (bytes as decoded), nothing else on stdout; -q keeps
    /// stderr empty when a file has no symbol (the status says it: 12 or 8 where zbarimg says 4).
    @Test("decode --raw -q prints what zbarimg --raw -q prints")
    func rawAndQuietSpeakZbarimg() throws {
        let payloads = ["https://chat.thestarline.cn/f/AbCdEfGh1234", "héllo 星", "plain text with spaces", "0123456789"]
        var images: [String] = []
        for (i, text) in payloads.enumerated() {
            let path = home.file("raw-\(i).png")
            let made = try Tools.shell("printf '%s' '\(text)' | qrencode -o '\(path)' -s 4")
            #expect(made.status == 0, "\(made.stderrText)")
            images.append(path)
        }
        for image in images {
            let ours = try qr(["decode", "--raw", "-q", image])
            let theirs = try Tools.shell("zbarimg --raw -q '\(image)'")
            #expect(ours.status == 0 && ours.stdout == theirs.stdout, "\(image): \(ours.stdoutText) vs \(theirs.stdoutText)")
            #expect(ours.stderrText.isEmpty)
        }
        // Several files in one run: one line per payload, in the order of the files.
        let many = try qr(["decode", "--raw", "-q", "-j", "1"] + images)
        let zbarMany = try Tools.shell("zbarimg --raw -q " + images.map { "'\($0)'" }.joined(separator: " "))
        #expect(many.stdout == zbarMany.stdout && many.stdoutText == payloads.map { $0 + "\n" }.joined())
        // A file without a symbol: nothing on stdout, a failure status from both; a notice without -q only.
        let blank = home.file("raw-blank.png")
        #expect(
            FileManager.default.createFile(
                atPath: blank + ".pgm", contents: Data(Array("P5 64 64 255\n".utf8) + [UInt8](repeating: 255, count: 4096))))
        let none = try qr(["decode", "--raw", "-q", blank + ".pgm"])
        let zbarNone = try Tools.shell("zbarimg --raw -q '\(blank).pgm'")
        #expect(none.stdout.isEmpty && zbarNone.stdout.isEmpty && none.status == 12 && zbarNone.status == 4)
        // -q: nothing on stderr either, as zbarimg -q; the status alone says it (12 none, 8 some; zbarimg 4).
        #expect(none.stderr.isEmpty && zbarNone.stderr.isEmpty, "\(none.stderrText)")
        let some = try qr(["decode", "--raw", "-q", images[0], blank + ".pgm"])
        let zbarSome = try Tools.shell("zbarimg --raw -q '\(images[0])' '\(blank).pgm'")
        #expect(some.stdout == zbarSome.stdout && some.status == 8 && zbarSome.status == 4)
        #expect(some.stderr.isEmpty, "\(some.stderrText)")
        // An unreadable file is still an error, with -q too.
        let broken = try qr(["decode", "--raw", "-q", home.file("raw-0.png") + ".missing"])
        #expect(broken.status != 0 && broken.errorCode != nil, "\(broken.stderrText)")
        let loud = try qr(["decode", "--raw", images[0], blank + ".pgm"])
        #expect(loud.status == 8 && loud.stdoutText == payloads[0] + "\n")
        #expect(loud.stderrText.contains("sl-qr: \(blank).pgm: no QR code found"), "\(loud.stderrText)")
    }

    @Test("a batch of friend links through the binary, read back by zbarimg")
    func batchEncodeThroughTheBinary() throws {
        let links = (1...20).map { String(format: "https://chat.thestarline.cn/f/Friend%06d", $0) }
        let out = home.file("batch-out")
        let run = try qr(["encode", "--batch", "-", "--output-dir", out], stdin: Array((links.joined(separator: "\n") + "\n").utf8))
        #expect(run.status == 0, "\(run.stderrText)")
        let all = try run.jsonLines()
        let records = all.filter { $0["line"] != nil }
        #expect(records.count == 20 && records.last?["line"]?.intValue == 20)
        #expect(all.last?["summary"]?["encoded"]?.intValue == 20 && all.count == 21)
        let zbar = try Tools.shell("zbarimg -q --raw '\(out)/000007.png'")
        #expect(zbar.stdoutText == links[6] + "\n")
    }
}
