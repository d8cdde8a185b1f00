/// Copies of a photographed code that zbar reads when the photo as it is defeats it. zbar finds a symbol by
/// the edges along scan lines; what photos do to those edges is what these undo: low contrast and uneven
/// light (edges too weak, or a threshold that is right in one corner and wrong in another), blur (edges
/// spread over several pixels) and small modules (1.3–3 pixels a module: edges closer than zbar resolves).
/// Each is linear in the pixels and allocates one output image (plus one row of sums).
extension GrayImage {
    /// Whether the image looks like a photograph (or a scan) rather than a code rendered by a program: more
    /// than a tenth of its pixels are mid-tones (25…231). A rendered code is black and white with antialiased
    /// edges at most (0 % of an `sl-qr encode` PNG); a camera's image is mostly mid-tones (42 % and more of
    /// every generated photograph in bench/qr-corpus, 94–100 % of most). Decides the ladder's order
    /// (`QRScanner.ladder(for:)`), from the pixels alone: at most about 250,000 of them are looked at.
    public var looksPhotographic: Bool {
        guard width > 0, height > 0 else { return false }
        let step = max(1, Int((Double(pixelCount) / 250_000).squareRoot()))
        var sampled = 0, midTones = 0
        pixels.withUnsafeBufferPointer { p in
            for y in stride(from: 0, to: height, by: step) {
                let row = y * width
                for x in stride(from: 0, to: width, by: step) {
                    let v = p[row + x]
                    sampled += 1
                    if v >= 25 && v <= 231 { midTones += 1 }
                }
            }
        }
        return midTones * 10 > sampled
    }

    /// The darkest and lightest 1 % clipped and the rest stretched over 0…255: a faint code (grey on grey,
    /// glare over it) gets edges as strong as a clean one's.
    public func contrastStretched() -> GrayImage {
        var histogram = [Int](repeating: 0, count: 256)
        for p in pixels { histogram[Int(p)] += 1 }
        let clip = pixelCount / 100
        var low = 0, high = 255, seen = 0
        while low < 255, seen + histogram[low] <= clip { seen += histogram[low]; low += 1 }
        seen = 0
        while high > low, seen + histogram[high] <= clip { seen += histogram[high]; high -= 1 }
        guard high > low else { return self }
        var table = [UInt8](repeating: 0, count: 256)
        for v in 0..<256 { table[v] = UInt8(max(0, min(255, (v - low) * 255 / (high - low)))) }
        return GrayImage(width: width, height: height, pixels: pixels.map { table[Int($0)] })
    }

    /// Each pixel set to black or white against the mean of the `window`×`window` square around it (less a
    /// small margin): a local threshold, as ZXing's HybridBinarizer uses, so a shadow or a gradient across
    /// the code no longer hides half of it. Box sums by running column sums: memory is one row of sums.
    public func locallyBinarized(window: Int) -> GrayImage {
        guard width > 0, height > 0 else { return self }
        let radius = max(1, window / 2)
        var out = [UInt8](repeating: 255, count: pixelCount)
        var columns = [Int](repeating: 0, count: width)  // sum over the rows y-radius...y+radius of each column
        let (w, h) = (width, height)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                columns.withUnsafeMutableBufferPointer { col in
                    for y in 0...min(radius, h - 1) { for x in 0..<w { col[x] += Int(src[y * w + x]) } }
                    for y in 0..<h {
                        let top = max(0, y - radius), bottom = min(h - 1, y + radius)
                        let rows = bottom - top + 1
                        var sum = 0
                        for x in 0...min(radius, w - 1) { sum += col[x] }
                        for x in 0..<w {
                            let left = max(0, x - radius), right = min(w - 1, x + radius)
                            let count = rows * (right - left + 1)
                            let v = Int(src[y * w + x])
                            // Black when clearly below the local mean; a flat area (no edge) stays white.
                            dst[y * w + x] = v * count * 100 < sum * 97 ? 0 : 255
                            if x + radius + 1 < w { sum += col[x + radius + 1] }
                            if x - radius >= 0 { sum -= col[x - radius] }
                        }
                        if y + radius + 1 < h { for x in 0..<w { col[x] += Int(src[(y + radius + 1) * w + x]) } }
                        if y - radius >= 0 { for x in 0..<w { col[x] -= Int(src[(y - radius) * w + x]) } }
                    }
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    /// Unsharp masking: twice the pixel less the mean of its 3×3 neighbourhood, so an edge spread by focus or
    /// motion blur steepens again.
    public func sharpened() -> GrayImage {
        interiorFiltered { src, i, w in
            var s = 0
            for dy in -1...1 { for dx in -1...1 { s += Int(src[i + dy * w + dx]) } }
            return UInt8(max(0, min(255, 2 * Int(src[i]) - (s + 4) / 9)))
        }
    }

    /// A 3×3 binomial blur (1 2 1 / 2 4 2 / 1 2 1, over 16): sensor noise and JPEG blocks smoothed before a
    /// decoder that binarises locally, where single noisy pixels break the module edges it follows.
    public func smoothed() -> GrayImage {
        interiorFiltered { src, i, w in
            let above = Int(src[i - w - 1]) + 2 * Int(src[i - w]) + Int(src[i - w + 1])
            let row = Int(src[i - 1]) + 2 * Int(src[i]) + Int(src[i + 1])
            let below = Int(src[i + w - 1]) + 2 * Int(src[i + w]) + Int(src[i + w + 1])
            return UInt8((above + 2 * row + below + 8) >> 4)
        }
    }

    /// A 3×3 filter: every pixel off the border becomes `filter(source, index, width)`; the border is kept
    /// (an image under 3×3 is returned as it is).
    private func interiorFiltered(_ filter: (UnsafeBufferPointer<UInt8>, Int, Int) -> UInt8) -> GrayImage {
        guard width >= 3, height >= 3 else { return self }
        var out = pixels
        let w = width
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 1..<(height - 1) {
                    for x in 1..<(w - 1) { dst[y * w + x] = filter(src, y * w + x, w) }
                }
            }
        }
        return GrayImage(width: w, height: height, pixels: out)
    }

    /// Bilinear upscale by `factor`: modules of 1.3–3 pixels become 3–9 with their edges interpolated
    /// where nearest-neighbour (`upscaled`) would keep every sampling error as a step.
    public func smoothlyUpscaled(by factor: Int) -> GrayImage {
        guard factor > 1, width > 1, height > 1 else { return upscaled(by: max(1, factor)) }
        let w = width * factor, h = height * factor
        var out = [UInt8](repeating: 0, count: w * h)
        let scale = 256 / factor
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<h {
                    // Centre-aligned sampling, in 1/256 pixels.
                    let sy = max(0, (2 * y + 1) * scale / 2 - 128)
                    let y0 = min(height - 1, sy >> 8), y1 = min(height - 1, y0 + 1), fy = sy & 255
                    for x in 0..<w {
                        let sx = max(0, (2 * x + 1) * scale / 2 - 128)
                        let x0 = min(width - 1, sx >> 8), x1 = min(width - 1, x0 + 1), fx = sx & 255
                        let top = Int(src[y0 * width + x0]) * (256 - fx) + Int(src[y0 * width + x1]) * fx
                        let bottom = Int(src[y1 * width + x0]) * (256 - fx) + Int(src[y1 * width + x1]) * fx
                        dst[y * w + x] = UInt8((top * (256 - fy) + bottom * fy + 32768) >> 16)
                    }
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    /// Catmull-Rom (bicubic) upscale by `factor`: for modules under 3 pixels, where bilinear interpolation
    /// (`smoothlyUpscaled`) blurs a module into its neighbours and libzbar's edge detector finds no edges; the cubic
    /// keeps each edge a step (the region of `test_draw_64x64`, 1.7-pixel modules, is read at ×4 this way, at
    /// no factor bilinearly).
    public func sharplyUpscaled(by factor: Int) -> GrayImage {
        guard factor > 1, width > 1, height > 1 else { return self }
        // Per phase of the factor: where its four taps start, relative to the source pixel (one earlier for the
        // phases before that pixel's centre), and their weights in 1/4096.
        let phases: [(start: Int, k: (Int, Int, Int, Int))] = (0..<factor).map { phase in
            let position = (Double(phase) + 0.5) / Double(factor) - 0.5
            let t = position < 0 ? position + 1 : position
            let (t2, t3) = (t * t, t * t * t)
            let weights = [(-t3 + 2 * t2 - t) / 2, (3 * t3 - 5 * t2 + 2) / 2, (-3 * t3 + 4 * t2 + t) / 2, (t3 - t2) / 2]
            let fixed = weights.map { Int(($0 * 4096).rounded()) }
            return (position < 0 ? -2 : -1, (fixed[0], fixed[1], fixed[2], fixed[3]))
        }
        let w = width * factor, h = height * factor
        var rows = [Int32](repeating: 0, count: w * height)
        pixels.withUnsafeBufferPointer { src in
            rows.withUnsafeMutableBufferPointer { mid in
                for y in 0..<height {
                    let row = y * width
                    for x in 0..<w {
                        let phase = phases[x % factor], i = x / factor + phase.start, k = phase.k
                        let a = Int(src[row + min(max(i, 0), width - 1)]), b = Int(src[row + min(max(i + 1, 0), width - 1)])
                        let c = Int(src[row + min(max(i + 2, 0), width - 1)]), d = Int(src[row + min(max(i + 3, 0), width - 1)])
                        mid[y * w + x] = Int32(a * k.0 + b * k.1 + c * k.2 + d * k.3)
                    }
                }
            }
        }
        var out = [UInt8](repeating: 0, count: w * h)
        rows.withUnsafeBufferPointer { mid in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<h {
                    let phase = phases[y % factor], i = y / factor + phase.start, k = phase.k
                    let r0 = min(max(i, 0), height - 1) * w, r1 = min(max(i + 1, 0), height - 1) * w
                    let r2 = min(max(i + 2, 0), height - 1) * w, r3 = min(max(i + 3, 0), height - 1) * w
                    for x in 0..<w {
                        let v = Int(mid[r0 + x]) * k.0 + Int(mid[r1 + x]) * k.1 + Int(mid[r2 + x]) * k.2 + Int(mid[r3 + x]) * k.3
                        dst[y * w + x] = UInt8(min(255, max(0, (v + (1 << 23)) >> 24)))
                    }
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }
}
