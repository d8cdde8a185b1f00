extension QRScanner {
    /// The attempts that read one region (`QRRegionsOfInterest`): a region is small, so each is cheap, and the
    /// codes a region holds are the ones a whole-image pass missed for being small or blurred.
    static func regionAttempts(secondEngine: Bool, scaled: Bool) -> [Attempt] {
        let copies: [Attempt] = scaled ? [] : [secondEngine ? .zxingUpscaled : .smoothUpscaled]
        return (secondEngine ? [.zxing, .original, .zxingSmoothed] : [.original]) + copies
    }

    /// The largest region read, and the largest copy of one: a code of version 40 (177 modules and its quiet zone)
    /// at 5 pixels a module. A larger code has modules the whole image's attempts read as well as a region's.
    static let maxRegionPixels = 1_000_000

    /// Whether codes found leave room for more: together they cover under half of the image.
    static func roomForMore(in image: GrayImage, found: [QRSymbol]) -> Bool {
        2 * found.reduce(0) { $0 + $1.boundsArea } < image.pixelCount
    }

    /// The codes read in the regions of `image` whose finder patterns are not those of `excluding`, corners in
    /// `image`'s coordinates, and how many regions were read; the finder scan and every read counted in `work`, none
    /// past `budget`.
    func readRegions(of image: GrayImage, excluding: [QRSymbol], work: inout Int, budget: Int) -> (symbols: [QRSymbol], read: Int) {
        guard work + image.pixelCount <= budget else { return ([], 0) }
        work += image.pixelCount
        let known = excluding.map { symbol in
            let b = symbol.bounds
            return QRRegionsOfInterest.Region(x: b.minX, y: b.minY, width: b.maxX - b.minX + 1, height: b.maxY - b.minY + 1)
        }
        let regions = QRRegionsOfInterest(
            patterns: FinderPatternScan(image).patterns(), width: image.width, height: image.height, excluding: known
        ).regions
        guard !regions.isEmpty else { return ([], 0) }
        let engine: ZXingLibrary? = if case .success(let zxing) = ZXingLibrary.shared { zxing } else { nil }
        var symbols: [QRSymbol] = []
        var read = 0
        for region in regions where region.width * region.height <= Self.maxRegionPixels {
            read += 1
            // Modules under 3 pixels are scaled to 6 or more (at most ×4, and to a copy of at most `maxRegionPixels`).
            let wanted = region.module > 0 && region.module < 3 ? min(4, Int((6 / region.module).rounded(.up))) : 1
            let room = Int((Double(Self.maxRegionPixels) / Double(region.width * region.height)).squareRoot())
            let factor = max(1, min(wanted, room))
            let crop = image.cropped(x: region.x, y: region.y, width: region.width, height: region.height)
            let scaled = crop.sharplyUpscaled(by: factor)
            attempts: for attempt in Self.regionAttempts(secondEngine: engine != nil, scaled: factor > 1) {
                guard let cost = attempt.pixelsRead(scaled), work + cost <= budget else { continue }
                work += cost
                for variant in attempt.variants(of: scaled) {
                    let copy = variant.make()
                    let found = attempt.usesSecondEngine ? engine?.decode(copy) ?? [] : Self.withDesignators(decode(copy), in: copy)
                    guard !found.isEmpty else { continue }
                    symbols += found.map { symbol in
                        var s = symbol
                        s.corners = s.corners.map { p in
                            let q = variant.mapBack(p)
                            return image.clamped(QRPoint(x: q.x / factor + region.x, y: q.y / factor + region.y))
                        }
                        return s
                    }
                    break attempts
                }
            }
        }
        return (symbols, read)
    }
}
