/// An 8-bit luminance image: `pixels` is row-major, `width * height` bytes, 0 = black.
///
/// This is the one in-memory format of the decoder: every loader converts to it and zbar
/// scans it as "Y800" without another copy or conversion.
public struct GrayImage: Sendable, Equatable {
    public let width: Int
    public let height: Int
    public let pixels: [UInt8]

    /// - Precondition: `pixels.count == width * height`, both dimensions ≥ 0.
    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(width >= 0 && height >= 0, "negative image size")
        precondition(pixels.count == width * height, "pixel count \(pixels.count) ≠ \(width)×\(height)")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// A uniform image.
    public init(width: Int, height: Int, value: UInt8 = 255) {
        self.init(width: width, height: height, pixels: [UInt8](repeating: value, count: width * height))
    }

    public var pixelCount: Int { width * height }

    public subscript(x: Int, y: Int) -> UInt8 { pixels[y * width + x] }

    /// `p` moved inside the image (a corner a decoder or a copy's mapping put a pixel or two outside it).
    func clamped(_ p: QRPoint) -> QRPoint {
        QRPoint(x: min(max(p.x, 0), width - 1), y: min(max(p.y, 0), height - 1))
    }

    /// Light on dark becomes dark on light. zbar only finds finder patterns that are dark
    /// on a light background, so white-on-black codes need this copy.
    public func inverted() -> GrayImage {
        GrayImage(width: width, height: height, pixels: pixels.map { 255 &- $0 })
    }

    /// Box-filter downscale: each output pixel is the mean of a `factor`×`factor` block.
    /// Trailing rows/columns that do not fill a whole block are dropped (at most
    /// `factor - 1` pixels), so output pixel (x, y) covers input (x·f ..< x·f+f, y·f ..< y·f+f).
    /// Averaging (rather than sampling) removes sensor noise and JPEG ringing.
    public func downscaled(by factor: Int) -> GrayImage {
        precondition(factor >= 1)
        if factor == 1 { return self }
        let w = width / factor, h = height / factor
        if w == 0 || h == 0 { return GrayImage(width: w, height: h, pixels: []) }
        var out = [UInt8](repeating: 0, count: w * h)
        let area = factor * factor
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                // One row of column sums per output row keeps the inner loop sequential.
                var sums = [Int](repeating: 0, count: w)
                for oy in 0..<h {
                    for i in 0..<w { sums[i] = 0 }
                    for dy in 0..<factor {
                        let row = (oy * factor + dy) * width
                        for ox in 0..<w {
                            var s = 0
                            let base = row + ox * factor
                            for dx in 0..<factor { s += Int(src[base + dx]) }
                            sums[ox] += s
                        }
                    }
                    for ox in 0..<w { dst[oy * w + ox] = UInt8((sums[ox] + area / 2) / area) }
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    /// Nearest-neighbour upscale: every pixel becomes a `factor`×`factor` block. Sharp
    /// edges stay sharp, which is what zbar's edge detector needs for 1-pixel modules.
    public func upscaled(by factor: Int) -> GrayImage {
        precondition(factor >= 1)
        if factor == 1 { return self }
        let w = width * factor, h = height * factor
        var out = [UInt8](repeating: 0, count: w * h)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<height {
                    let firstRow = y * factor * w
                    for x in 0..<width {
                        let v = src[y * width + x]
                        for dx in 0..<factor { dst[firstRow + x * factor + dx] = v }
                    }
                    for dy in 1..<factor {
                        let row = firstRow + dy * w
                        for i in 0..<w { dst[row + i] = dst[firstRow + i] }
                    }
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }
}
