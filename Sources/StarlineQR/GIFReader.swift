import StarlineCore

/// GIF (87a and 89a): the first image of the file, on its logical screen, as a browser shows the first frame of
/// an animation: global or local colour table, interlaced or not, the transparent colour of its graphic
/// control extension showing white (the page behind it). Colour becomes Rec. 601 luminance as in `PNMReader`.
/// The LZW data is decoded here (12-bit codes at most, as the format allows); data that ends early leaves
/// the rest of the image white, as browsers show a GIF cut short.
enum GIFReader {
    static func decode(_ bytes: [UInt8], limits: DecodeLimits) throws -> GrayImage {
        var reader = ByteReader(bytes: bytes, limits: limits)
        reader.position = 6  // "GIF87a" / "GIF89a"
        var screenWidth = try reader.u16()
        var screenHeight = try reader.u16()
        let screenFlags = try reader.byte()
        reader.position += 2  // background colour index, pixel aspect ratio: the page is white
        var globalTable: [UInt8] = []
        if screenFlags & 0x80 != 0 { globalTable = try reader.colorTable(sizeBits: Int(screenFlags & 7)) }
        var transparent: Int? = nil
        while true {
            switch try reader.byte() {
            case 0x21:  // extension
                let label = try reader.byte()
                if label == 0xF9 {
                    // Graphic control: size 4, flags (bit 0: transparent colour given), delay, transparent index.
                    let size = Int(try reader.byte())
                    guard size >= 4 else { throw reader.corrupt("graphic control extension of \(size) bytes") }
                    let flags = try reader.byte()
                    reader.position += 2
                    let index = try reader.byte()
                    transparent = flags & 1 != 0 ? Int(index) : nil
                    reader.position += size - 4
                }
                try reader.skipSubBlocks()
            case 0x2C:  // image descriptor
                let left = try reader.u16(), top = try reader.u16()
                let width = try reader.u16(), height = try reader.u16()
                let flags = try reader.byte()
                guard width > 0, height > 0 else { throw reader.corrupt("an image of zero width or height") }
                // The frame's indices are decoded whole before they are placed on the screen: it is held to the
                // pixel limit too (the screen is checked, and its pixels reserved, below).
                guard width * height <= limits.maxPixels else {
                    throw reader.corrupt("a frame of \(width)×\(height) pixels, over the limit of \(limits.maxPixels) (see --max-pixels)")
                }
                // A screen of zero size (some encoders write it) is the image's own.
                if screenWidth == 0 || screenHeight == 0 { (screenWidth, screenHeight) = (left + width, top + height) }
                try limits.check(width: screenWidth, height: screenHeight)
                let table = flags & 0x80 != 0 ? try reader.colorTable(sizeBits: Int(flags & 7)) : globalTable
                guard !table.isEmpty else { throw reader.corrupt("no colour table") }
                let minimumCodeSize = Int(try reader.byte())
                guard (2...8).contains(minimumCodeSize) else { throw reader.corrupt("LZW code size \(minimumCodeSize)") }
                let indices = try reader.lzw(minimumCodeSize: minimumCodeSize, count: width * height)
                var pixels = [UInt8](repeating: 255, count: screenWidth * screenHeight)
                let rows = flags & 0x40 != 0 ? interlacedRows(height) : Array(0..<height)
                for (n, row) in rows.enumerated() where top + row < screenHeight {
                    for x in 0..<width where left + x < screenWidth {
                        let i = n * width + x
                        guard i < indices.count else { break }
                        let index = Int(indices[i])
                        if index == transparent { continue }
                        guard index < table.count else { throw reader.corrupt("colour index \(index) past its \(table.count) entries") }
                        pixels[(top + row) * screenWidth + left + x] = table[index]
                    }
                }
                return GrayImage(width: screenWidth, height: screenHeight, pixels: pixels)
            case 0x3B:
                throw reader.corrupt("no image before the trailer")
            case let other:
                throw reader.corrupt("unknown block 0x\(String(other, radix: 16)) at byte \(reader.position - 1)")
            }
        }
    }

    /// The rows of an interlaced image in the order they are stored: every 8th from 0, every 8th from 4,
    /// every 4th from 2, every 2nd from 1.
    static func interlacedRows(_ height: Int) -> [Int] {
        Array(stride(from: 0, to: height, by: 8)) + Array(stride(from: 4, to: height, by: 8))
            + Array(stride(from: 2, to: height, by: 4)) + Array(stride(from: 1, to: height, by: 2))
    }

    struct ByteReader {
        let bytes: [UInt8]
        let limits: DecodeLimits
        var position = 0

        func corrupt(_ reason: String) -> StarlineError { limits.corrupt(.gif, reason) }

        mutating func byte() throws -> UInt8 {
            guard position < bytes.count else { throw corrupt("truncated at byte \(position)") }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func u16() throws -> Int { Int(try byte()) | Int(try byte()) << 8 }

        /// A colour table of 2^(sizeBits+1) RGB entries, as luminance.
        mutating func colorTable(sizeBits: Int) throws -> [UInt8] {
            let entries = 2 << sizeBits
            guard bytes.count - position >= entries * 3 else { throw corrupt("truncated colour table") }
            defer { position += entries * 3 }
            let start = position
            return (0..<entries).map { i -> UInt8 in
                let p = start + 3 * i
                return Luminance.of(Int(bytes[p]), Int(bytes[p + 1]), Int(bytes[p + 2]))
            }
        }

        mutating func skipSubBlocks() throws {
            while true {
                let size = Int(try byte())
                if size == 0 { return }
                guard bytes.count - position >= size else { throw corrupt("truncated extension") }
                position += size
            }
        }

        /// The colour indices of `count` pixels from the image's LZW sub-blocks (fewer when the data ends
        /// early); `position` after the block terminator.
        mutating func lzw(minimumCodeSize: Int, count: Int) throws -> [UInt8] {
            let clear = 1 << minimumCodeSize, end = clear + 1
            var prefix = [Int16](repeating: -1, count: 4096)
            var suffix = [UInt8](repeating: 0, count: 4096)
            var first = [UInt8](repeating: 0, count: 4096)  // the first index of each code's string
            var length = [Int](repeating: 1, count: 4096)
            for i in 0..<clear { suffix[i] = UInt8(i); first[i] = UInt8(i) }
            var out = [UInt8]()
            out.reserveCapacity(min(count, 1 << 22))
            var codeSize = minimumCodeSize + 1
            var next = end + 1
            var previous = -1
            var bits: UInt32 = 0, bitCount = 0
            var blockLeft = 0
            var ended = false
            decoding: while out.count < count {
                while bitCount < codeSize {
                    if blockLeft == 0 {
                        blockLeft = Int(try byte())
                        if blockLeft == 0 { ended = true; break decoding }  // the terminator: the data ended early
                    }
                    bits |= UInt32(try byte()) << UInt32(bitCount)
                    bitCount += 8
                    blockLeft -= 1
                }
                let code = Int(bits & (1 << UInt32(codeSize) - 1))
                bits >>= UInt32(codeSize)
                bitCount -= codeSize
                if code == clear {
                    codeSize = minimumCodeSize + 1
                    next = end + 1
                    previous = -1
                    continue
                }
                if code == end { break }
                guard code < next || (code == next && previous >= 0) else { throw corrupt("LZW code \(code) before it was defined") }
                if previous >= 0, next < 4096 {
                    // The previous string plus the first index of this one; for the code being defined right now
                    // (code == next), that first index is the previous string's own.
                    prefix[next] = Int16(previous)
                    first[next] = first[previous]
                    suffix[next] = code == next ? first[previous] : first[code]
                    length[next] = length[previous] + 1
                    next += 1
                    if next == 1 << codeSize, codeSize < 12 { codeSize += 1 }
                }
                // The string of `code`, last index first along its prefixes; what runs past the image is dropped.
                let n = min(length[code], count - out.count)
                let start = out.count
                out.append(contentsOf: repeatElement(0, count: n))
                var c = code
                var k = length[code] - 1
                while c >= 0 {
                    if k < n { out[start + k] = suffix[c] }
                    k -= 1
                    c = Int(prefix[c])
                }
                previous = code
            }
            // The rest of the image data, up to its terminator.
            if !ended {
                if blockLeft > 0 {
                    guard bytes.count - position >= blockLeft else { throw corrupt("truncated image data") }
                    position += blockLeft
                }
                try skipSubBlocks()
            }
            return out
        }
    }
}
