import StarlineCore
import StarlineTestSupport
import Testing

/// `String(utf8Validating:)` answers exactly what the standard library's `String(validating:as: UTF8.self)`
/// answers (Table 3-7 of The Unicode Standard), on every one- and two-byte sequence, on every lead byte with
/// every second byte of three- and four-byte forms, and on seeded random text with ASCII runs long enough for
/// the eight-byte fast path to meet a bad byte at every offset.
@Suite struct UTF8ValidationTests {
    func agrees(_ bytes: [UInt8]) -> Bool {
        String(utf8Validating: bytes) == String(validating: bytes, as: UTF8.self)
    }

    @Test("every one- and two-byte sequence")
    func shortSequences() {
        var wrong: [[UInt8]] = []
        for a in 0...255 {
            if !agrees([UInt8(a)]) { wrong.append([UInt8(a)]) }
            for b in 0...255 where !agrees([UInt8(a), UInt8(b)]) { wrong.append([UInt8(a), UInt8(b)]) }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
    }

    @Test("three- and four-byte forms: overlong, surrogates, above U+10FFFF, truncated")
    func longForms() {
        var wrong: [[UInt8]] = []
        for lead in 0xC0...0xFF {
            for second in 0x70...0xD0 {
                for tail: [UInt8] in [[], [0x80], [0xBF], [0x80, 0x80], [0xBF, 0x41], [0x80, 0x80, 0x80], [0xC0, 0x80, 0x80]] {
                    let bytes = [UInt8(lead), UInt8(second)] + tail
                    if !agrees(bytes) { wrong.append(bytes) }
                }
            }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
        #expect(String(utf8Validating: Array("héllo → 世界 🌍".utf8)) == "héllo → 世界 🌍")
        #expect(String(utf8Validating: [0xED, 0xA0, 0x80]) == nil, "a surrogate")
        #expect(String(utf8Validating: [0xF4, 0x90, 0x80, 0x80]) == nil, "above U+10FFFF")
        #expect(String(utf8Validating: [UInt8]()) == "")
    }

    @Test("random text with long ASCII runs: a bad byte at every offset of the eight-byte path")
    func randomText() {
        var random = SeededRandom(seed: 0x5EED)
        func next() -> UInt64 { random.next() }
        let pieces: [[UInt8]] = [Array("abcdefghij".utf8), Array("é".utf8), Array("世".utf8), Array("🌍".utf8), [0x80], [0xC3], [0xFF]]
        var wrong = 0
        for _ in 0..<20_000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int(next() % 6) { bytes += pieces[Int(next() % UInt64(pieces.count))] }
            bytes.insert(contentsOf: Array(repeating: UInt8(ascii: "x"), count: Int(next() % 17)), at: 0)
            if !agrees(bytes) || !agrees(Array(bytes.dropFirst())) { wrong += 1 }
        }
        #expect(wrong == 0)
    }

    @Test("JSONStringBytes.plainEnd finds the first byte a JSON string walker must look at, from every start")
    func plainEndMatchesAByteLoop() {
        var random = SeededRandom(seed: 0xBADC0DE)
        func next() -> UInt64 { random.next() }
        let special: [UInt8] = [0x00, 0x1F, 0x22, 0x5C, 0x7F, 0x80, 0xC3, 0xFF]
        var wrong = 0
        for _ in 0..<5_000 {
            var bytes = (0..<Int(next() % 40)).map { _ in UInt8(0x20 + next() % 0x5F) }
            if !bytes.isEmpty, next() % 4 != 0 { bytes[Int(next() % UInt64(bytes.count))] = special[Int(next() % 8)] }
            bytes.withUnsafeBufferPointer { p in
                for start in 0...p.count {
                    let naive = p[start...].firstIndex { $0 < 0x20 || $0 >= 0x7F || $0 == 0x22 || $0 == 0x5C } ?? p.count
                    if JSONStringBytes.plainEnd(p, from: start) != naive { wrong += 1 }
                }
            }
        }
        #expect(wrong == 0)
    }
}
