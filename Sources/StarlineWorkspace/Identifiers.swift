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
