import StarlineCore

/// The Netscape bookmark file format that every browser imports and exports.
public enum NetscapeBookmarks {
    public struct Bookmark: Equatable, Sendable {
        public var url: String
        public var title: String?
        public var added: Timestamp?
        /// The path of the folders it is in (`FolderPath`), nil at the top of the file: the site's tag (W1).
        public var folder: String? = nil
    }

    public static func render(_ sites: [JSON]) -> String {
        var out = """
            <!DOCTYPE NETSCAPE-Bookmark-file-1>
            <!-- This is an automatically generated file.
                 It will be read and overwritten.
                 DO NOT EDIT! -->
            <META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
            <TITLE>Bookmarks</TITLE>
            <H1>Bookmarks</H1>
            <DL><p>

            """
        // Each site in the folders its tags name (W1); sites without tags at the top, as before.
        FolderTree(sites).render(sites, into: &out) { site in
            let url = site["url"]?.stringValue ?? ""
            var line = "<DT><A HREF=\"\(escape(url))\""
            if let t = timestamp(site["createdAt"]) { line += " ADD_DATE=\"\(t.seconds)\"" }
            line += ">\(escape(site["title"]?.stringValue ?? url))</A>\n"
            return line
        }
        out += "</DL><p>\n"
        return out
    }

    static func escape(_ s: String) -> String { HTMLText.escape(s) }

    static func isSpace(_ c: Unicode.Scalar?) -> Bool { c == " " || c == "\t" || c == "\n" || c == "\r" || c == "\u{0C}" }

    static func lower(_ c: Unicode.Scalar) -> Unicode.Scalar {
        (c.value >= 65 && c.value <= 90) ? Unicode.Scalar(c.value + 32)! : c
    }

    /// Every `<A HREF=…>title</A>` of the file, in order, each with the path of the `<H3>` folders it is in
    /// (`FolderStack`: nesting and path lengths bounded, DATA_ERROR beyond). Every index is checked
    /// against the end, so a file cut anywhere (`…<a`) reads as far as it goes. Titles have their character
    /// references decoded and their whitespace collapsed (a title split over lines is one line). An
    /// `ADD_DATE` that is not a time within years 0001–9999 is DATA_ERROR (exit 12), never a wrapped date.
    public static func parse(_ text: String) throws -> [Bookmark] {
        var result: [Bookmark] = []
        let s = Array(text.unicodeScalars)
        let n = s.count
        func at(_ k: Int) -> Unicode.Scalar? { k < n ? s[k] : nil }
        /// `<name` at `k` (case-insensitive), followed by a space, `>`, `/` or the end.
        func tag(_ k: Int, _ name: String, closing: Bool = false) -> Bool {
            guard at(k) == "<" else { return false }
            var k = k + 1
            if closing { guard at(k) == "/" else { return false }; k += 1 }
            for c in name.unicodeScalars {
                guard let x = at(k), lower(x) == c else { return false }
                k += 1
            }
            let after = at(k)
            return after == nil || after == ">" || after == "/" || isSpace(after)
        }
        /// The text from `k` to the next tag that ends it (`</name>`, or the next entry or list when that is missing).
        func runOfText(from k: Int, until name: String) -> (text: String, end: Int) {
            var text = ""
            var j = k
            while j < n, !tag(j, name, closing: true), !tag(j, "dt"), !tag(j, "dl"), !tag(j, "dl", closing: true), !tag(j, "a"),
                !tag(j, "h3")
            {
                text.unicodeScalars.append(s[j])
                j += 1
            }
            return (text, j)
        }
        /// Past the `>` of the tag at `k`, quoted attribute values skipped.
        func endOfTag(_ k: Int) -> Int {
            var j = k + 1
            while j < n, s[j] != ">" {
                if s[j] == "\"" || s[j] == "'" {
                    let quote = s[j]
                    j += 1
                    while j < n, s[j] != quote { j += 1 }
                }
                j += 1
            }
            return j + 1
        }
        var folders = FolderStack()
        /// The name of the `<H3>` just read: the folder the next `<DL>` is.
        var pendingFolder: String?
        var i = 0
        while i < n {
            guard s[i] == "<" else { i += 1; continue }
            if tag(i, "h3") {
                let (name, end) = runOfText(from: endOfTag(i), until: "h3")
                pendingFolder = HTMLText.collapsingWhitespace(HTMLText.decode(name))
                i = end
                continue
            }
            if tag(i, "dl") {
                try folders.open(pendingFolder, at: i)
                pendingFolder = nil
                i += 3
                continue
            }
            if tag(i, "dl", closing: true) {
                folders.close()
                pendingFolder = nil
                i += 4
                continue
            }
            guard tag(i, "a") else { i += 1; continue }
            pendingFolder = nil
            // Attributes up to the closing '>' (outside quotes).
            var j = i + 2
            var attributes: [String: String] = [:]
            while j < n, s[j] != ">" {
                if isSpace(s[j]) { j += 1; continue }
                var name = ""
                while j < n, s[j] != "=", s[j] != ">", !isSpace(s[j]) { name.unicodeScalars.append(lower(s[j])); j += 1 }
                while j < n, isSpace(s[j]) { j += 1 }
                var value = ""
                if j < n, s[j] == "=" {
                    j += 1
                    while j < n, isSpace(s[j]) { j += 1 }
                    if j < n, s[j] == "\"" || s[j] == "'" {
                        let quote = s[j]
                        j += 1
                        while j < n, s[j] != quote { value.unicodeScalars.append(s[j]); j += 1 }
                        if j < n { j += 1 }
                    } else {
                        while j < n, s[j] != ">", !isSpace(s[j]) { value.unicodeScalars.append(s[j]); j += 1 }
                    }
                }
                // The first of repeated attributes counts, as in HTML.
                if !name.isEmpty, attributes[name] == nil { attributes[name] = HTMLText.decode(value) }
            }
            j += 1
            // The title runs to </a>, or to the next entry when the end tag is missing.
            var title = ""
            while j < n, !tag(j, "a", closing: true), !tag(j, "dt"), !tag(j, "dl"), !tag(j, "dl", closing: true), !tag(j, "a") {
                title.unicodeScalars.append(s[j])
                j += 1
            }
            i = j
            guard let rawHref = attributes["href"] else { continue }
            // URL parsers drop surrounding spaces and embedded tabs and newlines (WHATWG URL).
            let href = String(String.UnicodeScalarView(rawHref.unicodeScalars.filter { $0 != "\t" && $0 != "\n" && $0 != "\r" }))
                .trimmingSpaces
            guard !href.isEmpty else { continue }
            let cleanTitle = HTMLText.collapsingWhitespace(HTMLText.decode(title))
            result.append(
                Bookmark(
                    url: href, title: cleanTitle.isEmpty ? nil : cleanTitle,
                    added: try addDate(attributes["add_date"], bookmark: result.count, url: href),
                    folder: try folders.path(bookmark: result.count, url: href)))
        }
        return result
    }

    /// `ADD_DATE`, Unix seconds. Absent or empty: undated (the import dates it now).
    static func addDate(_ text: String?, bookmark index: Int, url: String) throws -> Timestamp? {
        guard let text = text?.trimmingSpaces, !text.isEmpty else { return nil }
        guard let seconds = Int64(text), let t = Timestamp(checkedSeconds: seconds) else {
            throw StarlineError(
                .data, "bookmark \(index + 1) (\(url)): ADD_DATE \"\(text)\" is not a time in Unix seconds within the years 0001–9999",
                details: .object([
                    ("index", .int(index)), ("url", .string(url)), ("field", .string("ADD_DATE")),
                    ("value", .string(text))
                ]))
        }
        return t
    }

    /// Character references (`HTMLText.decode`), kept under the old name for callers and tests.
    static func unescape(_ s: String) -> String { HTMLText.decode(s) }
}
