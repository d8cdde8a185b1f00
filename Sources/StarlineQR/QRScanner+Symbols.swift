import CZBar
#if canImport(Glibc)
import Glibc
#endif

/// What zbar reports, put in the shape sl-qr's records promise: corners clockwise from the origin finder
/// pattern, one symbol per payload and position, in reading order.
extension QRScanner {
    /// zbar reports a QR symbol's corners in the symbol's frame, counter-clockwise on
    /// screen: top-left (the origin finder pattern), bottom-left, bottom-right, top-right —
    /// for an upright 116 px symbol (16,16) (16,100) (100,100) (100,16). We return the
    /// clockwise order [topLeft, topRight, bottomRight, bottomLeft], the usual one for
    /// drawing a polygon and the one most other decoders use. Anything other than four
    /// points (never seen) becomes its bounding box.
    static func normalizedCorners(_ points: [QRPoint]) -> [QRPoint] {
        if points.count == 4 { return [points[0], points[3], points[2], points[1]] }
        guard !points.isEmpty else { return [] }
        let xs = points.map(\.x), ys = points.map(\.y)
        let (x0, x1, y0, y1) = (xs.min()!, xs.max()!, ys.min()!, ys.max()!)
        return [QRPoint(x: x0, y: y0), QRPoint(x: x1, y: y0), QRPoint(x: x1, y: y1), QRPoint(x: x0, y: y1)]
    }

    static func orientation(_ o: zbar_orientation_t) -> QROrientation {
        switch o {
        case ZBAR_ORIENT_UP: .up
        case ZBAR_ORIENT_RIGHT: .right
        case ZBAR_ORIENT_DOWN: .down
        case ZBAR_ORIENT_LEFT: .left
        default: .unknown
        }
    }

    /// libzbar does not say which charset a payload's ECI designators name: it drops them, and converts the few
    /// charsets it knows to UTF-8 (ISO-8859-7 comes back as UTF-8, Big5 and EUC-KR as their raw bytes). A payload
    /// that is not plain ASCII — where the charset can matter — is read again by ZXing-C++, which keeps them, and
    /// when it finds the same symbol (at the same place) with designators, its bytes and designators are taken:
    /// the exact stored bytes, read in the charset the symbol names. An ASCII payload (every friend link and
    /// callback) costs nothing more; without the second engine, or when it does not read the symbol, libzbar's
    /// bytes stay and their charset is guessed (`QRText`).
    static func withDesignators(_ symbols: [QRSymbol], in image: GrayImage) -> [QRSymbol] {
        func isPlainASCII(_ bytes: [UInt8]) -> Bool {
            bytes.allSatisfy { (0x20...0x7E).contains($0) || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        }
        guard symbols.contains(where: { !isPlainASCII($0.bytes) }), case .success(let zxing) = ZXingLibrary.shared else {
            return symbols
        }
        let reread = zxing.decode(image).filter { !$0.designators.isEmpty }
        guard !reread.isEmpty else { return symbols }
        return symbols.map { symbol in
            guard !isPlainASCII(symbol.bytes) else { return symbol }
            let b = symbol.bounds
            let tolerance = max(2, min(b.maxX - b.minX, b.maxY - b.minY) / 4)
            guard
                let same = reread.first(where: {
                    abs($0.center.x - symbol.center.x) <= tolerance && abs($0.center.y - symbol.center.y) <= tolerance
                })
            else { return symbol }
            var kept = symbol
            kept.bytes = same.bytes
            kept.designators = same.designators
            return kept
        }
    }

    /// Drops a symbol that repeats an earlier one's bytes at (nearly) the same place —
    /// a second finder-pattern triple over the same code. The same payload elsewhere in
    /// the image is a different symbol and is kept.
    static func deduplicated(_ symbols: [QRSymbol]) -> [QRSymbol] {
        var kept: [QRSymbol] = []
        for s in symbols {
            let b = s.bounds
            let tolerance = max(2, min(b.maxX - b.minX, b.maxY - b.minY) / 4)
            let duplicate = kept.contains { k in
                k.bytes == s.bytes && abs(k.center.x - s.center.x) <= tolerance && abs(k.center.y - s.center.y) <= tolerance
            }
            if !duplicate { kept.append(s) }
        }
        return kept
    }

    /// zbar returns symbols in no useful order (the order its finder-pattern clustering
    /// happens to produce). Reading order: rows top to bottom, where symbols whose
    /// vertical extents overlap by more than half of the shorter one share a row; left to
    /// right within a row.
    static func readingOrder(_ symbols: [QRSymbol]) -> [QRSymbol] {
        let byTop = symbols.sorted { a, b in
            let (ba, bb) = (a.bounds, b.bounds)
            return ba.minY != bb.minY ? ba.minY < bb.minY : ba.minX < bb.minX
        }
        // Each row is anchored on its first (topmost) symbol.
        var rows: [[QRSymbol]] = []
        for s in byTop {
            let b = s.bounds
            if let anchor = rows.last?.first {
                let a = anchor.bounds
                let overlap = min(a.maxY, b.maxY) - max(a.minY, b.minY)
                let shorter = min(a.maxY - a.minY, b.maxY - b.minY)
                if overlap * 2 > shorter {
                    rows[rows.count - 1].append(s)
                    continue
                }
            }
            rows.append([s])
        }
        return rows.flatMap { row in row.sorted { $0.bounds.minX < $1.bounds.minX } }
    }
}
