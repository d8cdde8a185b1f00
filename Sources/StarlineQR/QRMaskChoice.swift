/// libqrencode's choice of the data mask (mask.c, `Mask_mask`: the lowest penalty of JIS X0510:2004 8.8.2 —
/// N1 runs, N2 2×2 blocks, N3 finder-like 1:1:3:1:1 patterns, N4 the dark ratio — the first of equals
/// winning), computed on bit rows instead of bytes.
///
/// Why: libqrencode evaluates all eight masks module by module in `QRcode_encodeString`; that was 40 % of
/// `sl-qr encode --batch`'s instructions (perf, release). Here a row of a symbol of version 1–11 (at most 61
/// modules) is one `UInt64`: masking is an XOR, N2 and N4 are popcounts, and runs come from the bits that
/// differ from their neighbour. The penalties are libqrencode's to the last quirk (its run table starting
/// with -1 when a line starts dark; an N3 at the third run counted without looking before it), so the
/// symbol is the one `qrencode` draws; QREncoderTests compare them module by module.
enum QRMaskChoice {
    /// Widths up to this use bit rows (versions 1–11); larger symbols keep libqrencode's own evaluation.
    static let maxWidth = 64

    /// The mask libqrencode would choose for `frame`: a symbol as `QRcode_encodeMask(input, mask)` returns
    /// it (module bytes: bit 0 dark, 0x80 a function module, format information written for `mask`).
    static func best(_ frame: UnsafePointer<UInt8>, width: Int, appliedMask: Int, level: Int) -> Int {
        precondition(width <= maxWidth && (0..<8).contains(appliedMask) && (0..<4).contains(level))
        let patterns = maskPatterns(width)
        var base = [UInt64](repeating: 0, count: width), data = [UInt64](repeating: 0, count: width)
        let area = formatArea(width)
        for y in 0..<width {
            var dark: UInt64 = 0, free: UInt64 = 0
            for x in 0..<width {
                let module = frame[y * width + x]
                if module & 1 != 0 { dark |= 1 << UInt64(x) }
                if module & 0x80 == 0 { free |= 1 << UInt64(x) }
            }
            // Unmasked: the data modules flipped back; the format information cleared, as in the frame
            // libqrencode masks (QRspec_newFrame reserves it white, 0x84).
            base[y] = (dark ^ (patterns[appliedMask][y] & free)) & ~area[y]
            data[y] = free
        }
        var best = 0, lowest = Int.max
        var masked = [UInt64](repeating: 0, count: width), columns = [UInt64](repeating: 0, count: width)
        let run = UnsafeMutablePointer<Int>.allocate(capacity: width + 1)
        defer { run.deallocate() }
        for mask in 0..<8 {
            let format = formatBits(width, mask: mask, level: level)
            var blacks = 0
            for y in 0..<width {
                masked[y] = base[y] ^ (patterns[mask][y] & data[y]) | format[y]
                blacks += masked[y].nonzeroBitCount
            }
            let modules = width * width
            let ratio = (200 * blacks + modules) / modules / 2
            var demerit = (abs(ratio - 50) / 5) * 10
            demerit += penaltyN2(masked, width: width)
            transpose(masked, into: &columns, width: width)
            for y in 0..<width { demerit += penaltyN1N3(masked[y], width: width, run: run) }
            for x in 0..<width { demerit += penaltyN1N3(columns[x], width: width, run: run) }
            if demerit < lowest {
                lowest = demerit
                best = mask
            }
        }
        return best
    }

    /// Rewrites `frame` (masked with `from`) as masked with `to`: the data modules flipped where the two
    /// patterns differ, the format information written for `to` (0x85 dark, 0x84 light, as libqrencode does).
    static func remask(_ frame: UnsafeMutablePointer<UInt8>, width: Int, from: Int, to: Int, level: Int) {
        let patterns = maskPatterns(width)
        let area = formatArea(width), format = formatBits(width, mask: to, level: level)
        for y in 0..<width {
            let flip = patterns[from][y] ^ patterns[to][y]
            for x in 0..<width {
                let i = y * width + x, bit: UInt64 = 1 << UInt64(x)
                if area[y] & bit != 0 {
                    frame[i] = format[y] & bit != 0 ? 0x85 : 0x84
                } else if frame[i] & 0x80 == 0, flip & bit != 0 {
                    frame[i] ^= 1
                }
            }
        }
    }

    /// N2: every 2×2 block of one colour, 3 each.
    static func penaltyN2(_ rows: [UInt64], width: Int) -> Int {
        let all: UInt64 = width == 64 ? ~0 : (1 << UInt64(width)) - 1
        var count = 0
        for y in 1..<width {
            let dark = rows[y] & rows[y - 1], light = ~rows[y] & ~rows[y - 1] & all
            count += (dark & (dark >> 1)).nonzeroBitCount + (light & (light >> 1)).nonzeroBitCount
        }
        return count * 3
    }

    /// N1 and N3 of one row or column (Mask_calcRunLengthH/V and Mask_calcN1N3).
    ///
    /// N1 from bits: a run of L ≥ 5 modules costs 3 + (L − 5) = (L − 4) + 2, and it leaves L − 4 bits set
    /// where five in a row agree, one of them its start. N3 needs the run table, but only on a line that
    /// could hold a 1:1:3:1:1 pattern — "1011101" (factor 1) or six dark modules in a row (factor ≥ 2) —
    /// which most lines of a symbol do not.
    /// `run` has room for `width + 1` entries (scratch space, reused across lines).
    static func penaltyN1N3(_ line: UInt64, width: Int, run: UnsafeMutablePointer<Int>) -> Int {
        let all: UInt64 = width == 64 ? ~0 : (1 << UInt64(width)) - 1
        let dark = line & all, light = ~line & all
        @inline(__always) func longRuns(_ bits: UInt64) -> Int {
            let five = bits & (bits >> 1) & (bits >> 2) & (bits >> 3) & (bits >> 4)
            return five == 0 ? 0 : five.nonzeroBitCount + 2 * (five & ~(five << 1)).nonzeroBitCount
        }
        let demerit = longRuns(dark) + longRuns(light)
        let finderLike = dark & (light >> 1) & (dark >> 2) & (dark >> 3) & (dark >> 4) & (light >> 5) & (dark >> 6)
        let sixDark = dark & (dark >> 1) & (dark >> 2) & (dark >> 3) & (dark >> 4) & (dark >> 5)
        guard finderLike != 0 || sixDark != 0 else { return demerit }
        return demerit + penaltyN3(line, width: width, run: run)
    }

    /// N3 of one line from its run table, as Mask_calcN1N3 counts it.
    static func penaltyN3(_ line: UInt64, width: Int, run: UnsafeMutablePointer<Int>) -> Int {
        // The run table: -1 first when the line starts dark (runs then alternate light, dark from index 0).
        var count = 0
        if line & 1 != 0 { run[0] = -1; count = 1 }
        let inner: UInt64 = width == 64 ? ~0 >> 1 : (1 << UInt64(width - 1)) - 1
        var changes = (line ^ (line >> 1)) & inner, start = 0
        while changes != 0 {
            let x = changes.trailingZeroBitCount
            run[count] = x + 1 - start
            count += 1
            start = x + 1
            changes &= changes - 1
        }
        run[count] = width - start
        count += 1

        var demerit = 0
        var i = 3
        while i < count - 2 {
            defer { i += 2 }
            guard run[i] % 3 == 0 else { continue }
            let fact = run[i] / 3
            if run[i - 2] == fact, run[i - 1] == fact, run[i + 1] == fact, run[i + 2] == fact {
                if i == 3 || run[i - 3] >= 4 * fact {
                    demerit += 40
                } else if i + 4 >= count || run[i + 3] >= 4 * fact {
                    demerit += 40
                }
            }
        }
        return demerit
    }

    /// Column x of `rows` as bits y.
    static func transpose(_ rows: [UInt64], into columns: inout [UInt64], width: Int) {
        for x in 0..<width { columns[x] = 0 }
        for y in 0..<width {
            var row = rows[y]
            while row != 0 {
                let x = row.trailingZeroBitCount
                columns[x] |= 1 << UInt64(y)
                row &= row - 1
            }
        }
    }

    /// The modules each mask flips (libqrencode's `maskMakers`: where the expression is 0), per row, for a
    /// symbol `width` modules wide.
    ///
    /// Why not a table made once for every width: building all eleven widths module by module was 72 % of a
    /// single `sl-qr encode`'s instructions (callgrind), for the one width it needs. Every mask repeats
    /// every 6 columns (its terms are x mod 2, x mod 3 and x / 3 mod 2) and every 12 rows (y / 2 mod 2 adds
    /// a period of 4), so 12 rows of 6 modules, each repeated along its row, give all of them.
    static func maskPatterns(_ width: Int) -> [[UInt64]] {
        let keep: UInt64 = width >= 64 ? ~0 : (1 << UInt64(width)) - 1
        return (0..<8).map { mask in
            let period: [UInt64] = (0..<12).map { y in
                var six: UInt64 = 0
                for x in 0..<6 where flips(mask, x, y) { six |= 1 << UInt64(x) }
                var row: UInt64 = 0
                for shift in stride(from: 0, to: 64, by: 6) { row |= six << UInt64(shift) }
                return row & keep
            }
            return (0..<width).map { period[$0 % 12] }
        }
    }

    /// Mask `mask` flips module (x, y): mask.c's `Mask_mask0`…`Mask_mask7`.
    static func flips(_ mask: Int, _ x: Int, _ y: Int) -> Bool {
        switch mask {
        case 0: (x + y) & 1 == 0
        case 1: y & 1 == 0
        case 2: x % 3 == 0
        case 3: (x + y) % 3 == 0
        case 4: ((y / 2) + (x / 3)) & 1 == 0
        case 5: ((x * y) & 1) + (x * y) % 3 == 0
        case 6: (((x * y) & 1) + (x * y) % 3) & 1 == 0
        default: (((x * y) % 3) + ((x + y) & 1)) & 1 == 0
        }
    }

    /// QRspec_getFormatInfo: the 15 format bits by level (L, M, Q, H) and mask.
    static let formatInfo: [[UInt32]] = [
        [0x77c4, 0x72f3, 0x7daa, 0x789d, 0x662f, 0x6318, 0x6c41, 0x6976],
        [0x5412, 0x5125, 0x5e7c, 0x5b4b, 0x45f9, 0x40ce, 0x4f97, 0x4aa0],
        [0x355f, 0x3068, 0x3f31, 0x3a06, 0x24b4, 0x2183, 0x2eda, 0x2bed],
        [0x1689, 0x13be, 0x1ce7, 0x19d0, 0x0762, 0x0255, 0x0d0c, 0x083b]
    ]

    /// Where Mask_writeFormatInformation writes bit i (two places each), in its order.
    static func formatPositions(_ width: Int) -> [((x: Int, y: Int), (x: Int, y: Int))] {
        var positions: [((x: Int, y: Int), (x: Int, y: Int))] = []
        for i in 0..<8 { positions.append(((width - 1 - i, 8), (8, i < 6 ? i : i + 1))) }
        for i in 0..<7 { positions.append(((8, width - 7 + i), (i == 0 ? 7 : 6 - i, 8))) }
        return positions
    }

    static func formatArea(_ width: Int) -> [UInt64] {
        var rows = [UInt64](repeating: 0, count: width)
        for (a, b) in formatPositions(width) {
            rows[a.y] |= 1 << UInt64(a.x)
            rows[b.y] |= 1 << UInt64(b.x)
        }
        return rows
    }

    static func formatBits(_ width: Int, mask: Int, level: Int) -> [UInt64] {
        var rows = [UInt64](repeating: 0, count: width)
        var format = formatInfo[level][mask]
        for (a, b) in formatPositions(width) {
            if format & 1 != 0 {
                rows[a.y] |= 1 << UInt64(a.x)
                rows[b.y] |= 1 << UInt64(b.x)
            }
            format >>= 1
        }
        return rows
    }
}
