/// Colour to the gray the scanners read, one formula for every image reader: Rec. 601 luminance as libjpeg
/// computes it, and an opacity composed over white (the page behind a transparent image).
enum Luminance {
    /// The luminance of 8-bit red, green and blue samples.
    @inline(__always) static func of(_ r: Int, _ g: Int, _ b: Int) -> UInt8 { UInt8((299 * r + 587 * g + 114 * b + 500) / 1000) }

    /// `gray` at opacity `alpha` (0…255) over white.
    @inline(__always) static func overWhite(_ gray: UInt8, alpha: Int) -> UInt8 {
        UInt8((Int(gray) * alpha + 255 * (255 - alpha) + 127) / 255)
    }
}
