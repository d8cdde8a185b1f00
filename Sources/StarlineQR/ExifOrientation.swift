/// The orientation a phone records in a JPEG's Exif data (TIFF tag 0x0112 of IFD0, values 1–8) instead of
/// turning the pixels: a photo taken upright on its side is stored sideways with orientation 6. Applied after
/// decoding, so positions (`corners`) are those of the picture as every viewer shows it. Anything unexpected in
/// the Exif block (truncated, another byte order mark, a value outside 1–8) leaves the image as stored.
package enum ExifOrientation {
    /// The orientation of a JPEG datastream, 1 (as stored) when it has none.
    package static func of(jpeg bytes: [UInt8]) -> Int {
        var i = 2  // after SOI
        // Markers up to the first scan: APPn and others carry a two-byte big-endian length.
        while i + 4 <= bytes.count, bytes[i] == 0xFF {
            let marker = bytes[i + 1]
            if marker == 0xDA || marker == 0xD9 { break }  // start of scan, end of image
            let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            guard length >= 2, i + 2 + length <= bytes.count else { break }
            let segment = (i + 4)..<(i + 2 + length)
            if marker == 0xE1, segment.count > 14, ImageLoader.has(bytes, "Exif\0\0", at: segment.lowerBound) {
                return tiffOrientation(Array(bytes[(segment.lowerBound + 6)..<segment.upperBound])) ?? 1
            }
            i += 2 + length
        }
        return 1
    }

    /// Tag 0x0112 of IFD0 in a TIFF structure ("II*\0" or "MM\0*").
    static func tiffOrientation(_ t: [UInt8]) -> Int? {
        guard t.count >= 8 else { return nil }
        let little: Bool
        switch (t[0], t[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func u16(_ at: Int) -> Int? {
            guard at >= 0, at + 2 <= t.count else { return nil }
            return little ? Int(t[at]) | Int(t[at + 1]) << 8 : Int(t[at]) << 8 | Int(t[at + 1])
        }
        func u32(_ at: Int) -> Int? {
            guard let a = u16(at), let b = u16(at + 2) else { return nil }
            return little ? a | b << 16 : a << 16 | b
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
        for entry in 0..<count {
            let at = ifd + 2 + 12 * entry
            guard let tag = u16(at) else { return nil }
            // Type SHORT (3), count 1: the value sits in the first two bytes of the value field.
            if tag == 0x0112 {
                guard u16(at + 2) == 3, let value = u16(at + 8), (1...8).contains(value) else { return nil }
                return value
            }
        }
        return nil
    }

    /// `image` as a viewer shows it for `orientation` (Exif 2.3, tag 0x0112: where row 0 and column 0 of the
    /// stored image belong).
    static func apply(_ orientation: Int, to image: GrayImage) -> GrayImage {
        guard (2...8).contains(orientation) else { return image }
        let w = image.width, h = image.height
        let turned = orientation >= 5  // 5–8 swap rows and columns
        let ow = turned ? h : w, oh = turned ? w : h
        var out = [UInt8](repeating: 0, count: w * h)
        image.pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<oh {
                    for x in 0..<ow {
                        // The stored pixel shown at (x, y).
                        let (sx, sy): (Int, Int)
                        switch orientation {
                        case 2: (sx, sy) = (w - 1 - x, y)  // mirrored
                        case 3: (sx, sy) = (w - 1 - x, h - 1 - y)  // upside down
                        case 4: (sx, sy) = (x, h - 1 - y)  // mirrored vertically
                        case 5: (sx, sy) = (y, x)  // transposed
                        case 6: (sx, sy) = (y, h - 1 - x)  // stored turned 90° counter-clockwise: turn it clockwise
                        case 7: (sx, sy) = (w - 1 - y, h - 1 - x)  // transversed
                        default: (sx, sy) = (w - 1 - y, x)  // 8: stored turned 90° clockwise
                        }
                        dst[y * ow + x] = src[sy * w + sx]
                    }
                }
            }
        }
        return GrayImage(width: ow, height: oh, pixels: out)
    }
}
