/// The decimal value of a JSON number's text, canonical: sign, significant digits without leading or
/// trailing zeros, and the exponent of the last digit. `1.50`, `15e-1` and `1.5` are the same value.
enum JSONNumberText {
    struct Decimal: Equatable {
        var negative: Bool
        var digits: [UInt8]
        var exponent: Int
    }

    static func decimal(_ text: String) -> Decimal? {
        var negative = false
        var digits: [UInt8] = []
        var exponent = 0
        var fraction = false
        var explicit = 0
        var explicitNegative = false
        var inExponent = false
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "-") where !inExponent: negative = true
            case UInt8(ascii: "-"): explicitNegative = true
            case UInt8(ascii: "+"): break
            case UInt8(ascii: "."): fraction = true
            case UInt8(ascii: "e"), UInt8(ascii: "E"): inExponent = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if inExponent {
                    // Saturate: a 400-digit exponent is as out of reach as a 9-digit one.
                    explicit = min(explicit * 10 + Int(c - 48), 1_000_000_000)
                } else {
                    if digits.isEmpty && c == UInt8(ascii: "0") {
                        if fraction { exponent -= 1 }
                        continue
                    }
                    digits.append(c)
                    if fraction { exponent -= 1 }
                }
            default: return nil
            }
        }
        exponent += explicitNegative ? -explicit : explicit
        while let last = digits.last, last == UInt8(ascii: "0") { digits.removeLast(); exponent += 1 }
        if digits.isEmpty { exponent = 0 }
        return Decimal(negative: negative, digits: digits, exponent: exponent)
    }
}
