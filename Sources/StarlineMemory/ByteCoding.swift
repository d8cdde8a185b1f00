import StarlineCore
import StarlineCrypto

/// The binary encoding of the vault's sealed payloads and header: little-endian integers, and byte strings
/// and UTF-8 strings prefixed with their u32 length. Binary rather than JSON so keys inside a payload are
/// never turned into Swift strings (which cannot be wiped) and a 10,000-entry manifest parses in a
/// millisecond.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { integer(UInt64(v), 2) }
    mutating func u32(_ v: UInt32) { integer(UInt64(v), 4) }
    mutating func u64(_ v: UInt64) { integer(v, 8) }
    mutating func i64(_ v: Int64) { integer(UInt64(bitPattern: v), 8) }

    /// Fixed-length bytes, without a length (the reader knows the length).
    mutating func raw(_ v: [UInt8]) { bytes.append(contentsOf: v) }
    mutating func raw(_ v: UnsafeRawBufferPointer) { bytes.append(contentsOf: v) }

    /// Length-prefixed bytes.
    mutating func data(_ v: [UInt8]) {
        u32(UInt32(v.count))
        bytes.append(contentsOf: v)
    }

    mutating func string(_ v: String) { data(Array(v.utf8)) }

    private mutating func integer(_ v: UInt64, _ count: Int) {
        for i in 0..<count { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }

    /// Zeroes the buffer (it may have held a key).
    mutating func wipe() { Sodium.wipe(&bytes) }
}

/// Reads what `ByteWriter` wrote. Every read is bounds-checked: a short or malformed payload throws
/// `Malformed`, which the caller turns into VAULT_CORRUPT naming what it was reading.
struct ByteReader {
    struct Malformed: Error {}

    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }
    var remaining: Int { bytes.count - offset }

    mutating func u8() throws(Malformed) -> UInt8 { UInt8(try integer(1)) }
    mutating func u16() throws(Malformed) -> UInt16 { UInt16(try integer(2)) }
    mutating func u32() throws(Malformed) -> UInt32 { UInt32(try integer(4)) }
    mutating func u64() throws(Malformed) -> UInt64 { try integer(8) }
    mutating func i64() throws(Malformed) -> Int64 { Int64(bitPattern: try integer(8)) }

    mutating func raw(_ count: Int) throws(Malformed) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw Malformed() }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Length-prefixed bytes of at most `limit` bytes.
    mutating func data(limit: Int = 1 << 30) throws(Malformed) -> [UInt8] {
        let count = Int(try u32())
        guard count <= limit else { throw Malformed() }
        return try raw(count)
    }

    /// A length-prefixed string that must be valid UTF-8.
    mutating func string(limit: Int = 1 << 30) throws(Malformed) -> String {
        let utf8 = try data(limit: limit)
        guard let text = String(validating: utf8, as: UTF8.self) else { throw Malformed() }
        return text
    }

    /// A count of items that each take at least `minimumItemBytes`: refused when the payload cannot hold
    /// that many, so a damaged count cannot make us reserve gigabytes.
    mutating func count(minimumItemBytes: Int) throws(Malformed) -> Int {
        let n = Int(try u32())
        guard n <= remaining / max(minimumItemBytes, 1) else { throw Malformed() }
        return n
    }

    func expectEnd() throws(Malformed) { if !isAtEnd { throw Malformed() } }

    private mutating func integer(_ count: Int) throws(Malformed) -> UInt64 {
        guard count <= remaining else { throw Malformed() }
        var v: UInt64 = 0
        for i in 0..<count { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        offset += count
        return v
    }
}

/// Hex for ids and hashes (lowercase).
enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let hi = value(utf8[i]), let lo = value(utf8[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 97...102: c - 87
        case 65...70: c - 55
        default: nil
        }
    }
}
