/// Colour to the gray the scanners read, one formula for every image reader: Rec. 601 luminance as libjpeg
/// computes it, and an opacity composed over white (the page behind a transparent image).
enum Luminance {
    /// The luminance of 8-bit red, green and blue samples.
    @inline(__always) static func of(_ r: Int, _ g: Int, _ b: Int) -> UInt8 { UInt8((299 * r + 587 * g + 114 * b + 500) / 1000) }

    /// `gray` at opacity `alpha` (0…255) over white.
    @inline(__always) static func overWhite(_ gray: UInt8, alpha: Int) -> UInt8 {
        UInt8((Int(gray) * alpha + 255 * (255 - alpha) + 127) / 255)
    }

    /// The gray of interleaved 8-bit RGBA rows (`rowBytes` apart, at least `width * 4`) over white, as the
    /// libraries that decode to RGBA hand them over (libwebp, libheif).
    static func overWhite(rgba: UnsafePointer<UInt8>, width: Int, height: Int, rowBytes: Int) -> [UInt8] {
        var gray = [UInt8](repeating: 255, count: width * height)
        gray.withUnsafeMutableBufferPointer { out in
            for y in 0..<height {
                let row = rgba + y * rowBytes
                for x in 0..<width {
                    let p = row + 4 * x
                    out[y * width + x] = overWhite(of(Int(p[0]), Int(p[1]), Int(p[2])), alpha: Int(p[3]))
                }
            }
        }
        return gray
    }
}
