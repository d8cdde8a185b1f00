import StarlineCore

/// The two base64 dialects of age, both strict.
///
/// "The base64 encoding used throughout is the standard Base 64 encoding specified in RFC 4648, Section 4,
/// without `=` padding characters ... Encoders MUST generate canonical base64 according to RFC 4648,
/// Section 3.5, and decoders MUST reject non-canonical encodings and encodings ending with `=` padding
/// characters." The ASCII armor instead "employs base64 with `=` padding characters" (RFC 7468), and
/// implementations "SHOULD reject non-canonical ASCII armor encodings".
///
/// Canonical means: no character outside the standard alphabet, and the unused low bits of the last
/// character are zero (RFC 4648 section 3.5: "the pad bits MUST be set to zero by conforming encoders"),
/// so each byte string has exactly one encoding.
enum AgeBase64 {
    /// Unpadded (the header) encoding of `bytes`, as ASCII bytes.
    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        Array(Base64.encode(bytes).utf8.prefix { $0 != UInt8(ascii: "=") })
    }

    /// Padded (the armor) encoding of `bytes`, as ASCII bytes.
    static func encodePadded(_ bytes: some Collection<UInt8>) -> [UInt8] {
        Array(Base64.encode(Array(bytes)).utf8)
    }

    /// Decodes the header's unpadded base64; nil for anything non-canonical, including `=`.
    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        // A single leftover character carries 6 bits: less than a byte, never produced by an encoder.
        guard text.count % 4 != 1 else { return nil }
        return decodeCanonical(text)
    }

    /// Decodes padded base64 (a whole number of 4-character groups, with one or two `=` only at the end);
    /// nil when it is not the canonical encoding of its bytes.
    static func decodePadded(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        var body = Array(text)
        var padding = 0
        while padding < 2, body.last == UInt8(ascii: "=") {
            body.removeLast()
            padding += 1
        }
        // "ab==" leaves 2 characters, "abc=" leaves 3; any other padding is malformed (an `=` left inside
        // fails the alphabet check below).
        guard padding == 0 || body.count % 4 == 4 - padding else { return nil }
        return decodeCanonical(body)
    }

    /// Decodes characters of the standard alphabet without padding, requiring zero pad bits.
    private static func decodeCanonical(_ text: some Collection<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in text {
            guard let v = value(c) else { return nil }
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Left over: 0, 2 or 4 bits that must all be zero to be canonical.
        guard accumulator == 0 else { return nil }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }

    /// Whether `c` is in the standard alphabet (a header body line may contain nothing else).
    static func isAlphabet(_ c: UInt8) -> Bool { value(c) != nil }
}
