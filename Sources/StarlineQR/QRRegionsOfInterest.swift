/// Where codes are, from their finder patterns (`FinderPatternScan`): three patterns of a like size at the corners
/// of a rough square are one code, and the square around them — with its quiet zone — is a region a decoder can
/// read on its own.
///
/// A decoder reading a whole photograph can miss a code it would read alone: ZXing-C++ 1.4 pairs the finder
/// patterns of a whole scene and gives up on a code of ~2-pixel modules among them, and the ladder stops at the
/// first attempt that reads one code of several (bench/RESULTS.md). Reading the regions finds those: a code beside
/// one already read, and a small code in a large scene.
struct QRRegionsOfInterest {
    /// A region's rectangle, in the image's pixels.
    struct Region: Equatable {
        var x: Int, y: Int, width: Int, height: Int
        /// The module size its finder patterns have, in pixels (0 for a code already read).
        var module: Double = 0

        func contains(x px: Double, y py: Double) -> Bool {
            px >= Double(x) && px < Double(x + width) && py >= Double(y) && py < Double(y + height)
        }
    }

    let regions: [Region]

    /// The most patterns paired, the ones seen on the most rows: a busy scene can hold hundreds, and pairing is
    /// cubic in their number.
    static let maxPatterns = 60
    /// The most regions read in one image.
    static let maxRegions = 16

    /// The regions of the codes whose finder patterns are in `patterns`, best-shaped first, leaving out codes already
    /// read (`excluding`): their patterns are theirs, and a region whose centre lies in one is that code. Each pattern
    /// belongs to one region at most; two patterns left over make a region too.
    init(patterns: [FinderPattern], width: Int, height: Int, excluding: [Region] = []) {
        let candidates = Array(patterns.lazy.filter { p in !excluding.contains { $0.contains(x: p.x, y: p.y) } }.prefix(Self.maxPatterns))
        var triples: [(score: Double, corner: Int, a: Int, b: Int)] = []
        for corner in candidates.indices {
            for a in candidates.indices where a != corner {
                for b in candidates.indices where b > a && b != corner {
                    if let score = Self.score(corner: candidates[corner], candidates[a], candidates[b]) {
                        triples.append((score, corner, a, b))
                    }
                }
            }
        }
        triples.sort { $0.score < $1.score }
        var used = Set<Int>()
        var regions: [Region] = []
        for triple in triples where regions.count < Self.maxRegions {
            guard !used.contains(triple.corner), !used.contains(triple.a), !used.contains(triple.b) else { continue }
            let (c, p, q) = (candidates[triple.corner], candidates[triple.a], candidates[triple.b])
            // The fourth corner completes the parallelogram.
            let xs = [c.x, p.x, q.x, p.x + q.x - c.x], ys = [c.y, p.y, q.y, p.y + q.y - c.y]
            let centerX = xs.reduce(0, +) / 4, centerY = ys.reduce(0, +) / 4
            guard !excluding.contains(where: { $0.contains(x: centerX, y: centerY) }),
                !regions.contains(where: { $0.contains(x: centerX, y: centerY) })
            else { continue }
            used.formUnion([triple.corner, triple.a, triple.b])
            // Beyond the finder centres: 3.5 modules of pattern, 4 of quiet zone, and a tenth of the side for perspective.
            let module = (c.module + p.module + q.module) / 3
            let side = max(xs.max()! - xs.min()!, ys.max()! - ys.min()!)
            let margin = 8 * module + side / 10
            let x0 = max(0, Int(xs.min()! - margin)), y0 = max(0, Int(ys.min()! - margin))
            let x1 = min(width, Int(xs.max()! + margin) + 1), y1 = min(height, Int(ys.max()! + margin) + 1)
            if x1 > x0, y1 > y0 { regions.append(Region(x: x0, y: y0, width: x1 - x0, height: y1 - y0, module: module)) }
        }
        // Two patterns left of a like size and a code's distance apart: the third is unreadable (a blurred corner, a
        // logo, JPEG at 2-pixel modules), the code lies on one side of them or the other, so the region holds both.
        for a in candidates.indices where !used.contains(a) && regions.count < Self.maxRegions {
            for b in candidates.indices where b > a && !used.contains(b) && !used.contains(a) {
                let (p, q) = (candidates[a], candidates[b])
                guard max(p.module, q.module) < 1.6 * min(p.module, q.module) else { continue }
                let module = (p.module + q.module) / 2
                let distance = ((p.x - q.x) * (p.x - q.x) + (p.y - q.y) * (p.y - q.y)).squareRoot()
                guard distance / module >= 10, distance / module <= 190 * 1.5 else { continue }
                let (centerX, centerY) = ((p.x + q.x) / 2, (p.y + q.y) / 2)
                guard !excluding.contains(where: { $0.contains(x: centerX, y: centerY) }),
                    !regions.contains(where: { $0.contains(x: centerX, y: centerY) })
                else { continue }
                used.formUnion([a, b])
                let reach = 1.1 * distance + 10 * module
                let x0 = max(0, Int(centerX - reach)), y0 = max(0, Int(centerY - reach))
                let x1 = min(width, Int(centerX + reach) + 1), y1 = min(height, Int(centerY + reach) + 1)
                if x1 > x0, y1 > y0 { regions.append(Region(x: x0, y: y0, width: x1 - x0, height: y1 - y0, module: module)) }
                break
            }
        }
        self.regions = regions
    }

    /// How far three patterns are from the corners of a code with `corner` at its right angle (0 is a perfect
    /// square), or nil when they cannot be one: modules of unlike size, sides of unlike length, an angle far from
    /// square, or a side of more modules than version 40 has (or fewer than version 1).
    static func score(corner c: FinderPattern, _ p: FinderPattern, _ q: FinderPattern) -> Double? {
        let modules = [c.module, p.module, q.module]
        guard modules.max()! < 1.6 * modules.min()! else { return nil }
        let (ux, uy, vx, vy) = (p.x - c.x, p.y - c.y, q.x - c.x, q.y - c.y)
        let (du, dv) = ((ux * ux + uy * uy).squareRoot(), (vx * vx + vy * vy).squareRoot())
        guard du > 0, dv > 0, max(du, dv) < 1.4 * min(du, dv) else { return nil }
        let cosine = (ux * vx + uy * vy) / (du * dv)
        guard abs(cosine) < 0.35 else { return nil }
        // Finder centres are 14 modules apart in version 1, 170 in version 40 (side 17 + 4v, less 7).
        let span = (du + dv) / 2 / (modules.reduce(0, +) / 3)
        guard span >= 10, span <= 190 else { return nil }
        return abs(du - dv) / max(du, dv) + abs(cosine)
    }
}
