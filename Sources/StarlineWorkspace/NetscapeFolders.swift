import StarlineCore

/// Bookmark folders as tags (W1): a bookmark in `<H3>Work</H3>` › `<H3>Projects</H3>` is a site tagged
/// `Work/Projects`, and export writes such a site back inside those folders.
///
/// A folder path is the folder names from the top of the file joined with `/`; a `/` inside a name is written
/// `\/` and a `\` as `\\`, so every name comes back exactly (`AC/DC` in `Music` is `Music/AC\/DC`). Names are
/// read as titles are: character references decoded, whitespace collapsed.
public enum FolderPath {
    /// `parent` (nil: the top of the file) with `name` appended.
    public static func appending(_ name: String, to parent: String?) -> String {
        var path = parent.map { $0 + "/" } ?? ""
        for c in name.unicodeScalars {
            if c == "/" || c == "\\" { path.unicodeScalars.append("\\") }
            path.unicodeScalars.append(c)
        }
        return path
    }

    /// The folder names of `path`, outermost first. A `\` takes the next character as it is; a `\` at the end
    /// stands for itself.
    public static func components(_ path: String) -> [String] {
        var result: [String] = []
        var current = String.UnicodeScalarView()
        var escaped = false
        for c in path.unicodeScalars {
            if escaped {
                current.append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == "/" {
                result.append(String(current))
                current = String.UnicodeScalarView()
            } else {
                current.append(c)
            }
        }
        if escaped { current.append("\\") }
        result.append(String(current))
        return result
    }
}

/// The open `<DL>` lists of a bookmark file while it is read, and the folder path of each, computed only when
/// a bookmark inside needs it. Bounded: at most `maxDepth` open lists, a path at most `maxPathBytes`, and all
/// paths computed together at most `maxTotalPathBytes` — a hostile file cannot make a path per bookmark cost
/// more than its own bytes, nor nest without end (no recursion: a stack of lists).
struct FolderStack {
    static let maxDepth = 100
    static let maxPathBytes = 1024
    static let maxTotalPathBytes = 64 << 20

    struct Level {
        /// The `<H3>` name just before this `<DL>`; nil for a list that is no folder (the file's top list).
        var name: String?
        /// nil until computed; then the path (nil inside: no folder at all).
        var path: String??
    }

    var levels: [Level] = []
    var totalPathBytes = 0

    mutating func open(_ name: String?, at offset: Int) throws {
        guard levels.count < FolderStack.maxDepth else {
            throw StarlineError(
                .data, "bookmark folders are nested more than \(FolderStack.maxDepth) deep (a <DL> list at character \(offset))",
                details: .object([("limit", .int(Int64(FolderStack.maxDepth))), ("offset", .int(Int64(offset)))]))
        }
        levels.append(Level(name: name, path: nil))
    }

    mutating func close() { if !levels.isEmpty { levels.removeLast() } }

    /// The folder path of a bookmark here (nil at the top), for the bookmark numbered `index` at `url`.
    mutating func path(bookmark index: Int, url: String) throws -> String? {
        guard !levels.isEmpty else { return nil }
        // The deepest level already known, then forward from there: each level is computed once while open.
        var k = levels.count - 1
        while k >= 0, levels[k].path == nil { k -= 1 }
        var parent: String? = k >= 0 ? levels[k].path! : nil
        for j in (k + 1)..<levels.count {
            if let name = levels[j].name {
                let path = FolderPath.appending(name, to: parent)
                let bytes = path.utf8.count
                guard bytes <= FolderStack.maxPathBytes else {
                    throw StarlineError(
                        .data,
                        "bookmark \(index + 1) (\(url.prefix(200))): its folder path is longer than \(FolderStack.maxPathBytes) bytes",
                        details: .object([
                            ("index", .int(Int64(index))), ("url", .string(String(url.prefix(200)))),
                            ("limit", .int(Int64(FolderStack.maxPathBytes)))
                        ]))
                }
                totalPathBytes += bytes
                guard totalPathBytes <= FolderStack.maxTotalPathBytes else {
                    throw StarlineError(
                        .data, "the bookmark file's folder paths add up to more than \(FolderStack.maxTotalPathBytes >> 20) MiB",
                        details: .object([("limit", .int(Int64(FolderStack.maxTotalPathBytes)))]))
                }
                parent = path
            }
            levels[j].path = .some(parent)
        }
        return parent
    }
}

/// Sites laid out in folders for export: a tree of folder names, each holding sites and folders in the order
/// they first appear among the sites. A site is written in every folder its tags name (a browser keeps one
/// bookmark per folder, so an import of the file gives the site the same tags); a site without tags at the top.
struct FolderTree {
    enum Entry { case site(Int), folder(Int) }

    struct Node {
        var name: String
        var children: [String: Int] = [:]
        var entries: [Entry] = []
        /// The last site added here: a site whose tags name one folder twice is written there once.
        var lastSite = -1
    }

    var nodes = [Node(name: "")]

    init(_ sites: [JSON]) {
        for (i, site) in sites.enumerated() where site["url"]?.stringValue != nil {
            let tags = SiteRecord.tags(site)
            if tags.isEmpty { add(i, to: 0); continue }
            for tag in tags {
                var node = 0
                for name in FolderPath.components(tag) {
                    if let child = nodes[node].children[name] { node = child; continue }
                    nodes.append(Node(name: name))
                    nodes[node].children[name] = nodes.count - 1
                    nodes[node].entries.append(.folder(nodes.count - 1))
                    node = nodes.count - 1
                }
                add(i, to: node)
            }
        }
    }

    mutating func add(_ site: Int, to node: Int) {
        guard nodes[node].lastSite != site else { return }
        nodes[node].lastSite = site
        nodes[node].entries.append(.site(site))
    }

    /// The `<DT>` lines, folders as `<H3>` with a `<DL>`; walked with a stack, however deep the stored tags go.
    /// Indentation stops growing at 16 levels (it is only for the eye).
    func render(_ sites: [JSON], into out: inout String, line: (JSON) -> String) {
        func indent(_ depth: Int) -> String { String(repeating: "    ", count: min(depth, 16)) }
        var stack: [(node: Int, next: Int)] = [(0, 0)]
        while let top = stack.last {
            let depth = stack.count
            let entries = nodes[top.node].entries
            guard top.next < entries.count else {
                stack.removeLast()
                if !stack.isEmpty { out += indent(depth - 1) + "</DL><p>\n" }
                continue
            }
            stack[stack.count - 1].next += 1
            switch entries[top.next] {
            case .site(let i):
                out += indent(depth) + line(sites[i])
            case .folder(let child):
                out += indent(depth) + "<DT><H3>\(HTMLText.escape(nodes[child].name))</H3>\n" + indent(depth) + "<DL><p>\n"
                stack.append((child, 0))
            }
        }
    }
}
