import StarlineCrypto

/// Version 4 UUIDs from libsodium's CSPRNG, lowercase (the id style of sl-tasks).
enum NoteID {
    static func make() -> String {
        var b = Sodium.randomBytes(16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        return format(b)
    }

    static func format(_ b: [UInt8]) -> String {
        let hex = Hex.encode(b)
        let u = Array(hex.utf8)
        return String(decoding: u[0..<8], as: UTF8.self) + "-" + String(decoding: u[8..<12], as: UTF8.self) + "-"
            + String(decoding: u[12..<16], as: UTF8.self) + "-" + String(decoding: u[16..<20], as: UTF8.self) + "-"
            + String(decoding: u[20..<32], as: UTF8.self)
    }

    /// The 16 bytes of a canonical UUID, nil for anything else.
    static func bytes(_ id: String) -> [UInt8]? {
        let compact = id.filter { $0 != "-" }
        guard id.utf8.count == 36, compact.utf8.count == 32, let b = Hex.decode(compact), format(b) == id.lowercased() else { return nil }
        return b
    }

    /// True when `prefix` could start an id: hex digits and dashes only (so it is safe in a LIKE pattern).
    static func isPlausiblePrefix(_ prefix: String) -> Bool {
        !prefix.isEmpty && prefix.utf8.count <= 36
            && prefix.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || ($0 >= 65 && $0 <= 70) || $0 == 45 }
    }
}
