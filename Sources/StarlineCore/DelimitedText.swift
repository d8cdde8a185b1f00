/// Rows of CSV (RFC 4180) and TSV for spreadsheets and `cut`/`awk`.
enum DelimitedText {
    enum Dialect: Sendable { case csv, csvCRLF, tsv }

    /// One row, its line end included. CSV: a field with a comma, a double quote, CR or LF is quoted and its
    /// quotes doubled (RFC 4180 section 2, rules 5–7), lines end in LF as Unix tools expect, or in CRLF (rule 1)
    /// with `csvCRLF`. TSV (the IANA
    /// text/tab-separated-values type forbids tabs and newlines in fields): \ → \\, tab → \t, LF → \n, CR → \r,
    /// lines end in LF. The header row carries the field names as they are.
    static func row(_ cells: [String], dialect: Dialect, header: Bool = false) -> String {
        switch dialect {
        case .csv: cells.map(csvField).joined(separator: ",") + "\n"
        case .csvCRLF: cells.map(csvField).joined(separator: ",") + "\r\n"
        case .tsv: cells.map(tsvField).joined(separator: "\t") + "\n"
        }
    }

    static func csvField(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" }) else { return text }
        return "\"" + text.replacingQuotes() + "\""
    }

    static func tsvField(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 == "\\" || $0 == "\t" || $0 == "\n" || $0 == "\r" }) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out.append(contentsOf: "\\\\".unicodeScalars)
            case "\t": out.append(contentsOf: "\\t".unicodeScalars)
            case "\n": out.append(contentsOf: "\\n".unicodeScalars)
            case "\r": out.append(contentsOf: "\\r".unicodeScalars)
            default: out.append(scalar)
            }
        }
        return String(out)
    }
}

private extension String {
    /// Every `"` doubled.
    func replacingQuotes() -> String {
        var out = String.UnicodeScalarView()
        for scalar in unicodeScalars {
            out.append(scalar)
            if scalar == "\"" { out.append(scalar) }
        }
        return String(out)
    }
}
