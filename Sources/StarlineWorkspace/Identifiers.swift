import StarlineCore

/// Version 4 UUIDs, lowercase: the stable ids of tasks and sites.
public enum RandomUUID {
    /// 16 random bytes (the standard library's system generator reads `getrandom(2)`, the kernel's
    /// CSPRNG, the same source as /dev/urandom), with the version and variant bits of RFC 9562 v4.
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: 16)
        let a = generator.next() as UInt64, b = generator.next() as UInt64
        for i in 0..<8 {
            bytes[i] = UInt8(truncatingIfNeeded: a >> (8 * i))
            bytes[8 + i] = UInt8(truncatingIfNeeded: b >> (8 * i))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return format(bytes)
    }

    static func format(_ bytes: [UInt8]) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The name-based UUID (version 5, RFC 9562 section 5.5: SHA-1 of a namespace and a name) of a record id
    /// from another program: the same foreign id gives the same UUID on every import, so a re-import
    /// updates the record it added instead of adding it again.
    public static func derived(fromForeignID name: String) -> String {
        var input = foreignNamespace
        input.append(contentsOf: Array(name.utf8))
        var bytes = Array(SHA1.digest(input).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return format(bytes)
    }

    /// The namespace of foreign ids, a UUID of our own (6f1d0c8e-53a5-4b0e-9b7e-2a1c5d3e4f60).
    static let foreignNamespace: [UInt8] = [0x6f, 0x1d, 0x0c, 0x8e, 0x53, 0xa5, 0x4b, 0x0e, 0x9b, 0x7e, 0x2a, 0x1c, 0x5d, 0x3e, 0x4f, 0x60]

    /// True for the canonical textual form `8-4-4-4-12` hex digits (any version, either case).
    public static func isValid(_ s: String) -> Bool {
        let b = Array(s.utf8)
        guard b.count == 36 else { return false }
        for (i, c) in b.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if c != UInt8(ascii: "-") { return false }
            } else if !((c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70)) {
                return false
            }
        }
        return true
    }
}

/// Finds a record by its id or a unique prefix of it (case-insensitive, like git).
public enum IDPrefix {
    public enum Match: Equatable {
        case found(Int)
        case none
        case ambiguous([Int])
    }

    /// An exact id wins over prefixes; otherwise exactly one id must start with `prefix`.
    public static func match(_ prefix: String, in ids: [String?]) -> Match {
        let p = prefix.lowercased()
        guard !p.isEmpty else { return .none }
        if let exact = ids.firstIndex(where: { $0?.lowercased() == p }) { return .found(exact) }
        let hits = ids.indices.filter { ids[$0]?.lowercased().hasPrefix(p) == true }
        switch hits.count {
        case 0: return .none
        case 1: return .found(hits[0])
        default: return .ambiguous(hits)
        }
    }
}

/// SHA-1 (FIPS 180-4), only for name-based UUIDs (RFC 9562 prescribes it there; it is no security measure).
enum SHA1 {
    static func digest(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0]
        var data = message
        let bitLength = UInt64(message.count) &* 8
        data.append(0x80)
        while data.count % 64 != 56 { data.append(0) }
        for i in (0..<8).reversed() { data.append(UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(i)))) }
        var w = [UInt32](repeating: 0, count: 80)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            for t in 0..<16 {
                w[t] =
                    UInt32(data[chunk + 4 * t]) << 24 | UInt32(data[chunk + 4 * t + 1]) << 16
                    | UInt32(data[chunk + 4 * t + 2]) << 8 | UInt32(data[chunk + 4 * t + 3])
            }
            for t in 16..<80 { w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1) }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for t in 0..<80 {
                let (f, k): (UInt32, UInt32) =
                    switch t {
                    case 0..<20: ((b & c) | (~b & d), 0x5A827999)
                    case 20..<40: (b ^ c ^ d, 0x6ED9EBA1)
                    case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1BBCDC)
                    default: (b ^ c ^ d, 0xCA62C1D6)
                    }
                let temp = rotl(a, 5) &+ f &+ e &+ k &+ w[t]
                (e, d, c, b, a) = (d, c, rotl(b, 30), a, temp)
            }
            h[0] = h[0] &+ a; h[1] = h[1] &+ b; h[2] = h[2] &+ c; h[3] = h[3] &+ d; h[4] = h[4] &+ e
        }
        return h.flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32($0))) } }
    }

    @inline(__always) static func rotl(_ x: UInt32, _ n: UInt32) -> UInt32 { x << n | x >> (32 - n) }
}
