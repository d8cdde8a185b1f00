/// Netpbm bitmaps `P4`/`P1` (PBM, raw/plain; 1 is black), gray and colour maps: `P5`/`P2` (PGM, raw/plain) and `P6`/`P3` (PPM, raw/plain),
/// maxval 1…65535 (two big-endian bytes per raw sample above 255). Only the first image of
/// a multi-image file is read. Colour becomes Rec. 601 luminance, as libjpeg computes it.
enum PNMReader {
    static func decode(_ bytes: [UInt8], limits: DecodeLimits) throws -> GrayImage {
        var parser = Parser(bytes: bytes, limits: limits)
        let kind = bytes[1]
        if kind == UInt8(ascii: "4") || kind == UInt8(ascii: "1") { return try decodeBitmap(&parser, raw: kind == UInt8(ascii: "4")) }
        let isColor = kind == UInt8(ascii: "3") || kind == UInt8(ascii: "6")
        let isRaw = kind == UInt8(ascii: "5") || kind == UInt8(ascii: "6")
        parser.position = 2

        let width = try parser.headerNumber("width")
        let height = try parser.headerNumber("height")
        let maxval = try parser.headerNumber("maxval")
        guard width > 0, height > 0 else { throw parser.corrupt("zero width or height") }
        guard (1...65535).contains(maxval) else { throw parser.corrupt("maxval \(maxval) is not in 1…65535") }
        try limits.check(width: width, height: height)

        let samplesPerPixel = isColor ? 3 : 1
        let sampleCount = width * height * samplesPerPixel
        var samples: [UInt8]
        if isRaw {
            // Exactly one whitespace character separates maxval from the raster (comments
            // are only allowed before it).
            guard parser.position < bytes.count, isWhitespace(bytes[parser.position]) else {
                throw parser.corrupt(parser.position < bytes.count ? "no whitespace after maxval" : "truncated header")
            }
            parser.position += 1
            samples = try parser.rawSamples(count: sampleCount, maxval: maxval)
        } else {
            samples = try parser.plainSamples(count: sampleCount, maxval: maxval)
        }

        guard isColor else { return GrayImage(width: width, height: height, pixels: samples) }
        var gray = [UInt8](repeating: 0, count: width * height)
        samples.withUnsafeBufferPointer { rgb in
            gray.withUnsafeMutableBufferPointer { out in
                for i in 0..<out.count {
                    out[i] = Luminance.of(Int(rgb[3 * i]), Int(rgb[3 * i + 1]), Int(rgb[3 * i + 2]))
                }
            }
        }
        samples = []
        return GrayImage(width: width, height: height, pixels: gray)
    }

    /// PBM: no maxval; raw rows are packed 8 pixels a byte (most significant bit first, each row padded
    /// to a whole byte), plain pixels are `0`/`1` characters with optional separators.
    private static func decodeBitmap(_ parser: inout Parser, raw: Bool) throws -> GrayImage {
        parser.position = 2
        let width = try parser.headerNumber("width")
        let height = try parser.headerNumber("height")
        guard width > 0, height > 0 else { throw parser.corrupt("zero width or height") }
        try parser.limits.check(width: width, height: height)
        var pixels = [UInt8](repeating: 255, count: width * height)
        let bytes = parser.bytes
        if raw {
            guard parser.position < bytes.count, isWhitespace(bytes[parser.position]) else { throw parser.corrupt("truncated header") }
            parser.position += 1
            let rowBytes = (width + 7) / 8
            let available = bytes.count - parser.position
            guard available >= rowBytes * height else {
                throw parser.corrupt("truncated pixel data (expected \(rowBytes * height) bytes, got \(available))")
            }
            let start = parser.position
            for y in 0..<height {
                for x in 0..<width where bytes[start + y * rowBytes + x / 8] & (0x80 >> UInt8(x % 8)) != 0 {
                    pixels[y * width + x] = 0
                }
            }
            return GrayImage(width: width, height: height, pixels: pixels)
        }
        for i in 0..<pixels.count {
            parser.skipSeparators()
            guard parser.position < bytes.count else {
                throw parser.corrupt("truncated pixel data (expected \(pixels.count) pixels, got \(i))")
            }
            switch bytes[parser.position] {
            case UInt8(ascii: "0"): break
            case UInt8(ascii: "1"): pixels[i] = 0
            default: throw parser.corrupt("expected 0 or 1 for a PBM pixel")
            }
            parser.position += 1
        }
        return GrayImage(width: width, height: height, pixels: pixels)
    }

    /// Netpbm whitespace: blank, TAB, CR, LF, VT, FF.
    static func isWhitespace(_ c: UInt8) -> Bool {
        c == 0x20 || (0x09...0x0D).contains(c)
    }

    private struct Parser {
        let bytes: [UInt8]
        let limits: DecodeLimits
        var position = 0

        init(bytes: [UInt8], limits: DecodeLimits) {
            self.bytes = bytes
            self.limits = limits
        }

        func corrupt(_ reason: String) -> Error { limits.corrupt(.pnm, reason) }

        /// Skips whitespace and `#` comments (to the end of the line).
        mutating func skipSeparators() {
            while position < bytes.count {
                let c = bytes[position]
                if isWhitespace(c) {
                    position += 1
                } else if c == UInt8(ascii: "#") {
                    while position < bytes.count, bytes[position] != 0x0A, bytes[position] != 0x0D { position += 1 }
                } else {
                    return
                }
            }
        }

        /// A decimal number, after separators; nil at end of data.
        mutating func number(_ what: String) throws -> Int? {
            skipSeparators()
            guard position < bytes.count else { return nil }
            var value = 0
            var digits = 0
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                value = value * 10 + Int(bytes[position] - UInt8(ascii: "0"))
                digits += 1
                position += 1
                if value > 1_000_000_000 { throw corrupt("\(what) is out of range") }
            }
            guard digits > 0 else { throw corrupt("expected a number for \(what)") }
            return value
        }

        mutating func headerNumber(_ what: String) throws -> Int {
            guard let n = try number(what) else { throw corrupt("truncated header (no \(what))") }
            return n
        }

        mutating func rawSamples(count: Int, maxval: Int) throws -> [UInt8] {
            let bytesPerSample = maxval > 255 ? 2 : 1
            let needed = count * bytesPerSample
            let available = bytes.count - position
            guard available >= needed else {
                throw corrupt("truncated pixel data (expected \(needed) bytes, got \(available))")
            }
            let start = position
            position += needed
            if maxval == 255 { return Array(bytes[start..<start + needed]) }
            var out = [UInt8](repeating: 0, count: count)
            try bytes.withUnsafeBufferPointer { src in
                for i in 0..<count {
                    let v =
                        bytesPerSample == 2
                        ? Int(src[start + 2 * i]) << 8 | Int(src[start + 2 * i + 1])
                        : Int(src[start + i])
                    guard v <= maxval else { throw corrupt("sample \(v) is over maxval \(maxval)") }
                    out[i] = Self.scale(v, maxval)
                }
            }
            return out
        }

        mutating func plainSamples(count: Int, maxval: Int) throws -> [UInt8] {
            var out = [UInt8](repeating: 0, count: count)
            for i in 0..<count {
                guard let v = try number("sample") else {
                    throw corrupt("truncated pixel data (expected \(count) samples, got \(i))")
                }
                guard v <= maxval else { throw corrupt("sample \(v) is over maxval \(maxval)") }
                out[i] = Self.scale(v, maxval)
            }
            return out
        }

        /// 0…maxval to 0…255, rounded.
        static func scale(_ v: Int, _ maxval: Int) -> UInt8 {
            UInt8((v * 255 + maxval / 2) / maxval)
        }
    }
}
