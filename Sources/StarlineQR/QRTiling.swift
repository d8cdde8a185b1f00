/// Several codes in one photograph: the second engine on overlapping tiles of it.
///
/// ZXing-C++ 1.4 (the engine Debian gives us) forms finder-pattern triples over the whole image and, in a
/// photograph with dozens of small codes, returns a few of them: read once, BoofCV's `lots/image005` (60 codes)
/// gives one, a photographed sheet of 40 about half (QRTilingTests). Each tile holds fewer codes and finder
/// patterns, so more are read: 12 different payloads of that photograph in 3 × 3 tiles, all 40 of the sheet. The
/// pass runs only where more codes can hide (`wanted`): a photograph of a code that fills much of it, the common
/// case, costs nothing more; one whose codes are all small costs about one more pass and a third (bench/RESULTS.md).
struct QRTiling {
    /// The tiles' top-left corners and size, in the image's pixels.
    struct Tile: Equatable {
        var x: Int, y: Int, width: Int, height: Int
    }

    let tiles: [Tile]

    /// `grid` × `grid` tiles, each widened by an eighth of its side on every side, so a code up to a quarter of a
    /// tile wide lies whole in at least one tile (the codes looked for are small: `maxCoverage`). Wider overlaps
    /// (a third) read no more of BoofCV's `lots` photographs and cost a fifth more.
    init(width: Int, height: Int, grid: Int) {
        let n = max(1, grid)
        let (tileWidth, tileHeight) = ((width + n - 1) / n, (height + n - 1) / n)
        let (overlapX, overlapY) = (tileWidth / 8, tileHeight / 8)
        var tiles: [Tile] = []
        for row in 0..<n {
            for column in 0..<n {
                let x0 = max(0, column * tileWidth - overlapX), y0 = max(0, row * tileHeight - overlapY)
                let x1 = min(width, (column + 1) * tileWidth + overlapX), y1 = min(height, (row + 1) * tileHeight + overlapY)
                if x1 > x0, y1 > y0 { tiles.append(Tile(x: x0, y: y0, width: x1 - x0, height: y1 - y0)) }
            }
        }
        self.tiles = tiles
    }

    /// The codes ZXing-C++ reads in each tile of `image`, corners in `image`'s coordinates (a code read in two
    /// overlapping tiles comes twice: `QRScanner.deduplicated` keeps one).
    func read(_ image: GrayImage, with zxing: ZXingLibrary) -> [QRSymbol] {
        tiles.flatMap { tile in
            zxing.decode(image.cropped(x: tile.x, y: tile.y, width: tile.width, height: tile.height)).map { symbol in
                var s = symbol
                s.corners = s.corners.map { image.clamped(QRPoint(x: $0.x + tile.x, y: $0.y + tile.y)) }
                return s
            }
        }
    }

    /// The pixels the pass reads (the ladder's work budget counts them).
    var pixelsRead: Int { tiles.reduce(0) { $0 + $1.width * $1.height } }

    /// The short side below which an image is not tiled: a tile of a smaller one holds too few modules.
    static let minShortSide = 1_200
    /// Codes found each covering less than this share of the image (its bounding box) leave room for more.
    static let maxCoverage = 0.01

    /// The grid for an image with these codes found, or nil when the pass is not wanted: a large photograph whose
    /// codes are all small — a sheet of them, or one small code in a scene with room for more. A code that fills
    /// more of it is what the photograph was taken of: of BoofCV's 80 photographs of 1,200 pixels or more, 12 are
    /// tiled this way, where "two codes or more" would tile 45 for no more codes read. A rendered image is read
    /// whole by libzbar, every code of it; a photograph is where ZXing-C++ stops early. Three by three tiles for up
    /// to ~16 megapixels (tiles of ~2 megapixels), four by four above.
    static func wanted(for image: GrayImage, found: [QRSymbol]) -> QRTiling? {
        guard !found.isEmpty, min(image.width, image.height) >= minShortSide else { return nil }
        let largest = found.map(\.boundsArea).max() ?? 0
        guard Double(largest) < maxCoverage * Double(image.pixelCount), image.looksPhotographic else { return nil }
        return QRTiling(width: image.width, height: image.height, grid: image.pixelCount > 16_000_000 ? 4 : 3)
    }
}

extension GrayImage {
    /// The pixels of the rectangle at (`x`, `y`), `width` × `height`, clipped to the image.
    func cropped(x: Int, y: Int, width: Int, height: Int) -> GrayImage {
        let x0 = min(max(0, x), self.width), y0 = min(max(0, y), self.height)
        let x1 = min(max(x0, x + width), self.width), y1 = min(max(y0, y + height), self.height)
        let (w, h) = (x1 - x0, y1 - y0)
        guard w > 0, h > 0 else { return GrayImage(width: 0, height: 0, pixels: []) }
        var out = [UInt8](repeating: 0, count: w * h)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for row in 0..<h {
                    let from = (y0 + row) * self.width + x0
                    for i in 0..<w { dst[row * w + i] = src[from + i] }
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }
}
