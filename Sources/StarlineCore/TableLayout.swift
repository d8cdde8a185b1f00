/// An aligned, width-aware table of text cells, as `gh`, `kubectl` and `docker` print lists: a header of
/// upper-case column names, columns two spaces apart, each as wide as its widest cell, the widest shrunk
/// (the cut marked with …) until the table fits the terminal. The first column and every identifier (`id`,
/// `…Id`, `url`, `file`) are never cut: a cut id cannot be pasted into the next command, so when only they
/// are left the line is longer than the terminal and wraps, as `ls -l` does.
///
/// Rows are laid out in blocks of `blockRows`: the first block fixes the column widths (later cells are cut
/// to them), so a list of any length is printed with bounded memory and the first rows appear at once.
struct TableLayout {
    static let blockRows = 500
    /// A column is never shrunk below this, nor below its header (up to `maximumHeaderFloor` columns of it).
    static let minimumWidth = 6
    static let maximumHeaderFloor = 16

    private let columns: [String]
    private let width: Int
    private var widths: [Int]?
    private var pending: [[String]] = []

    init(columns: [String], width: Int) {
        self.columns = columns
        self.width = width
    }

    /// Whether the column at `index` named `path` is shown whole: the first, and identifiers.
    static func keepsWhole(_ path: String, at index: Int) -> Bool {
        let name = fieldName(path)
        return index == 0 || name == "id" || name.hasSuffix("Id") || name == "url" || name.hasSuffix("Url") || name == "file"
    }

    /// The field a column path ends in (`device.name` is `name`): what decides how the column is shown.
    static func fieldName(_ path: String) -> String { path.split(separator: ".").last.map(String.init) ?? path }

    /// A column's header: its path upper-cased, a nested one's parts spaced (`device.name` is DEVICE NAME).
    static func header(_ path: String) -> String { String(path.map { $0 == "." ? " " : $0 }).uppercased() }

    /// Adds a row; returns the text of a finished block to print, if this row completed one.
    mutating func add(_ cells: [String]) -> String? {
        pending.append(cells)
        return pending.count >= Self.blockRows ? flush() : nil
    }

    /// The rows still held, laid out (with the header if no block was printed yet); nil when there are none.
    mutating func finish() -> String? { pending.isEmpty ? nil : flush() }

    private mutating func flush() -> String {
        var text = ""
        if widths == nil {
            let header = columns.map(Self.header)
            widths = Self.fit(
                natural: (0..<columns.count).map { i in
                    pending.reduce(TextWidth.of(header[i])) { max($0, TextWidth.of($1[i])) }
                }, headers: header.map(TextWidth.of), width: width,
                whole: columns.indices.map { Self.keepsWhole(columns[$0], at: $0) })
            text += line(header)
        }
        for row in pending { text += line(row) }
        pending.removeAll(keepingCapacity: true)
        return text
    }

    private func line(_ cells: [String]) -> String {
        guard let widths else { return "" }
        var parts: [String] = []
        for (i, cell) in cells.enumerated() {
            let cut = TextWidth.truncated(cell, to: widths[i])
            parts.append(i == cells.count - 1 ? cut : cut + String(repeating: " ", count: widths[i] - TextWidth.of(cut)))
        }
        var text = parts.joined(separator: "  ")
        while text.hasSuffix(" ") { text.removeLast() }  // no trailing blanks where the last cells are empty
        return text + "\n"
    }

    /// Column widths that fit `width` when they can: the widest column that may be cut gives up a column of
    /// text at a time, down to its header (or `minimumWidth`); `whole` columns keep their width; what still
    /// does not fit overflows, as a long line would.
    static func fit(natural: [Int], headers: [Int], width: Int, whole: [Bool]? = nil) -> [Int] {
        var widths = natural
        let gaps = 2 * max(0, widths.count - 1)
        while widths.reduce(gaps, +) > width {
            guard
                let widest = widths.indices.filter({
                    !(whole?[$0] ?? false) && widths[$0] > max(minimumWidth, min(headers[$0], maximumHeaderFloor))
                })
                .max(by: { widths[$0] < widths[$1] })
            else { break }
            widths[widest] -= 1
        }
        return widths
    }
}

/// How many terminal columns text takes: East Asian wide and fullwidth characters and emoji take two,
/// combining marks and format characters none (wcwidth's rules, by Unicode ranges: Swift does not expose the
/// East Asian Width property).
enum TextWidth {
    static func of(_ text: String) -> Int { text.reduce(0) { $0 + of($1) } }

    static func of(_ character: Character) -> Int {
        var width = 0
        for scalar in character.unicodeScalars { width = max(width, of(scalar)) }
        return width
    }

    static func of(_ scalar: Unicode.Scalar) -> Int {
        let v = scalar.value
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if scalar.properties.isEmojiPresentation { return 2 }
        let wide: [ClosedRange<UInt32>] = [
            0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
            0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
            0xFFE0...0xFFE6, 0x20000...0x2FFFD, 0x30000...0x3FFFD
        ]
        return wide.contains { $0.contains(v) } ? 2 : 1
    }

    /// `text` cut to at most `width` columns, ending in … when cut.
    static func truncated(_ text: String, to width: Int) -> String {
        guard of(text) > width else { return text }
        guard width > 1 else { return width == 1 ? "…" : "" }
        var out = "", used = 0
        for character in text {
            let w = of(character)
            if used + w > width - 1 { break }
            out.append(character)
            used += w
        }
        return out + "…"
    }
}

/// A JSON value as the text of a cell.
enum CellText {
    /// For a table on a terminal: one line, nothing hidden or acting on the terminal (a hostile value cannot
    /// move the cursor, clear the screen, forge rows or reorder what is read: `TerminalText`), arrays of
    /// scalars joined by ", ", objects of scalars as `name=value` pairs (kubectl's labels), deeper ones as
    /// compact JSON.
    static func table(_ value: JSON?) -> String {
        var text = ""
        var shown = plain(value)
        if case .object(let members)? = value, members.allSatisfy({ !isContainer($0.1) }) {
            shown = members.filter { !$0.1.isNull }.map { "\($0.0)=\(plain($0.1))" }.joined(separator: ", ")
        }
        for scalar in shown.unicodeScalars {
            switch scalar.value {
            case 0x0A, 0x0D, 0x09: text.unicodeScalars.append(" ")
            case let v where TerminalText.isHidden(v): text += TerminalText.escape(v)
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text
    }

    /// For CSV and TSV: the value's text, with a formula neutralised (a cell that a spreadsheet would run —
    /// starting with =, +, -, @, a tab or a carriage return — gets a leading apostrophe, OWASP's advice),
    /// whatever made the text: a string, an array joined (`["=cmd|calc!A0"]`), an object. Numbers are
    /// numbers, never neutralised. `terminal`: the hidden characters made visible too (`TerminalText`).
    static func delimited(_ value: JSON?, terminal: Bool = false) -> String {
        var text = plain(value)
        if terminal { text = TerminalText.visible(text) }
        switch value {
        case .int?, .double?, .number?: return text
        default: break
        }
        if let first = text.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) { return "'" + text }
        return text
    }

    private static func isContainer(_ value: JSON) -> Bool {
        switch value {
        case .array, .object: true
        default: false
        }
    }

    private static func plain(_ value: JSON?) -> String {
        switch value {
        case nil, .null?: ""
        case .bool(let b)?: b ? "true" : "false"
        case .string(let s)?: s
        case .array(let items)?
        where items.allSatisfy({
            if case .array = $0 { return false }; if case .object = $0 { return false }; return true
        }):
            items.map { plain($0) }.joined(separator: ", ")
        case let other?: other.serialized(.compact)
        }
    }
}
