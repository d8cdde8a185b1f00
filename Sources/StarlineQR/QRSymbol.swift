/// A pixel position in the original image (x to the right, y down, 0-based).
public struct QRPoint: Sendable, Hashable, CustomStringConvertible {
    public var x: Int
    public var y: Int

    public init(x: Int, y: Int) {
        self.x = x
        self.y = y
    }

    public var description: String { "(\(x), \(y))" }
}

/// Which way the symbol's own top edge points in the image.
public enum QROrientation: String, Sendable {
    /// Upright: the symbol's top-left finder pattern is at the image's top left.
    case up
    /// Turned 90° clockwise: the symbol's top edge is on the image's right.
    case right
    /// Upside down.
    case down
    /// Turned 90° counter-clockwise: the symbol's top edge is on the image's left.
    case left
    case unknown
}

/// One decoded QR symbol.
public struct QRSymbol: Sendable, Hashable {
    /// The payload exactly as stored in the symbol: byte-mode data is returned raw (no
    /// charset conversion), and ECI designators are not in the data but in `designators`.
    public var bytes: [UInt8]

    /// The four corners of the symbol in **original image** coordinates, in the symbol's
    /// own reading frame, clockwise on screen:
    /// `[topLeft, topRight, bottomRight, bottomLeft]` — `corners[0]` is the corner at the
    /// symbol's top-left finder pattern, `corners[2]` the one without a finder pattern.
    /// For an upright symbol these are the image-space top-left, top-right, bottom-right
    /// and bottom-left; for a rotated symbol they rotate with it (see `orientation`).
    /// Coordinates are clamped to the image (`0..<width`, `0..<height`).
    public var corners: [QRPoint]

    public var orientation: QROrientation

    /// Where the payload switches charset (ISO/IEC 18004 §7.4.3, Extended Channel Interpretation): from byte
    /// `offset` of `bytes` on, ECI `assignment` applies. Empty when the symbol has no ECI designator, or when the
    /// engine that read it does not tell (libzbar; `QRScanner` asks ZXing-C++ for a payload that is not ASCII).
    public var designators: [ECIDesignator]

    /// For a symbol of a structured-append sequence whose other symbols were not all found (a sequence found
    /// whole comes back joined, as one symbol); nil for any other.
    public var sequencePart: SequencePart?

    public struct ECIDesignator: Sendable, Hashable {
        public var offset: Int
        public var assignment: Int

        public init(offset: Int, assignment: Int) {
            self.offset = offset
            self.assignment = assignment
        }
    }

    /// Symbol `index` (0-based) of a sequence of `count` (ISO/IEC 18004's structured append: 2 to 16 symbols).
    public struct SequencePart: Sendable, Hashable {
        public var index: Int
        public var count: Int

        public init(index: Int, count: Int) {
            self.index = index
            self.count = count
        }
    }

    public init(
        bytes: [UInt8], corners: [QRPoint], orientation: QROrientation = .unknown, designators: [ECIDesignator] = [],
        sequencePart: SequencePart? = nil
    ) {
        self.bytes = bytes
        self.corners = corners
        self.orientation = orientation
        self.designators = designators
        self.sequencePart = sequencePart
    }

    /// The payload as a string when it is valid UTF-8, else nil.
    public var text: String? { String(validating: bytes, as: UTF8.self) }

    /// The axis-aligned box around the corners (in original image coordinates).
    public var bounds: (minX: Int, minY: Int, maxX: Int, maxY: Int) {
        let xs = corners.map(\.x), ys = corners.map(\.y)
        return (xs.min() ?? 0, ys.min() ?? 0, xs.max() ?? 0, ys.max() ?? 0)
    }

    /// The area of `bounds`, in pixels: how much of an image the code covers (`QRTiling`, the regions' room for more).
    var boundsArea: Int {
        let b = bounds
        return max(0, b.maxX - b.minX) * max(0, b.maxY - b.minY)
    }

    /// The mean of the corners.
    public var center: QRPoint {
        guard !corners.isEmpty else { return QRPoint(x: 0, y: 0) }
        return QRPoint(
            x: corners.map(\.x).reduce(0, +) / corners.count,
            y: corners.map(\.y).reduce(0, +) / corners.count)
    }
}

/// What `QRScanner.scan` found.
public struct ScanResult: Sendable {
    /// The symbols in reading order: rows top to bottom, left to right within a row.
    public var symbols: [QRSymbol]

    /// The attempt that found them (`QRScanner.Attempt.rawValue`: "original", "inverted",
    /// "downscaled", "upscaled"); when nothing was found, the last attempt tried, or
    /// "none" for an empty image.
    public var attempt: String

    /// True when the per-image deadline (a safety net: the work budget decides the attempts) passed before the
    /// ladder was done (the remaining retries were skipped, or the helper scanning a large image was stopped).
    public var timedOut: Bool

    /// How many attempts ran: decided by the image (its size, the work budget), not by the machine's speed.
    public var tried: Int

    public init(symbols: [QRSymbol], attempt: String, timedOut: Bool = false, tried: Int = 0) {
        self.symbols = symbols
        self.attempt = attempt
        self.timedOut = timedOut
        self.tried = tried
    }
}
