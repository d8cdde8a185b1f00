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
/// so each byte string has exactly one encoding. Table-driven over contiguous bytes: the armor of a large
/// file goes through here 48 bytes a line.
enum AgeBase64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    /// The 6-bit value of each byte, or 0xFF for bytes outside the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    /// Unpadded (the header) encoding of `bytes`, as ASCII bytes.
    static func encode(_ bytes: [UInt8]) -> [UInt8] { encode(bytes[...], padded: false) }

    /// Padded (the armor) encoding of `bytes`, as ASCII bytes.
    static func encodePadded(_ bytes: ArraySlice<UInt8>) -> [UInt8] { encode(bytes, padded: true) }
    static func encodePadded(_ bytes: [UInt8]) -> [UInt8] { encode(bytes[...], padded: true) }

    private static func encode(_ bytes: ArraySlice<UInt8>, padded: Bool) -> [UInt8] {
        let rest = bytes.count % 3
        let count = bytes.count / 3 * 4 + (rest == 0 ? 0 : padded ? 4 : rest + 1)
        return [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
            alphabet.withUnsafeBufferPointer { a in
                bytes.withUnsafeBufferPointer { b in
                    var i = 0, o = 0
                    while i + 3 <= b.count {
                        let n = UInt32(b[i]) << 16 | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2])
                        out[o] = a[Int(n >> 18)]
                        out[o + 1] = a[Int(n >> 12 & 63)]
                        out[o + 2] = a[Int(n >> 6 & 63)]
                        out[o + 3] = a[Int(n & 63)]
                        i += 3
                        o += 4
                    }
                    if rest > 0 {
                        let n = UInt32(b[i]) << 16 | (rest == 2 ? UInt32(b[i + 1]) << 8 : 0)
                        out[o] = a[Int(n >> 18)]
                        out[o + 1] = a[Int(n >> 12 & 63)]
                        o += 2
                        if rest == 2 { out[o] = a[Int(n >> 6 & 63)]; o += 1 }
                        while padded, o < count { out[o] = UInt8(ascii: "="); o += 1 }
                    }
                }
            }
            initialized = count
        }
    }

    /// Decodes the header's unpadded base64; nil for anything non-canonical, including `=`.
    static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        // A single leftover character carries 6 bits: less than a byte, never produced by an encoder.
        guard text.count % 4 != 1 else { return nil }
        return decodeCanonical(text)
    }

    static func decode(_ text: [UInt8]) -> [UInt8]? { decode(text[...]) }

    /// Decodes padded base64 (a whole number of 4-character groups, with one or two `=` only at the end);
    /// nil when it is not the canonical encoding of its bytes.
    static func decodePadded(_ text: [UInt8]) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        var body = text[...]
        var padding = 0
        while padding < 2, body.last == UInt8(ascii: "=") {
            body = body.dropLast()
            padding += 1
        }
        // "ab==" leaves 2 characters of its group, "abc=" leaves 3; an `=` anywhere else fails the alphabet.
        guard padding == 0 || body.count % 4 == 4 - padding else { return nil }
        return decodeCanonical(body)
    }

    /// Decodes characters of the standard alphabet without padding, requiring zero pad bits.
    private static func decodeCanonical(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        let count = text.count / 4 * 3 + Swift.max(text.count % 4 - 1, 0)
        var valid = true
        let out = [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
            values.withUnsafeBufferPointer { v in
                text.withUnsafeBufferPointer { t in
                    var accumulator: UInt32 = 0
                    var bits: UInt32 = 0
                    var o = 0
                    for c in t {
                        let value = v[Int(c)]
                        if value == 0xFF { valid = false; return }
                        accumulator = accumulator << 6 | UInt32(value)
                        bits += 6
                        if bits >= 8 {
                            bits -= 8
                            out[o] = UInt8(truncatingIfNeeded: accumulator >> bits)
                            o += 1
                            accumulator &= (1 << bits) - 1
                        }
                    }
                    // Left over: 0, 2 or 4 bits that must all be zero to be canonical.
                    valid = accumulator == 0
                }
            }
            initialized = valid ? count : 0
        }
        return valid ? out : nil
    }

    /// Whether `c` is in the standard alphabet (a header body line may contain nothing else).
    static func isAlphabet(_ c: UInt8) -> Bool { values[Int(c)] != 0xFF }
}
