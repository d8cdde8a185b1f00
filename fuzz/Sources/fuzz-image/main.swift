import FuzzSupport
import StarlineCore
@testable import StarlineQR

// The PNG, JPEG and PBM/PGM/PPM loaders of sl-qr decode, with a small pixel limit (a bomb must be refused
// before its buffer is allocated, whatever its header says); then the finder-pattern scan and the regions it
// makes (`FinderPatternScan`, `QRRegionsOfInterest`), which read whatever pixels an image holds, and the cubic
// upscale a region is read at.
Fuzz.run { bytes in
    guard let image = try? ImageLoader.load(bytes: bytes, name: "fuzz", maxPixels: 1 << 22) else { return }
    let patterns = FinderPatternScan(image).patterns()
    let regions = QRRegionsOfInterest(patterns: patterns, width: image.width, height: image.height).regions
    if let region = regions.first, region.width * region.height <= 1 << 16 {
        _ = image.cropped(x: region.x, y: region.y, width: region.width, height: region.height).sharplyUpscaled(by: 4)
    }
}
