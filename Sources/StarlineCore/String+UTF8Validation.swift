extension String {
    /// `bytes` as a String when they are well-formed UTF-8 (The Unicode Standard, Table 3-7: no overlong
    /// forms, no surrogates, nothing above U+10FFFF), else nil — the answer `String(validating:as: UTF8.self)`
    /// gives.
    ///
    /// Why not that initialiser: it is generic and not inlinable, so every call instantiates generic metadata
    /// at run time (`swift_getGenericMetadata` and its locks). In the JSON parser, where every string of every
    /// document goes through it, that was a tenth of `sl-chat sync`'s CPU (perf, 100,000 messages). Here the
    /// bytes are checked by a plain loop (eight ASCII bytes at a time), and `String(decoding:as:)` — which
    /// repairs nothing, as there is nothing to repair — makes the string.
    public init?(utf8Validating bytes: UnsafeBufferPointer<UInt8>) {
        guard String.isWellFormedUTF8(bytes) else { return nil }
        self = String(decoding: bytes, as: UTF8.self)
    }

    /// See `init?(utf8Validating:)`.
    public init?(utf8Validating bytes: [UInt8]) {
        guard let s = bytes.withUnsafeBufferPointer({ String(utf8Validating: $0) }) else { return nil }
        self = s
    }

    /// See `init?(utf8Validating:)`.
    public init?(utf8Validating bytes: ArraySlice<UInt8>) {
        guard let s = bytes.withUnsafeBufferPointer({ String(utf8Validating: $0) }) else { return nil }
        self = s
    }

    /// Whether `b` is well-formed UTF-8 (Table 3-7).
    public static func isWellFormedUTF8(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = b.count
        var i = 0
        while i < n {
            if let base = b.baseAddress, i + 8 <= n,
                UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0
            {
                i += 8
                continue
            }
            let c = b[i]
            if c < 0x80 {
                i += 1
            } else if c < 0xC2 {
                return false  // a continuation byte first, or an overlong two-byte form
            } else if c < 0xE0 {
                guard i + 1 < n, b[i + 1] & 0xC0 == 0x80 else { return false }
                i += 2
            } else if c < 0xF0 {
                guard i + 2 < n else { return false }
                let lower: UInt8 = c == 0xE0 ? 0xA0 : 0x80  // E0: no overlong forms
                let upper: UInt8 = c == 0xED ? 0x9F : 0xBF  // ED: no surrogates
                guard (lower...upper).contains(b[i + 1]), b[i + 2] & 0xC0 == 0x80 else { return false }
                i += 3
            } else if c < 0xF5 {
                guard i + 3 < n else { return false }
                let lower: UInt8 = c == 0xF0 ? 0x90 : 0x80  // F0: no overlong forms
                let upper: UInt8 = c == 0xF4 ? 0x8F : 0xBF  // F4: nothing above U+10FFFF
                guard (lower...upper).contains(b[i + 1]), b[i + 2] & 0xC0 == 0x80, b[i + 3] & 0xC0 == 0x80 else { return false }
                i += 4
            } else {
                return false
            }
        }
        return true
    }
}

/// Where the plain part of a JSON string's bytes ends: the parser, the workspace scanner and the serialiser
/// all walk strings byte by byte, and most bytes of most strings are printable ASCII that none of them acts on.
public enum JSONStringBytes {
    /// The index of the first byte at or after `start` that is not printable ASCII other than `"` and `\`
    /// (outside 0x20–0x7E, or a quote, or a backslash); `p.count` when there is none. Eight bytes at a time
    /// (SWAR: a byte below 0x20, a byte with its high bit, or a byte equal to `"`, `\` or DEL anywhere in the
    /// word sends the word to the byte loop, which finds which).
    @inline(__always)
    public static func plainEnd(_ p: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var i = start
        let n = p.count
        if let base = p.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while i + 8 <= n {
                let x = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
                let below20 = (x &- ones &* 0x20) & ~x & highs
                let y = x ^ (ones &* 0x22), z = x ^ (ones &* 0x5C), d = x ^ (ones &* 0x7F)
                let equal = ((y &- ones) & ~y | (z &- ones) & ~z | (d &- ones) & ~d) & highs
                if (x & highs) | below20 | equal != 0 { break }
                i += 8
            }
        }
        while i < n {
            let c = p[i]
            if c < 0x20 || c >= 0x7F || c == 0x22 || c == 0x5C { return i }
            i += 1
        }
        return n
    }
}
