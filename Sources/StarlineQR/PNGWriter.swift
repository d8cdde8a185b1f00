#if canImport(Glibc)
import Glibc
#endif
import CPNG
import StarlineCore

/// Writes black-and-white PNGs: 1-bit grayscale, as qrencode does.
///
/// Written here rather than through libpng: its simplified write API (the only one usable without setjmp)
/// writes 8-bit gray at the least, or palette images it packs pixel by pixel — either way most of the time
/// `sl-qr encode` spent. The format for this case is small (PNG, RFC 2083 / ISO 15948): the signature, IHDR,
/// one IDAT holding the zlib stream of the filtered rows, IEND; each chunk with its CRC-32. zlib does the
/// compression and the checksum. No tIME or text chunks, so identical pixels give identical bytes.
enum PNGWriter {
    /// The bytes of one scanline of a `width`-pixel row: the filter-type byte, then the pixels.
    static func scanlineBytes(width: Int) -> Int { 1 + (width + 7) / 8 }

    /// PNG bytes for a 1-bit grayscale image given as its scanlines: `height` rows of
    /// `scanlineBytes(width:)` bytes, each the filter type 0 (None) and then the pixels, most significant
    /// bit first, 1 = white ("0 is black, 1 is white" at bit depth 1); the unused low bits of a row's last
    /// byte are 0, so identical pixels give identical bytes.
    static func oneBitGray(width: Int, height: Int, scanlines: [UInt8]) throws -> [UInt8] {
        precondition(width > 0 && height > 0 && scanlines.count == scanlineBytes(width: width) * height)
        // PNG dimensions are at most 2^31 - 1.
        guard width <= Int(Int32.max), height <= Int(Int32.max) else {
            throw StarlineError(.usage, "image of \(width)×\(height) pixels is too large for PNG")
        }
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var header: [UInt8] = []
        appendBigEndian(UInt32(width), to: &header)
        appendBigEndian(UInt32(height), to: &header)
        // Bit depth 1, colour type 0 (grayscale), compression 0 (deflate), filter method 0, no interlace.
        header += [1, 0, 0, 0, 0]
        appendChunk("IHDR", header, to: &png)
        appendChunk(
            "IDAT",
            try deflate(
                upFiltered(scanlines, scanlineBytes: scanlineBytes(width: width)),
                scanlineBytes: scanlineBytes(width: width)), to: &png)
        appendChunk("IEND", [], to: &png)
        return png
    }

    /// The scanlines with every row that repeats the one above it (a QR module is `moduleSize` rows tall, so
    /// most rows do) written with PNG's Up filter (type 2: "Up(x) = Raw(x) - Prior(x)"), which makes it all
    /// zeros; the others stay filter None. deflate then finds those rows at once instead of searching a row
    /// back for each of them (longest_match and deflate_slow were a quarter of a batch's instructions, by
    /// callgrind). On 300 friend-link codes, with Z_FILTERED: 237 bytes of IDAT on average instead of 257,
    /// in 35 µs instead of 56 µs (Up with Z_RLE was as fast but 423 bytes; level 1 or 3 about 290).
    static func upFiltered(_ scanlines: [UInt8], scanlineBytes: Int) -> [UInt8] {
        var filtered = scanlines
        let rows = scanlines.count / scanlineBytes
        guard rows > 1 else { return filtered }
        scanlines.withUnsafeBufferPointer { source in
            filtered.withUnsafeMutableBufferPointer { out in
                for row in 1..<rows {
                    let start = row * scanlineBytes, previous = start - scanlineBytes
                    let base = source.baseAddress!
                    let same = memcmp(base + start + 1, base + previous + 1, scanlineBytes - 1) == 0
                    guard same else { continue }
                    out[start] = 2
                    (out.baseAddress! + start + 1).update(repeating: 0, count: scanlineBytes - 1)
                }
            }
        }
        return filtered
    }

    /// A zlib stream (RFC 1950) of `data`, as IDAT holds it, at zlib's fastest level (Z_BEST_SPEED).
    ///
    /// Speed over the last bytes: on 300 friend-link codes (Up-filtered) level 1 takes 17 µs and 298 bytes of
    /// IDAT, level 6 with Z_FILTERED 48 µs and 238 bytes (zlib 1.2.13) — a third of `encode --batch`'s time
    /// per link went to deflate_slow and longest_match. The PNG stays smaller than qrencode's (~370 bytes
    /// against 405 for the same link).
    ///
    /// zlib's defaults size its state for large inputs (~270 KB, mostly zeroed at init: page faults that
    /// cost more than compressing a QR image). A 4 KB window still reaches the previous scanline — the
    /// repeats that matter here — for scanlines up to 4,096 − 262 bytes (zlib matches at most
    /// `w_size - MIN_LOOKAHEAD` back), i.e. images up to 30,000 pixels wide, far beyond
    /// `QRRenderer.maxPixelSide`; memLevel 2 keeps the hash table small. A version-3 link compresses
    /// to 252 bytes (254 with the defaults).
    private static func deflate(_ data: [UInt8], scanlineBytes: Int) throws -> [UInt8] {
        // zlib keeps a pointer back to the z_stream and checks it on every call ("stream error" when it
        // moved), so the stream lives at one heap address rather than in a Swift local passed inout.
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer { stream.deinitialize(count: 1); stream.deallocate() }
        let windowBits: Int32 = scanlineBytes <= 4096 - 262 ? 12 : 15
        guard starline_deflate_init2_filtered(stream, Z_BEST_SPEED, windowBits, 2) == Z_OK else {
            throw StarlineError(.internalError, "zlib could not start compressing the image")
        }
        defer { deflateEnd(stream) }
        let capacity = Int(deflateBound(stream, uLong(data.count)))
        var out = [UInt8](repeating: 0, count: capacity)
        // "If deflate returns with Z_STREAM_END … all the input has been consumed and all the output has
        // been produced"; zlib.h: Z_FINISH on the first call "can be used … if avail_out is at least the
        // value returned by deflateBound", so one call is enough.
        let status = out.withUnsafeMutableBufferPointer { dest in
            data.withUnsafeBufferPointer { source in
                stream.pointee.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
                stream.pointee.avail_in = uInt(source.count)
                stream.pointee.next_out = dest.baseAddress
                stream.pointee.avail_out = uInt(dest.count)
                return CPNG.deflate(stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else {
            throw StarlineError(.internalError, "zlib could not compress the image (status \(status))")
        }
        out.removeSubrange(Int(stream.pointee.total_out)...)
        return out
    }

    /// length, type, data, and the CRC-32 of type and data ("the CRC is calculated on the preceding bytes
    /// in the chunk, including the chunk type code and chunk data fields, but not including the length").
    private static func appendChunk(_ type: String, _ data: [UInt8], to png: inout [UInt8]) {
        appendBigEndian(UInt32(data.count), to: &png)
        let typeAndData = Array(type.utf8) + data
        png += typeAndData
        let crc = typeAndData.withUnsafeBufferPointer { crc32(0, $0.baseAddress, uInt($0.count)) }
        appendBigEndian(UInt32(truncatingIfNeeded: crc), to: &png)
    }

    private static func appendBigEndian(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [
            UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8),
            UInt8(truncatingIfNeeded: value)
        ]
    }
}
