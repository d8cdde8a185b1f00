#if canImport(Glibc)
import Glibc
#endif

/// The image stretched along one direction: the copy the second engine reads for a code photographed at a steep
/// angle (attempt `zxing-tilted`). Foreshortening squeezes a code along the direction the camera looks across
/// it — by 3× and more past 70° — and ZXing-C++ 1.4's detector then takes its finder patterns for something else
/// (ZXing-C++ 3 reads some of these; 1.4 is what Debian 12 has). Stretched along the squeezed direction the code
/// is square enough again. The direction is not known, so a few are tried: on the generated photo corpora
/// (bench/qr-accuracy, 2 × 260 photographs, 2026-12-05) the two diagonals of `QRScanner.stretchDirections` read 6
/// of the 72 photographs no other attempt reads, 0 misread; the axes add little (their codes are read by the
/// plain attempts), and squeezing the other direction instead (fewer pixels, smaller modules) reads fewer.
///
/// The map is x' = A·x + offset with A = R(θ)·diag(factor, 1)·R(θ)ᵀ (symmetric), the offset putting the stretched
/// image's bounding box at the origin; `mapBack` takes a point of the copy to the image.
public struct DirectionalStretch: Sendable {
    public let degrees: Int
    public let factor: Double
    /// The copy's size: the bounding box of the stretched image, `factor` times its area or a little more.
    public let width: Int
    public let height: Int
    private let a: Double, b: Double, d: Double
    private let inverseA: Double, inverseB: Double, inverseD: Double
    private let offsetX: Double, offsetY: Double

    /// - Precondition: `factor` ≥ 1, the image's sides ≥ 0.
    public init(degrees: Int, factor: Double, imageWidth: Int, imageHeight: Int) {
        precondition(factor >= 1 && imageWidth >= 0 && imageHeight >= 0)
        self.degrees = degrees
        self.factor = factor
        let angle = Double(degrees) * .pi / 180
        let c = Self.cosine(angle), s = Self.sine(angle)
        a = c * c * factor + s * s
        b = c * s * (factor - 1)
        d = s * s * factor + c * c
        inverseA = c * c / factor + s * s
        inverseB = c * s * (1 / factor - 1)
        inverseD = s * s / factor + c * c
        let w = Double(imageWidth), h = Double(imageHeight)
        let xs = [0, a * w, b * h, a * w + b * h], ys = [0, b * w, d * h, b * w + d * h]
        offsetX = -(xs.min() ?? 0)
        offsetY = -(ys.min() ?? 0)
        width = Int(((xs.max() ?? 0) + offsetX).rounded(.up))
        height = Int(((ys.max() ?? 0) + offsetY).rounded(.up))
    }

    /// The stretched copy, bilinear; what falls outside the image is white (paper). Each row's source points lie
    /// on a line: the span of it inside the image is found first, and walked in 1/65536 pixels.
    public func apply(_ image: GrayImage) -> GrayImage {
        guard width > 0, height > 0, image.width > 1, image.height > 1 else { return GrayImage(width: width, height: height) }
        var out = [UInt8](repeating: 255, count: width * height)
        // Source points stay below the last row and column, so that the bilinear neighbours (x0 + 1, y0 + 1) exist.
        let maxX = Double(image.width - 1) - 1e-6, maxY = Double(image.height - 1) - 1e-6
        let sourceWidth = image.width
        let stepX = Int((inverseA * 65536).rounded()), stepY = Int((inverseB * 65536).rounded())
        image.pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<height {
                    // The source point of pixel centre (x + ½, y + ½), less ½ for the source's own pixel centres.
                    let v = Double(y) + 0.5 - offsetY, u = 0.5 - offsetX
                    let sx0 = inverseA * u + inverseB * v - 0.5, sy0 = inverseB * u + inverseD * v - 0.5
                    // x where 0 ≤ sx0 + x·inverseA ≤ maxX and 0 ≤ sy0 + x·inverseB ≤ maxY.
                    var low = 0.0, high = Double(width - 1)
                    for (start, step, limit) in [(sx0, inverseA, maxX), (sy0, inverseB, maxY)] {
                        if step == 0 {
                            if start < 0 || start > limit { low = 1; high = 0 }
                        } else {
                            let first = (0 - start) / step, last = (limit - start) / step
                            low = max(low, min(first, last))
                            high = min(high, max(first, last))
                        }
                    }
                    guard low <= high else { continue }
                    let xStart = Int(low.rounded(.up)), xEnd = Int(high.rounded(.down))
                    guard xStart <= xEnd else { continue }
                    var fx16 = Int(((sx0 + Double(xStart) * inverseA) * 65536).rounded())
                    var fy16 = Int(((sy0 + Double(xStart) * inverseB) * 65536).rounded())
                    let row = y * width
                    for x in xStart...xEnd {
                        // Rounding of the steps can take the last points a hair outside: clamp, never read past.
                        let cx = min(max(fx16, 0), (image.width - 1) << 16 - 1), cy = min(max(fy16, 0), (image.height - 1) << 16 - 1)
                        let x0 = cx >> 16, y0 = cy >> 16, fx = (cx >> 8) & 255, fy = (cy >> 8) & 255
                        let top = y0 * sourceWidth + x0, bottom = top + sourceWidth
                        let upper = Int(src[top]) * (256 - fx) + Int(src[top + 1]) * fx
                        let lower = Int(src[bottom]) * (256 - fx) + Int(src[bottom + 1]) * fx
                        dst[row + x] = UInt8((upper * (256 - fy) + lower * fy + 32768) >> 16)
                        fx16 += stepX
                        fy16 += stepY
                    }
                }
            }
        }
        return GrayImage(width: width, height: height, pixels: out)
    }

    /// A point of the copy, in the image's coordinates (rounded).
    public func mapBack(_ p: QRPoint) -> QRPoint {
        let u = Double(p.x) - offsetX, v = Double(p.y) - offsetY
        return QRPoint(x: Int((inverseA * u + inverseB * v).rounded()), y: Int((inverseB * u + inverseD * v).rounded()))
    }

    /// A point of the image, in the copy's coordinates (rounded): `mapBack`'s inverse.
    public func map(_ p: QRPoint) -> QRPoint {
        let x = Double(p.x), y = Double(p.y)
        return QRPoint(x: Int((a * x + b * y + offsetX).rounded()), y: Int((b * x + d * y + offsetY).rounded()))
    }

    // Exact at multiples of 90° (cos 90° is 6e-17 in floating point, which would make a stretch along an axis
    // leave a sliver of shear and a one-pixel-larger copy).
    private static func cosine(_ angle: Double) -> Double {
        let c = Glibc.cos(angle)
        return abs(c) < 1e-12 ? 0 : c
    }
    private static func sine(_ angle: Double) -> Double {
        let s = Glibc.sin(angle)
        return abs(s) < 1e-12 ? 0 : s
    }
}
