import StarlineCore

/// Text of HTML documents (Netscape bookmark files): character references and whitespace. Escaping is
/// StarlineCore's `HTMLText.escape`; decoding, which only the importers need, lives here.
extension HTMLText {
    /// Decodes character references as an HTML parser does: the named references of HTML 4 (the 252 that
    /// browsers write into bookmark files: `&eacute;`, `&mdash;`, `&nbsp;`, …, plus `&apos;`), and numeric
    /// ones (`&#233;`, `&#xE9;`) with HTML's repairs — 0, surrogates and values beyond U+10FFFF become
    /// U+FFFD, and 0x80–0x9F are read as Windows-1252, as every browser does. An unknown name, or an `&`
    /// without `;`, is left as it is.
    static func decode(_ s: String) -> String {
        guard s.unicodeScalars.contains("&") else { return s }
        let scalars = Array(s.unicodeScalars)
        var out = String.UnicodeScalarView()
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            guard c == "&", let semi = scalars[(i + 1)..<min(scalars.count, i + 34)].firstIndex(of: ";"), semi > i + 1 else {
                out.append(c)
                i += 1
                continue
            }
            let body = scalars[(i + 1)..<semi]
            if let replacement = body.first == "#" ? numeric(body.dropFirst()) : named[String(String.UnicodeScalarView(body))] {
                out.append(replacement)
                i = semi + 1
            } else {
                out.append(c)
                i += 1
            }
        }
        return String(out)
    }

    /// `233` or `xE9`; nil when not a number (then the text stays as it is).
    static func numeric(_ body: ArraySlice<Unicode.Scalar>) -> Unicode.Scalar? {
        var digits = body
        var radix: UInt32 = 10
        if let x = digits.first, x == "x" || x == "X" { radix = 16; digits = digits.dropFirst() }
        guard !digits.isEmpty else { return nil }
        var value: UInt32 = 0
        for d in digits {
            guard let v = Character(d).hexDigitValue, UInt32(v) < radix else { return nil }
            // Saturate: anything beyond U+10FFFF is repaired the same way, however long.
            value = min(value * radix + UInt32(v), 0x110000)
        }
        if (0x80...0x9F).contains(value) { return Unicode.Scalar(windows1252[Int(value - 0x80)]) }
        guard value != 0, let scalar = Unicode.Scalar(value) else { return "\u{FFFD}" }
        return scalar
    }

    /// Runs of whitespace (spaces, tabs, newlines, no-break spaces…) as one space, none at either end.
    static func collapsingWhitespace(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        for c in s.unicodeScalars {
            if c.properties.isWhitespace {
                pendingSpace = !out.isEmpty
                continue
            }
            if pendingSpace { out.append(" "); pendingSpace = false }
            out.append(c)
        }
        return String(out)
    }

    /// 0x80–0x9F in Windows-1252 (the five unassigned bytes map to themselves).
    static let windows1252: [UInt32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D, 0x017D, 0x8F,
        0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178
    ]

    /// Built on first use: a tool run that imports no HTML never pays for it.
    static let named: [String: Unicode.Scalar] = {
        var table: [String: Unicode.Scalar] = [:]
        // Latin-1, U+00A0 … U+00FF in order.
        let latin1 = """
            nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute micro para \
            middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil Egrave Eacute \
            Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc Uuml Yacute \
            THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde \
            ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml
            """
        for (k, name) in latin1.split(separator: " ").enumerated() { table[String(name)] = Unicode.Scalar(UInt32(0xA0 + k)) }
        // Greek, in code point order (no capital at U+03A2).
        let greekCapitals = "Alpha Beta Gamma Delta Epsilon Zeta Eta Theta Iota Kappa Lambda Mu Nu Xi Omicron Pi Rho"
        for (k, name) in greekCapitals.split(separator: " ").enumerated() { table[String(name)] = Unicode.Scalar(UInt32(0x391 + k)) }
        for (k, name) in "Sigma Tau Upsilon Phi Chi Psi Omega".split(separator: " ").enumerated() {
            table[String(name)] = Unicode.Scalar(UInt32(0x3A3 + k))
        }
        let greekSmall = """
            alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigmaf sigma tau \
            upsilon phi chi psi omega
            """
        for (k, name) in greekSmall.split(separator: " ").enumerated() { table[String(name)] = Unicode.Scalar(UInt32(0x3B1 + k)) }
        let others: [(String, UInt32)] = [
            ("quot", 34), ("amp", 38), ("apos", 39), ("lt", 60), ("gt", 62), ("OElig", 338), ("oelig", 339), ("Scaron", 352),
            ("scaron", 353), ("Yuml", 376), ("fnof", 402), ("circ", 710), ("tilde", 732), ("thetasym", 977), ("upsih", 978),
            ("piv", 982), ("ensp", 8194), ("emsp", 8195), ("thinsp", 8201), ("zwnj", 8204), ("zwj", 8205), ("lrm", 8206),
            ("rlm", 8207), ("ndash", 8211), ("mdash", 8212), ("lsquo", 8216), ("rsquo", 8217), ("sbquo", 8218), ("ldquo", 8220),
            ("rdquo", 8221), ("bdquo", 8222), ("dagger", 8224), ("Dagger", 8225), ("bull", 8226), ("hellip", 8230),
            ("permil", 8240), ("prime", 8242), ("Prime", 8243), ("lsaquo", 8249), ("rsaquo", 8250), ("oline", 8254),
            ("frasl", 8260), ("euro", 8364), ("image", 8465), ("weierp", 8472), ("real", 8476), ("trade", 8482),
            ("alefsym", 8501), ("larr", 8592), ("uarr", 8593), ("rarr", 8594), ("darr", 8595), ("harr", 8596), ("crarr", 8629),
            ("lArr", 8656), ("uArr", 8657), ("rArr", 8658), ("dArr", 8659), ("hArr", 8660), ("forall", 8704), ("part", 8706),
            ("exist", 8707), ("empty", 8709), ("nabla", 8711), ("isin", 8712), ("notin", 8713), ("ni", 8715), ("prod", 8719),
            ("sum", 8721), ("minus", 8722), ("lowast", 8727), ("radic", 8730), ("prop", 8733), ("infin", 8734), ("ang", 8736),
            ("and", 8743), ("or", 8744), ("cap", 8745), ("cup", 8746), ("int", 8747), ("there4", 8756), ("sim", 8764),
            ("cong", 8773), ("asymp", 8776), ("ne", 8800), ("equiv", 8801), ("le", 8804), ("ge", 8805), ("sub", 8834),
            ("sup", 8835), ("nsub", 8836), ("sube", 8838), ("supe", 8839), ("oplus", 8853), ("otimes", 8855), ("perp", 8869),
            ("sdot", 8901), ("lceil", 8968), ("rceil", 8969), ("lfloor", 8970), ("rfloor", 8971), ("lang", 9001), ("rang", 9002),
            ("loz", 9674), ("spades", 9824), ("clubs", 9827), ("hearts", 9829), ("diams", 9830)
        ]
        for (name, value) in others { table[name] = Unicode.Scalar(value) }
        return table
    }()
}
