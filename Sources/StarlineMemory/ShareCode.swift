import StarlineCore
import StarlineCrypto

/// The share code of an export: 24 Crockford base32 characters (120 random bits) in groups of four. It is the
/// age passphrase, so `age -d` opens the file with it.
public enum ShareCode {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    public static func generate() -> String {
        var bits = Sodium.randomBytes(15)
        defer { Sodium.wipe(&bits) }
        var characters: [Character] = []
        for i in 0..<24 {
            let bit = i * 5
            let word = (UInt16(bits[bit / 8]) << 8) | UInt16(bit / 8 + 1 < bits.count ? bits[bit / 8 + 1] : 0)
            characters.append(alphabet[Int((word >> (11 - UInt16(bit % 8))) & 0x1F)])
            if i % 4 == 3 && i < 23 { characters.append("-") }
        }
        return String(characters)
    }

    /// What a person typed: spaces dropped, upper case, the dashes put back into a bare 24-character code.
    public static func normalize(_ text: String) -> String {
        let compact = text.uppercased().filter { !$0.isWhitespace }
        guard !compact.contains("-"), compact.count == 24 else { return compact }
        var out = ""
        for (i, c) in compact.enumerated() {
            if i > 0 && i % 4 == 0 { out.append("-") }
            out.append(c)
        }
        return out
    }
}
