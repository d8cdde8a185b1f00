/// A QR finder pattern seen in an image: the centre of its 3 × 3 dark core and its module size, in pixels.
struct FinderPattern: Equatable {
    var x: Double, y: Double
    var module: Double
    /// Rows whose scan crossed it: a pattern seen on one row of a photograph is more likely noise.
    var hits: Int
}

/// Finds finder patterns (ISO/IEC 18004 §6.3.3: dark–light–dark–light–dark runs in the ratio 1:1:3:1:1 along
/// any line through the centre) on the rows of an image, each confirmed down its column, as a decoder's detector
/// does — but on its own, so the places of codes are known even where a decoder read none or stopped after one.
///
/// Dark and light are decided per block of pixels against the mean of the 5 × 5 blocks around it (the hybrid
/// threshold ZXing describes): a photograph's uneven light moves the threshold with it, and a block of even tone
/// takes its neighbours' threshold, so the core of a large finder pattern stays dark.
struct FinderPatternScan {
    let image: GrayImage
    private let block: Int
    private let blocksX: Int
    private let thresholds: [UInt8]

    init(_ image: GrayImage) {
        self.image = image
        // About 200 blocks along the short side, 8 pixels at least: the window (5 blocks) spans a few modules of
        // the smallest codes worth looking for in an image of that size.
        let block = max(8, min(image.width, image.height) / 200)
        let blocksX = (image.width + block - 1) / block
        let blocksY = (image.height + block - 1) / block
        self.block = block
        self.blocksX = blocksX
        var points = [UInt8](repeating: 0, count: blocksX * blocksY)
        image.pixels.withUnsafeBufferPointer { p in
            for by in 0..<blocksY {
                for bx in 0..<blocksX {
                    let x0 = bx * block, y0 = by * block
                    let x1 = min(x0 + block, image.width), y1 = min(y0 + block, image.height)
                    // Every other pixel of every other row: a quarter of the reads, the same mean and range to
                    // within the noise (a module is wider than two pixels wherever a pattern can be found).
                    var sum = 0, count = 0, low = 255, high = 0
                    for y in stride(from: y0, to: y1, by: 2) {
                        let row = y * image.width
                        for x in stride(from: x0, to: x1, by: 2) {
                            let v = Int(p[row + x])
                            sum += v
                            count += 1
                            low = min(low, v)
                            high = max(high, v)
                        }
                    }
                    var point = sum / count
                    if high - low <= 24 {
                        // Even tone: light background unless the neighbours' threshold says this block is dark.
                        point = low / 2
                        if bx > 0, by > 0 {
                            let around =
                                (Int(points[(by - 1) * blocksX + bx]) + 2 * Int(points[by * blocksX + bx - 1])
                                    + Int(points[(by - 1) * blocksX + bx - 1])) / 4
                            if low < around { point = around }
                        }
                    }
                    points[by * blocksX + bx] = UInt8(point)
                }
            }
        }
        // Each block's threshold: the mean of the 5 × 5 block points around it (clipped at the edges).
        var thresholds = [UInt8](repeating: 0, count: points.count)
        for by in 0..<blocksY {
            for bx in 0..<blocksX {
                var sum = 0, n = 0
                for ny in max(0, by - 2)...min(blocksY - 1, by + 2) {
                    for nx in max(0, bx - 2)...min(blocksX - 1, bx + 2) {
                        sum += Int(points[ny * blocksX + nx])
                        n += 1
                    }
                }
                thresholds[by * blocksX + bx] = UInt8(sum / n)
            }
        }
        self.thresholds = thresholds
    }

    /// The most patterns kept while scanning: a photograph of foliage or text can look like thousands, and only
    /// the ones seen most are worth pairing (`QRRegionsOfInterest`).
    static let maxCandidates = 2_000

    /// The finder patterns of the image, those seen on the most rows first.
    func patterns() -> [FinderPattern] {
        var found: [FinderPattern] = []
        // Where each pattern found is, by cells of `cell` pixels: a sighting is merged with one nearby, never compared
        // with every pattern of the image (a page of finder-like texture would make that quadratic).
        let cell = 64, columns = image.width / cell + 1
        var grid: [Int: [Int]] = [:]
        // Every row up to 1,000 pixels on the short side, fewer above: a pattern of 2-pixel modules is 6 rows tall.
        let step = max(1, min(image.width, image.height) / 1_000)
        var dark = [UInt8](repeating: 0, count: image.width)
        image.pixels.withUnsafeBufferPointer { p in
            dark.withUnsafeMutableBufferPointer { dark in
                var y = 0
                while y < image.height {
                    scanRow(y, p, dark) { candidate in
                        let (cx, cy) = (Int(candidate.x) / cell, Int(candidate.y) / cell)
                        // Cells within reach of a sighting of the same pattern (`isSame`: 1.5 modules, of up to 1.6×).
                        let radius = Int(2.4 * candidate.module) / cell + 1
                        var same: Int?
                        search: for ny in max(0, cy - radius)...(cy + radius) {
                            for nx in max(0, cx - radius)...(cx + radius) {
                                if let i = grid[ny * columns + nx]?.first(where: { found[$0].isSame(as: candidate) }) {
                                    same = i
                                    break search
                                }
                            }
                        }
                        if let same {
                            found[same].merge(candidate)
                        } else if found.count < Self.maxCandidates {
                            grid[cy * columns + cx, default: []].append(found.count)
                            found.append(candidate)
                        }
                    }
                    y += step
                }
            }
        }
        // Seen on two rows or more, unless its core is too thin to cross two scanned rows.
        return found.filter { $0.hits >= 2 || $0.module * 3 < Double(2 * step) }.sorted { $0.hits > $1.hits }
    }

    private func isDark(_ p: UnsafeBufferPointer<UInt8>, _ x: Int, _ y: Int) -> Bool {
        p[y * image.width + x] <= thresholds[(y / block) * blocksX + x / block]
    }

    /// The runs of row `y`, dark first (`dark` is scratch of the image's width): each time the last five are
    /// dark–light–dark–light–dark in the ratio 1:1:3:1:1 and the centre's column is too, `found` gets the pattern.
    private func scanRow(
        _ y: Int, _ p: UnsafeBufferPointer<UInt8>, _ dark: UnsafeMutableBufferPointer<UInt8>, _ found: (FinderPattern) -> Void
    ) {
        let width = image.width, row = y * width, blockRow = (y / block) * blocksX
        // The row's pixels against their blocks' thresholds, a block at a time (no division per pixel).
        for bx in 0..<blocksX {
            let threshold = thresholds[blockRow + bx]
            for x in (bx * block)..<min(bx * block + block, width) { dark[x] = p[row + x] <= threshold ? 1 : 0 }
        }
        var x = 0
        while x < width, dark[x] == 0 { x += 1 }
        // The last five runs, the newest in r4; `runs` counts them up to five.
        var (r0, r1, r2, r3, r4) = (0, 0, 0, 0, 0)
        var runs = 0
        while x < width {
            let value = dark[x]
            var end = x + 1
            while end < width, dark[end] == value { end += 1 }
            (r0, r1, r2, r3, r4) = (r1, r2, r3, r4, end - x)
            runs = min(runs + 1, 5)
            if value == 1, runs == 5, Self.fitsRatio(r0, r1, r2, r3, r4),
                let pattern = confirm(runs: [r0, r1, r2, r3, r4], endX: end, y: y, p)
            {
                found(pattern)
            }
            x = end
        }
    }

    /// Runs in the ratio 1:1:3:1:1 within half a module each (ZXing's tolerance for photographs).
    static func fitsRatio(_ runs: [Int]) -> Bool {
        runs.count == 5 && fitsRatio(runs[0], runs[1], runs[2], runs[3], runs[4])
    }

    static func fitsRatio(_ r0: Int, _ r1: Int, _ r2: Int, _ r3: Int, _ r4: Int) -> Bool {
        let total = r0 + r1 + r2 + r3 + r4
        guard total >= 7, r0 > 0, r1 > 0, r2 > 0, r3 > 0, r4 > 0 else { return false }
        // In sevenths of a pixel: |7·run − total| < total/2 for a module, 3·total/2 for the centre.
        return 2 * abs(7 * r0 - total) < total && 2 * abs(7 * r1 - total) < total && 2 * abs(7 * r2 - 3 * total) < 3 * total
            && 2 * abs(7 * r3 - total) < total && 2 * abs(7 * r4 - total) < total
    }

    /// The pattern whose row runs end at `endX`, when its centre's column crosses it in the same ratio and about
    /// the same size; centred on both.
    private func confirm(runs: [Int], endX: Int, y: Int, _ p: UnsafeBufferPointer<UInt8>) -> FinderPattern? {
        let total = runs.reduce(0, +)
        let centerX = endX - runs[4] - runs[3] - runs[2] / 2 - 1
        guard centerX >= 0, centerX < image.width, isDark(p, centerX, y) else { return nil }
        // Up from the row, then down: centre, light ring, dark ring; no run longer than the row's whole pattern.
        var column = [0, 0, 0, 0, 0]
        var yy = y
        while yy >= 0, isDark(p, centerX, yy), column[2] <= total { column[2] += 1; yy -= 1 }
        while yy >= 0, !isDark(p, centerX, yy), column[1] <= total { column[1] += 1; yy -= 1 }
        while yy >= 0, isDark(p, centerX, yy), column[0] <= total { column[0] += 1; yy -= 1 }
        let top = y - column[2] + 1
        yy = y + 1
        while yy < image.height, isDark(p, centerX, yy), column[2] <= 2 * total { column[2] += 1; yy += 1 }
        let bottom = yy - 1
        while yy < image.height, !isDark(p, centerX, yy), column[3] <= total { column[3] += 1; yy += 1 }
        while yy < image.height, isDark(p, centerX, yy), column[4] <= total { column[4] += 1; yy += 1 }
        let columnTotal = column.reduce(0, +)
        // The same pattern seen across: about the same size (tilt shortens one direction, so within half).
        guard Self.fitsRatio(column), 2 * abs(columnTotal - total) < total + columnTotal else { return nil }
        return FinderPattern(
            x: Double(centerX), y: Double(top + bottom) / 2, module: Double(total + columnTotal) / 14, hits: 1)
    }
}

extension FinderPattern {
    /// Another sighting of the same pattern: its centre within a module and a half, its modules of a like size.
    func isSame(as other: FinderPattern) -> Bool {
        let reach = 1.5 * max(module, other.module)
        return abs(x - other.x) <= reach && abs(y - other.y) <= reach && module < 1.6 * other.module
            && other.module < 1.6 * module
    }

    /// Averages in another sighting.
    mutating func merge(_ other: FinderPattern) {
        let n = Double(hits)
        x = (x * n + other.x) / (n + 1)
        y = (y * n + other.y) / (n + 1)
        module = (module * n + other.module) / (n + 1)
        hits += 1
    }
}
