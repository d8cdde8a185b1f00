import StarlineCore

/// Windows bitmaps (`BM`): the OS/2 core header (12 bytes) and the Windows headers of 40 to 124 bytes;
/// 1, 4 and 8 bits a pixel through the palette, 16, 24 and 32 bits direct (`BI_RGB`, or the channel masks of
/// `BI_BITFIELDS`/`BI_ALPHA_BITFIELDS`); rows bottom-up (positive height) or top-down (negative). Colour becomes
/// Rec. 601 luminance as in `PNMReader`; an alpha channel (a 32-bit image whose masks name one) is composed
/// over white, as PNG's is. Run-length and embedded JPEG/PNG bitmaps are refused with a conversion hint.
enum BMPReader {
    static func decode(_ bytes: [UInt8], limits: DecodeLimits) throws -> GrayImage {
        func corrupt(_ reason: String) -> StarlineError { limits.corrupt(.bmp, reason) }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> UInt32 {
            UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
        }
        guard bytes.count >= 26 else { throw corrupt("truncated header") }
        let dataOffset = Int(u32(10))
        let headerSize = Int(u32(14))
        guard [12, 16, 40, 52, 56, 64, 108, 124].contains(headerSize) else { throw corrupt("unknown header size \(headerSize)") }
        guard bytes.count >= 14 + headerSize else { throw corrupt("truncated header") }
        let width: Int, signedHeight: Int, planes: Int, bitCount: Int
        var compression: UInt32 = 0
        var colorsUsed = 0
        if headerSize == 12 {
            width = u16(18)
            signedHeight = u16(20)
            planes = u16(22)
            bitCount = u16(24)
        } else {
            width = Int(Int32(bitPattern: u32(18)))
            signedHeight = Int(Int32(bitPattern: u32(22)))
            planes = u16(26)
            bitCount = u16(28)
            if headerSize >= 20 { compression = u32(30) }
            if headerSize >= 36 { colorsUsed = Int(u32(46)) }
        }
        guard planes == 1 else { throw corrupt("\(planes) planes (1 expected)") }
        // A negative height means rows top-down; Int32.min has no positive counterpart.
        guard width > 0, signedHeight != 0, signedHeight != Int(Int32.min) else { throw corrupt("zero or negative size") }
        let height = abs(signedHeight)
        let topDown = signedHeight < 0
        guard [1, 4, 8, 16, 24, 32].contains(bitCount) else { throw corrupt("\(bitCount) bits a pixel") }

        // BI_RGB 0, BI_RLE8 1, BI_RLE4 2, BI_BITFIELDS 3, BI_JPEG 4, BI_PNG 5, BI_ALPHA_BITFIELDS 6.
        // OS/2 2.x headers (16 and 64 bytes) number their compressions otherwise (3 is Huffman 1D).
        if headerSize == 16 || headerSize == 64, compression != 0 {
            throw corrupt("OS/2 compression \(compression) is not read: convert it to PNG first (ImageMagick: convert IMAGE out.png)")
        }
        let masks: (r: UInt32, g: UInt32, b: UInt32, a: UInt32)
        switch (compression, bitCount) {
        case (0, 16): masks = (0x7C00, 0x03E0, 0x001F, 0)
        case (0, 32): masks = (0x00FF_0000, 0x0000_FF00, 0x0000_00FF, 0)
        case (0, _): masks = (0, 0, 0, 0)
        case (3, 16), (3, 32), (6, 16), (6, 32):
            // The masks follow a 40-byte header, or are part of the longer ones.
            let at = 14 + 40
            guard bytes.count >= at + (compression == 6 ? 16 : 12) else { throw corrupt("truncated channel masks") }
            masks = (u32(at), u32(at + 4), u32(at + 8), compression == 6 || headerSize >= 56 ? u32(at + 12) : 0)
        case (1, _), (2, _):
            throw corrupt("run-length compressed bitmaps are not read: convert it to PNG first (ImageMagick: convert IMAGE out.png)")
        default:
            throw corrupt("compression \(compression) with \(bitCount) bits a pixel is not read: convert it to PNG first")
        }
        try limits.check(width: width, height: height)

        var palette: [UInt8] = []  // luminance of each entry
        if bitCount <= 8 {
            let entrySize = headerSize == 12 ? 3 : 4
            let at = 14 + headerSize
            // The declared count (all 2^n when none is), but no more than fit before the pixels: writers of the
            // OS/2 core header, which declares none, write only the entries they use.
            var entries = colorsUsed == 0 ? 1 << bitCount : colorsUsed
            guard entries <= 1 << bitCount else { throw corrupt("\(entries) palette entries for \(bitCount) bits a pixel") }
            if dataOffset > at { entries = min(entries, (dataOffset - at) / entrySize) }
            guard entries > 0, bytes.count >= at + entries * entrySize else { throw corrupt("truncated palette") }
            palette = (0..<entries).map { i in
                let p = at + i * entrySize
                return Luminance.of(Int(bytes[p + 2]), Int(bytes[p + 1]), Int(bytes[p]))
            }
        }
        // Rows are padded to 4 bytes. width ≤ maxPixels, so this cannot overflow.
        let rowBytes = (width * bitCount + 31) / 32 * 4
        guard dataOffset >= 14 + headerSize, dataOffset <= bytes.count else {
            throw corrupt("pixel data offset \(dataOffset) outside the file")
        }
        guard bytes.count - dataOffset >= rowBytes * height else {
            throw corrupt("truncated pixel data (expected \(rowBytes * height) bytes, got \(bytes.count - dataOffset))")
        }
        let channels = [masks.r, masks.g, masks.b, masks.a].map(Channel.init)
        var pixels = [UInt8](repeating: 255, count: width * height)
        try bytes.withUnsafeBufferPointer { b in
            try pixels.withUnsafeMutableBufferPointer { out in
                for row in 0..<height {
                    let y = topDown ? row : height - 1 - row
                    let start = dataOffset + row * rowBytes
                    for x in 0..<width {
                        let value: UInt8
                        switch bitCount {
                        case 1, 4, 8:
                            let bit = x * bitCount
                            let index = Int(b[start + bit / 8] >> UInt8(8 - bitCount - bit % 8)) & (1 << bitCount - 1)
                            guard index < palette.count else { throw corrupt("palette index \(index) past its \(palette.count) entries") }
                            value = palette[index]
                        case 24:
                            let p = start + 3 * x
                            value = Luminance.of(Int(b[p + 2]), Int(b[p + 1]), Int(b[p]))
                        default:
                            let p = start + x * bitCount / 8
                            var word = UInt32(b[p]) | UInt32(b[p + 1]) << 8
                            if bitCount == 32 { word |= UInt32(b[p + 2]) << 16 | UInt32(b[p + 3]) << 24 }
                            let gray = Luminance.of(channels[0].value(word), channels[1].value(word), channels[2].value(word))
                            value = channels[3].mask == 0 ? gray : Luminance.overWhite(gray, alpha: channels[3].value(word))
                        }
                        out[y * width + x] = value
                    }
                }
            }
        }
        return GrayImage(width: width, height: height, pixels: pixels)
    }

    /// One channel of a bitfield pixel, scaled to 0…255.
    struct Channel {
        let mask: UInt32
        let shift: UInt32
        let maximum: UInt32

        init(_ mask: UInt32) {
            self.mask = mask
            shift = mask == 0 ? 0 : UInt32(mask.trailingZeroBitCount)
            maximum = mask == 0 ? 0 : mask >> shift
        }

        func value(_ word: UInt32) -> Int {
            guard maximum > 0 else { return 0 }
            return Int((UInt64((word & mask) >> shift) * 255 + UInt64(maximum) / 2) / UInt64(maximum))
        }
    }
}
