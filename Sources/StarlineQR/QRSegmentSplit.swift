import CQREncode

/// libqrencode's mode optimiser for ASCII text (split.c, `Split_splitStringToQRinput` with hint QR_MODE_8 and
/// case-sensitive), ported so that sl-qr can build the `QRinput` itself and choose the mask itself
/// (`QRMaskChoice`): `QRcode_encodeString` does both inside the library, with no way to skip its own mask
/// evaluation, which was half of `encode --batch`'s time. The segments are exactly libqrencode's, so the
/// symbol is module for module the one `qrencode` draws (QREncoderTests compare thousands of payloads).
///
/// Only what QR_MODE_8 with case sensitivity can reach is ported: no Kanji (never identified without the
/// Kanji hint), no upper-casing.
enum QRSegmentSplit {
    struct Segment: Equatable {
        var mode: QRencodeMode
        var range: Range<Int>
    }

    /// The segments of `text` (ASCII bytes, no NUL) for a symbol of at least `version` (0: any), in order.
    static func segments(_ text: [UInt8], version: Int) -> [Segment] {
        let ln = lengthIndicator(QR_MODE_NUM, version), la = lengthIndicator(QR_MODE_AN, version)
        let l8 = lengthIndicator(QR_MODE_8, version)
        var segments: [Segment] = []
        var start = 0
        // Split_splitString: each eat… takes a run from `start` and appends one segment.
        while start < text.count {
            let length: Int
            switch mode(text, start) {
            case QR_MODE_NUM: length = eatNum(text, start, la: la, ln: ln, l8: l8, segments: &segments)
            case QR_MODE_AN: length = eatAn(text, start, la: la, ln: ln, l8: l8, segments: &segments)
            default: length = eat8(text, start, la: la, ln: ln, l8: l8, segments: &segments)
            }
            if length == 0 { break }
            start += length
        }
        return segments
    }

    private static func eatNum(_ s: [UInt8], _ from: Int, la: Int, ln: Int, l8: Int, segments: inout [Segment]) -> Int {
        var p = from
        while isDigit(s, p) { p += 1 }
        let run = p - from
        let next = mode(s, p)
        if next == QR_MODE_8 {
            let dif = bitsNum(run) + 4 + ln + bits8(1) - bits8(run + 1)
            if dif > 0 { return eat8(s, from, la: la, ln: ln, l8: l8, segments: &segments) }
        }
        if next == QR_MODE_AN {
            let dif = bitsNum(run) + 4 + ln + bitsAn(1) - bitsAn(run + 1)
            if dif > 0 { return eatAn(s, from, la: la, ln: ln, l8: l8, segments: &segments) }
        }
        segments.append(Segment(mode: QR_MODE_NUM, range: from..<p))
        return run
    }

    private static func eatAn(_ s: [UInt8], _ from: Int, la: Int, ln: Int, l8: Int, segments: inout [Segment]) -> Int {
        var p = from
        while isAlnum(s, p) {
            if isDigit(s, p) {
                var q = p
                while isDigit(s, q) { q += 1 }
                let dif = bitsAn(p - from) + bitsNum(q - p) + 4 + ln + (isAlnum(s, q) ? 4 + ln : 0) - bitsAn(q - from)
                if dif < 0 { break }
                p = q
            } else {
                p += 1
            }
        }
        let run = p - from
        if p < s.count && !isAlnum(s, p) {
            let dif = bitsAn(run) + 4 + la + bits8(1) - bits8(run + 1)
            if dif > 0 { return eat8(s, from, la: la, ln: ln, l8: l8, segments: &segments) }
        }
        segments.append(Segment(mode: QR_MODE_AN, range: from..<p))
        return run
    }

    private static func eat8(_ s: [UInt8], _ from: Int, la: Int, ln: Int, l8: Int, segments: inout [Segment]) -> Int {
        var p = from + 1
        while p < s.count {
            let m = mode(s, p)
            if m == QR_MODE_NUM {
                var q = p
                while isDigit(s, q) { q += 1 }
                let switchCost = mode(s, q) == QR_MODE_8 ? 4 + l8 : 0
                let dif = bits8(p - from) + bitsNum(q - p) + 4 + ln + switchCost - bits8(q - from)
                if dif < 0 { break }
                p = q
            } else if m == QR_MODE_AN {
                var q = p
                while isAlnum(s, q) { q += 1 }
                let switchCost = mode(s, q) == QR_MODE_8 ? 4 + l8 : 0
                let dif = bits8(p - from) + bitsAn(q - p) + 4 + la + switchCost - bits8(q - from)
                if dif < 0 { break }
                p = q
            } else {
                p += 1
            }
        }
        segments.append(Segment(mode: QR_MODE_8, range: from..<p))
        return p - from
    }

    /// Split_identifyMode with hint QR_MODE_8; past the end is QR_MODE_NUL (the C string's terminator).
    static func mode(_ s: [UInt8], _ i: Int) -> QRencodeMode {
        guard i < s.count else { return QR_MODE_NUL }
        if isDigit(s, i) { return QR_MODE_NUM }
        if isAlnum(s, i) { return QR_MODE_AN }
        return QR_MODE_8
    }

    static func isDigit(_ s: [UInt8], _ i: Int) -> Bool { i < s.count && s[i] >= 0x30 && s[i] <= 0x39 }

    /// QRinput_lookAnTable(c) >= 0: 0–9, A–Z, space, $ % * + - . / :
    static func isAlnum(_ s: [UInt8], _ i: Int) -> Bool {
        guard i < s.count else { return false }
        switch s[i] {
        case 0x30...0x39, 0x41...0x5A, 0x20, 0x24, 0x25, 0x2A, 0x2B, 0x2D, 0x2E, 0x2F, 0x3A: return true
        default: return false
        }
    }

    // QRinput_estimateBitsMode*.
    static func bitsNum(_ size: Int) -> Int {
        let w = size / 3
        return w * 10 + [0, 4, 7][size - w * 3]
    }
    static func bitsAn(_ size: Int) -> Int { (size / 2) * 11 + (size & 1 == 1 ? 6 : 0) }
    static func bits8(_ size: Int) -> Int { size * 8 }

    /// QRspec_lengthIndicator for the modes the split uses.
    static func lengthIndicator(_ mode: QRencodeMode, _ version: Int) -> Int {
        let column = version <= 9 ? 0 : version <= 26 ? 1 : 2
        switch mode {
        case QR_MODE_NUM: return [10, 12, 14][column]
        case QR_MODE_AN: return [9, 11, 13][column]
        default: return [8, 16, 16][column]
        }
    }
}
