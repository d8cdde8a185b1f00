import CQREncode

/// The four QR error-correction levels, from the lowest redundancy (most data) to the highest.
///
/// Approximate recoverable damage: L 7 %, M 15 %, Q 25 %, H 30 % of the codewords.
public enum QRErrorCorrection: String, CaseIterable, Sendable {
    case L, M, Q, H

    /// Parses `"L"`, `"m"`, … case-insensitively; nil for anything else.
    public init?(parsing text: String) {
        switch text {
        case "L", "l": self = .L
        case "M", "m": self = .M
        case "Q", "q": self = .Q
        case "H", "h": self = .H
        default: return nil
        }
    }

    /// libqrencode's `QRecLevel` for this level.
    var cLevel: QRecLevel {
        switch self {
        case .L: QR_ECLEVEL_L
        case .M: QR_ECLEVEL_M
        case .Q: QR_ECLEVEL_Q
        case .H: QR_ECLEVEL_H
        }
    }
}
