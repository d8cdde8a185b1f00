import CQREncode
import StarlineQR
import StarlineTestSupport
import Testing

/// The ported mode split (QRSegmentSplit) and mask choice (QRMaskChoice) give, module for module, the symbol
/// libqrencode gives for the same payload by itself — `QRcode_encodeString` (what qrencode(1) calls),
/// `QRcode_encodeData`, and an ECI input through `QRcode_encodeInput` — on thousands of seeded payloads
/// made to hit the split's branches (digit and upper-case runs inside text, at the edges, long and short)
/// at every level and version 1–40.
@Suite struct QRMaskChoiceTests {
    /// libqrencode's own symbol: version and dark modules.
    static func reference(_ code: UnsafeMutablePointer<QRcode>?) -> (version: Int, rows: [String])? {
        guard let code else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let rows = (0..<width).map { y in String((0..<width).map { x in code.pointee.data[y * width + x] & 1 == 1 ? "#" : "." }) }
        return (Int(code.pointee.version), rows)
    }

    static func cLevel(_ level: QRErrorCorrection) -> QRecLevel {
        switch level {
        case .L: QR_ECLEVEL_L
        case .M: QR_ECLEVEL_M
        case .Q: QR_ECLEVEL_Q
        case .H: QR_ECLEVEL_H
        }
    }

    /// Text that switches modes often: pieces of digits, upper case, URL characters and lower case.
    static func mixedText(seed: UInt64, length: Int) -> [UInt8] {
        let pools: [[UInt8]] = [
            Array("0123456789".utf8), Array("ABCDEFXYZ $%*+-./:".utf8), Array("abcxyz/?=&_~".utf8),
            Array("https://chat.thestarline.cn/f/".utf8)
        ]
        let noise = SeededRandom.bytes(count: length * 2 + 8, seed: seed)
        var text: [UInt8] = [], i = 0
        while text.count < length {
            let pool = pools[Int(noise[i % noise.count]) % pools.count]
            let run = 1 + Int(noise[(i + 1) % noise.count]) % 12
            for j in 0..<run { text.append(pool[(Int(noise[(i + j + 2) % noise.count]) + j) % pool.count]) }
            i += 3
        }
        return Array(text.prefix(length))
    }

    @Test("ASCII: the same modules as QRcode_encodeString, for 2,400 mixed payloads at every level and minimum version")
    func asciiMatchesLibqrencode() throws {
        var compared = 0
        for n in 0..<2_400 {
            let level = QRErrorCorrection.allCases[n % 4]
            let length = n < 2_000 ? 1 + n % 160 : 200 + (n * 37) % 1_200
            let minVersion = 1 + (n / 4) % 6
            let text = Self.mixedText(seed: UInt64(n), length: length)
            let theirs = (text + [0]).withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) {
                    QRcode_encodeString($0.baseAddress, Int32(minVersion), Self.cLevel(level), QR_MODE_8, 1)
                }
            }
            guard let reference = Self.reference(theirs) else { continue }
            let ours = try QREncoder.encode(text, level: level, minVersion: minVersion)
            #expect(
                ours.version == reference.version && moduleRows(ours) == reference.rows,
                "\(String(decoding: text, as: UTF8.self).debugDescription) at \(level), min version \(minVersion)")
            compared += 1
        }
        #expect(compared > 2_300)
    }

    @Test("binary and UTF-8 with ECI: the same modules as QRcode_encodeData and QRcode_encodeInput")
    func binaryAndECIMatchLibqrencode() throws {
        for n in 0..<400 {
            let level = QRErrorCorrection.allCases[n % 4]
            var binary = SeededRandom.bytes(count: 1 + n % 120, seed: UInt64(10_000 + n))
            binary[0] = 0  // a NUL makes it binary
            let data = binary.withUnsafeBufferPointer { QRcode_encodeData(Int32($0.count), $0.baseAddress, 1, Self.cLevel(level)) }
            let reference = try #require(Self.reference(data))
            let ours = try QREncoder.encode(binary, level: level)
            #expect(ours.version == reference.version && moduleRows(ours) == reference.rows, "binary #\(n) at \(level)")

            let text = Array("星线 \(n) héllo wörld ".utf8) + Self.mixedText(seed: UInt64(n), length: n % 60)
            let input = try #require(QRinput_new2(1, Self.cLevel(level)))
            defer { QRinput_free(input) }
            #expect(QRinput_appendECIheader(input, 26) == 0)
            #expect(text.withUnsafeBufferPointer { QRinput_append(input, QR_MODE_8, Int32($0.count), $0.baseAddress) } == 0)
            let eci = try #require(Self.reference(QRcode_encodeInput(input)))
            let oursECI = try QREncoder.encode(text, level: level)
            #expect(oursECI.version == eci.version && moduleRows(oursECI) == eci.rows, "UTF-8 #\(n) at \(level)")
        }
    }
}
