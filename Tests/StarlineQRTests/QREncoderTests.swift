import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

@testable import StarlineQR

// MARK: - Fixtures

/// ASCII payloads for the cross-check with the `qrencode` CLI: lower case (8-bit mode), pure
/// digits and upper case (numeric / alphanumeric segments), mixtures the mode optimiser has to
/// split, and a long one whose symbol carries version information blocks (version ≥ 7).
let asciiPayloads: [String] = [
    "hello",
    "01234567890123456789012345678901234567890",
    "HELLO WORLD $%*+-./:",
    "https://starline.example/friend/AB12CD34?utm=qr&x=1",
    "Starline: 42 items ready; ORDER 12345678 for user alice@example.org\tEND",
    String(repeating: "The quick brown fox 0123456789 JUMPS OVER THE LAZY DOG. ", count: 6)
]

/// Largest payloads per level, from ISO/IEC 18004 table 7 (byte mode, version 40).
let binaryCapacity: [QRErrorCorrection: Int] = [.L: 2953, .M: 2331, .Q: 1663, .H: 1273]

/// Byte mode after a UTF-8 ECI header: the 12 header bits (mode 0111 + designator 26 in 8 bits)
/// cost one whole byte of payload at every level.
let utf8ECICapacity: [QRErrorCorrection: Int] = [.L: 2952, .M: 2330, .Q: 1662, .H: 1272]

// MARK: - Environment

@Test("the reference tools qrencode and zbarimg are installed")
func referenceToolsInstalled() {
    for tool in [qrencodePath, zbarimgPath] {
        #expect(
            FileManager.default.isExecutableFile(atPath: tool),
            "\(tool) is missing: the project's bootstrap installs it (apt-get install qrencode zbar-tools)")
    }
}

// MARK: - Error correction level

@Test("error correction levels parse case-insensitively and nothing else")
func levelParsing() {
    #expect(QRErrorCorrection(parsing: "L") == .L)
    #expect(QRErrorCorrection(parsing: "m") == .M)
    #expect(QRErrorCorrection(parsing: "q") == .Q)
    #expect(QRErrorCorrection(parsing: "H") == .H)
    for bad in ["", "X", "LM", "low", " M", "M "] {
        #expect(QRErrorCorrection(parsing: bad) == nil, "accepted \(bad.debugDescription)")
    }
    #expect(QRErrorCorrection.allCases.map(\.rawValue) == ["L", "M", "Q", "H"])
}

// MARK: - Choice of encoding

@Test("the encoding path is decided from the whole payload")
func encodingChoice() {
    #expect(QREncoder.encoding(for: Array("hello, world\n\u{7F}".utf8)) == .ascii)
    #expect(QREncoder.encoding(for: Array("你好".utf8)) == .utf8)
    #expect(QREncoder.encoding(for: Array("ascii first, then é".utf8)) == .utf8)
    #expect(QREncoder.encoding(for: Array("👋🏽".utf8)) == .utf8)
    // A NUL anywhere means binary, even in otherwise plain ASCII or valid UTF-8.
    #expect(QREncoder.encoding(for: [0x61, 0x00, 0x62]) == .binary)
    #expect(QREncoder.encoding(for: Array("é".utf8) + [0]) == .binary)
    // Not UTF-8: a lone continuation byte, an overlong "/", an encoded surrogate, a cut sequence.
    #expect(QREncoder.encoding(for: [0x80]) == .binary)
    #expect(QREncoder.encoding(for: [0xC0, 0xAF]) == .binary)
    #expect(QREncoder.encoding(for: [0xED, 0xA0, 0x80]) == .binary)
    #expect(QREncoder.encoding(for: [0x61, 0xE4, 0xBD]) == .binary)
}

// MARK: - Agreement with the qrencode CLI

@Test("ASCII payloads give the same modules as the qrencode CLI", arguments: QRErrorCorrection.allCases)
func matchesQrencodeCLI(level: QRErrorCorrection) throws {
    for payload in asciiPayloads {
        let ours = try QREncoder.encode(payload, level: level)
        let output = try runTool(qrencodePath, ["-t", "ASCII", "-m", "0", "-l", level.rawValue, payload])
        try #require(output.status == 0, "qrencode failed for \(payload.debugDescription)")
        let theirs = try parseQrencodeASCII(output.stdout)
        #expect(ours.size == theirs.count, "size for \(payload.debugDescription) at \(level)")
        #expect(ours.size == 17 + 4 * ours.version)
        #expect(moduleRows(ours) == theirs, "modules differ for \(payload.debugDescription) at \(level)")
    }
}

@Test("the long cross-check payload really reaches the version-information range")
func crossCheckCoversLargeVersions() throws {
    let matrix = try QREncoder.encode(asciiPayloads.last!, level: .H)
    #expect(matrix.version >= 7)
}

// MARK: - Mode optimisation and ECI

@Test("plain ASCII is optimised by libqrencode and carries no ECI header")
func asciiUsesFullCapacity() throws {
    // 17 bytes is exactly the 8-bit capacity of 1-L; an ECI header would push it to version 2.
    #expect(try QREncoder.encode(String(repeating: "a", count: 17), level: .L).version == 1)
    // 7 089 digits fit at 40-L only in numeric mode (3⅓ bits per digit).
    let digits = Array(String(repeating: "0123456789", count: 710).utf8)
    #expect(try QREncoder.encode(Array(digits.prefix(7089)), level: .L).version == 40)
    let error = try #require(throws: StarlineError.self) {
        try QREncoder.encode(Array(digits.prefix(7090)), level: .L)
    }
    #expect(error.code == .capacityExceeded)
    #expect(error.details?["capacity"]?.intValue == 7089)
    // 4 296 characters of alphanumeric mode at 40-L.
    let upper = Array(String(repeating: "ABC 123 $%*+-./:", count: 300).utf8)
    #expect(try QREncoder.encode(Array(upper.prefix(4296)), level: .L).version == 40)
    let upperError = try #require(throws: StarlineError.self) {
        try QREncoder.encode(Array(upper.prefix(4297)), level: .L)
    }
    #expect(upperError.details?["capacity"]?.intValue == 4296)
}

@Test("non-ASCII UTF-8 carries an ECI header; the same length of ASCII or binary does not")
func utf8ECIHeaderCostsSpace() throws {
    // 1-L holds 152 data bits; 17 bytes in one 8-bit segment take 4 + 8 + 136 = 148 of them.
    // The 12-bit ECI header (mode 0111 + designator 26) pushes the UTF-8 text to version 2.
    let utf8 = Array(("a" + String(repeating: "é", count: 8)).utf8)
    #expect(utf8.count == 17 && QREncoder.encoding(for: utf8) == .utf8)
    #expect(try QREncoder.encode(utf8, level: .L).version == 2)
    #expect(try QREncoder.encode(String(repeating: "a", count: 17), level: .L).version == 1)
    #expect(try QREncoder.encode([UInt8](repeating: 0xFF, count: 17), level: .L).version == 1)
    // Short UTF-8 text still fits version 1 (libqrencode's version estimate counts the ECI
    // header 16 bits too long, so only 14 bytes are accepted there rather than 16).
    #expect(try QREncoder.encode(Array(String(repeating: "é", count: 7).utf8), level: .L).version == 1)
}

// MARK: - Decoding back with zbarimg

@Test(
    "zbarimg reads back exactly the bytes we encoded",
    arguments: [
        ("ASCII", Array("Starline friend link: https://starline.example/f/AB12CD".utf8)),
        ("CJK", Array("你好，世界！星线好友二维码测试".utf8)),
        ("emoji", Array("👋🏽 hi 🚀✨ 👨‍👩‍👧‍👦 done".utf8)),
        ("binary with NULs", [0x00, 0x01, 0x00, 0xFF, 0xFE, 0x00, 0x80, 0x7F, 0x00, 0x00, 0x42]),
        ("ASCII with a NUL", Array("before\u{0}after".utf8)),
        ("invalid UTF-8", [0x68, 0x69, 0xC3, 0x28, 0xA0, 0xA1, 0xE2, 0x82])
    ])
func zbarRoundTrip(name: String, payload: [UInt8]) throws {
    for level in QRErrorCorrection.allCases {
        let matrix = try QREncoder.encode(payload, level: level)
        #expect(try zbarDecode(matrix) == payload, "\(name) at \(level)")
    }
}

@Test(
    "binary payloads at the exact maximum fit in version 40 and decode; one more byte does not fit",
    arguments: QRErrorCorrection.allCases)
func binaryMaximumCapacity(level: QRErrorCorrection) throws {
    let expected = try #require(binaryCapacity[level])
    // 0xFF is never valid UTF-8, so every prefix takes the binary path.
    let payload = [0xFF] + SeededRandom.bytes(count: 3999, seed: UInt64(expected))

    // The library finds the maximum itself, on the error path.
    let error = try #require(throws: StarlineError.self) { try QREncoder.encode(payload, level: level) }
    #expect(error.code == .capacityExceeded)
    #expect(error.details?["capacity"]?.intValue == Int64(expected))
    #expect(error.details?["length"]?.intValue == 4000)
    #expect(error.details?["maxVersion"]?.intValue == 40)
    #expect(error.details?["level"]?.stringValue == level.rawValue)
    #expect(error.message.contains("capacity \(expected) bytes"))

    let maximum = Array(payload.prefix(expected))
    let matrix = try QREncoder.encode(maximum, level: level)
    #expect(matrix.version == 40)
    #expect(try zbarDecode(matrix) == maximum)

    let oneMore = try #require(throws: StarlineError.self) {
        try QREncoder.encode(Array(payload.prefix(expected + 1)), level: level)
    }
    #expect(oneMore.code == .capacityExceeded)
    #expect(oneMore.details?["capacity"]?.intValue == Int64(expected))
    #expect(oneMore.details?["length"]?.intValue == Int64(expected + 1))
}

@Test(
    "UTF-8 text at the exact maximum (ECI included) fits and decodes; one more byte does not fit",
    arguments: QRErrorCorrection.allCases)
func utf8MaximumCapacity(level: QRErrorCorrection) throws {
    let expected = try #require(utf8ECICapacity[level])
    let long = Array(String(repeating: "é", count: 2000).utf8)
    let error = try #require(throws: StarlineError.self) { try QREncoder.encode(long, level: level) }
    #expect(error.code == .capacityExceeded)
    #expect(error.details?["capacity"]?.intValue == Int64(expected))

    // Every capacity is even, so the prefix ends on a whole "é" and stays on the UTF-8 path.
    let maximum = Array(long.prefix(expected))
    #expect(QREncoder.encoding(for: maximum) == .utf8)
    let matrix = try QREncoder.encode(maximum, level: level)
    #expect(matrix.version == 40)
    #expect(try zbarDecode(matrix) == maximum)

    let oneMore = Array(("a" + String(repeating: "é", count: expected / 2)).utf8)
    #expect(oneMore.count == expected + 1 && QREncoder.encoding(for: oneMore) == .utf8)
    let tooLong = try #require(throws: StarlineError.self) { try QREncoder.encode(oneMore, level: level) }
    #expect(tooLong.details?["capacity"]?.intValue == Int64(expected))
}

@Test("a payload far beyond any capacity fails fast with the level's capacity")
func hugePayload() throws {
    let payload = [0xFF] + [UInt8](repeating: 0x41, count: 1_000_000)
    let error = try #require(throws: StarlineError.self) { try QREncoder.encode(payload, level: .L) }
    #expect(error.code == .capacityExceeded)
    #expect(error.exitStatus == ErrorCode.capacityExceeded.exitStatus)
    #expect(error.details?["length"]?.intValue == 1_000_001)
    #expect(error.details?["capacity"]?.intValue == 2953)
}

// MARK: - Version limits

@Test("maxVersion caps the symbol: the error message and details carry the capacity")
func maxVersionLimit() throws {
    // 30 bytes of 8-bit data need version 3 at M (version 2 holds 26).
    let payload = String(repeating: "x", count: 30)
    #expect(try QREncoder.encode(payload, level: .M).version == 3)
    #expect(try QREncoder.encode(payload, level: .M, maxVersion: 3).version == 3)

    let error = try #require(throws: StarlineError.self) {
        try QREncoder.encode(payload, level: .M, maxVersion: 2)
    }
    #expect(error.code == .capacityExceeded)
    #expect(error.message == "payload of 30 bytes does not fit in a QR code at version ≤ 2, level M (capacity 26 bytes)")
    #expect(
        error.details
            == .object([
                ("length", .int(30)), ("capacity", .int(26)), ("maxVersion", .int(2)), ("level", .string("M"))
            ]))
    // The reported capacity is real: that many bytes fit at version 2.
    #expect(try QREncoder.encode(String(repeating: "x", count: 26), level: .M, maxVersion: 2).version == 2)
}

@Test("minVersion is a lower bound, not the exact version")
func minVersionIsMinimum() throws {
    let small = try QREncoder.encode("hi", minVersion: 10)
    #expect(small.version == 10)
    #expect(small.size == 57)
    #expect(try zbarDecode(small) == Array("hi".utf8))
    // When the data needs more than the minimum, libqrencode goes higher.
    let large = try QREncoder.encode(String(repeating: "x", count: 30), level: .M, minVersion: 2)
    #expect(large.version == 3)
    #expect(try QREncoder.encode("hi", minVersion: 5, maxVersion: 5).version == 5)
    // The ECI and binary paths honour the minimum too.
    #expect(try QREncoder.encode("é", minVersion: 7).version == 7)
    #expect(try QREncoder.encode([0, 1, 2], minVersion: 4).version == 4)
}

@Test("bad arguments are usage errors")
func usageErrors() throws {
    let empty = try #require(throws: StarlineError.self) { try QREncoder.encode([UInt8]()) }
    #expect(empty.code == .usage)
    #expect(empty.exitStatus == ErrorCode.usage.exitStatus)
    let inverted = try #require(throws: StarlineError.self) { try QREncoder.encode("hi", minVersion: 5, maxVersion: 4) }
    #expect(inverted.code == .usage)
    #expect(inverted.message.contains("5") && inverted.message.contains("4"))
    for (low, high) in [(0, 40), (1, 41), (-3, 2), (41, 41)] {
        let error = try #require(throws: StarlineError.self) { try QREncoder.encode("hi", minVersion: low, maxVersion: high) }
        #expect(error.code == .usage, "min \(low) max \(high)")
    }
}

// MARK: - Matrix

@Test("modules are oriented as in the standard: finder patterns in three corners, timing lines")
func matrixOrientation() throws {
    for level in QRErrorCorrection.allCases {
        let m = try QREncoder.encode("orientation", level: level, minVersion: 7)
        #expect(m.level == level)
        let n = m.size
        // Finder pattern: a dark 7×7 ring, a light ring, a dark 3×3 centre — top left,
        // top right and bottom left, never bottom right.
        for (ox, oy) in [(0, 0), (n - 7, 0), (0, n - 7)] {
            for i in 0..<7 {
                #expect(m[ox + i, oy] && m[ox + i, oy + 6] && m[ox, oy + i] && m[ox + 6, oy + i])
            }
            for i in 1..<6 { #expect(!m[ox + i, oy + 1] && !m[ox + 1, oy + i]) }
            for y in 2..<5 { for x in 2..<5 { #expect(m[ox + x, oy + y]) } }
        }
        // Separators are light.
        #expect(!m[7, 7] && !m[n - 8, 7] && !m[7, n - 8])
        // Timing patterns alternate along row 6 and column 6, dark on even indices.
        for i in 8..<(n - 8) {
            #expect(m[i, 6] == (i % 2 == 0))
            #expect(m[6, i] == (i % 2 == 0))
        }
        // The "dark module" next to the bottom-left finder.
        #expect(m[8, n - 8])
    }
}

@Test("QRMatrix built from modules compares by value")
func matrixValueSemantics() throws {
    let a = try QREncoder.encode("same")
    let b = try QREncoder.encode(Array("same".utf8))
    #expect(a == b)
    #expect(a != (try QREncoder.encode("same", level: .H)))
    let rebuilt = QRMatrix(
        version: a.version, level: a.level, size: a.size,
        modules: (0..<a.size * a.size).map { a[$0 % a.size, $0 / a.size] })
    #expect(rebuilt == a)
}

// MARK: - Helpers shared with QRRendererTests

let qrencodePath = "/usr/bin/qrencode"
let zbarimgPath = "/usr/bin/zbarimg"

struct ToolOutput {
    var stdout: [UInt8]
    var status: Int32
}

/// Runs an installed tool and collects its stdout; stderr is discarded (zbarimg prints D-Bus
/// noise there in containers). A missing tool fails the test with the fix in the message.
func runTool(_ path: String, _ arguments: [String]) throws -> ToolOutput {
    try #require(
        FileManager.default.isExecutableFile(atPath: path),
        "\(path) is missing: the project's bootstrap installs it (apt-get install qrencode zbar-tools)")
    let run = try Tools.runInstalled(path, arguments)
    return ToolOutput(stdout: run.stdout, status: run.status)
}

/// Renders `matrix` as a PNG, has zbarimg decode it in binary mode and returns the bytes.
func zbarDecode(_ matrix: QRMatrix, moduleSize: Int = 4, margin: Int = 4) throws -> [UInt8] {
    let png = try QRRenderer.png(matrix, moduleSize: moduleSize, margin: margin)
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("starline-qr-\(UUID().uuidString).png")
    try Data(png).write(to: url)
    defer { try? FileManager.default.removeItem(at: url) }
    // --raw: data only; -Sbinary: no character-set guessing and no trailing newline.
    let output = try runTool(zbarimgPath, ["-q", "--raw", "-Sbinary", url.path])
    try #require(output.status == 0, "zbarimg found no symbol (exit \(output.status))")
    return output.stdout
}

/// The modules of `qrencode -t ASCII -m 0` output (`##` dark, two spaces light), one string
/// per row in the notation of `moduleRows`.
func parseQrencodeASCII(_ output: [UInt8]) throws -> [String] {
    let text = String(decoding: output, as: UTF8.self)
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(Array.init)
    if lines.last?.isEmpty == true { lines.removeLast() }
    return try lines.map { line in
        try #require(line.count % 2 == 0, "odd qrencode line width")
        return String(stride(from: 0, to: line.count, by: 2).map { line[$0] == "#" ? "#" : "." })
    }
}

/// One string per module row, `#` dark and `.` light: short, readable failure messages.
func moduleRows(_ m: QRMatrix) -> [String] {
    (0..<m.size).map { y in String((0..<m.size).map { x in m[x, y] ? "#" : "." }) }
}
