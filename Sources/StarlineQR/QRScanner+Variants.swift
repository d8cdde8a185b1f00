/// A copy of the image that one attempt reads, made when it is read, and the map of its points back to the image.
struct AttemptVariant {
    let make: () -> GrayImage
    let mapBack: (QRPoint) -> QRPoint

    init(_ make: @escaping () -> GrayImage, mapBack: @escaping (QRPoint) -> QRPoint = { $0 }) {
        self.make = make
        self.mapBack = mapBack
    }
}

extension QRScanner.Attempt {
    /// The copies of `image` this attempt reads, in order, until one gives a symbol: one for every attempt but
    /// `zxing-tilted`, which has one per direction.
    func variants(of image: GrayImage) -> [AttemptVariant] {
        let half: (QRPoint) -> QRPoint = { QRPoint(x: ($0.x + 1) / 2, y: ($0.y + 1) / 2) }
        // A window of several modules for any code that fills a tenth of the short side or more.
        let window = max(15, min(image.width, image.height) / 10) | 1
        switch self {
        case .original, .zxing: return [AttemptVariant { image }]
        case .inverted, .zxingInverted: return [AttemptVariant { image.inverted() }]
        case .zxingSmoothed: return [AttemptVariant { image.smoothed() }]
        case .zxingSharpened, .sharpened: return [AttemptVariant { image.sharpened() }]
        case .zxingUpscaled, .smoothUpscaled: return [AttemptVariant({ image.smoothlyUpscaled(by: 2) }, mapBack: half)]
        case .zxingTilted:
            return QRScanner.tiltStretches(for: image).map { stretch in AttemptVariant({ stretch.apply(image) }, mapBack: stretch.mapBack) }
        case .downscaled: return [AttemptVariant({ image.downscaled(by: 2) }, mapBack: { QRPoint(x: $0.x * 2, y: $0.y * 2) })]
        case .upscaled: return [AttemptVariant({ image.upscaled(by: 2) }, mapBack: half)]
        case .stretched: return [AttemptVariant { image.contrastStretched() }]
        case .binarized: return [AttemptVariant { image.locallyBinarized(window: window) }]
        case .invertedBinarized: return [AttemptVariant { image.inverted().locallyBinarized(window: window) }]
        case .invertedUpscaled: return [AttemptVariant({ image.inverted().smoothlyUpscaled(by: 2) }, mapBack: half)]
        }
    }
}
