import StarlineCore

/// The workspace in one of the interchange formats, as `export` writes it.
package enum WorkspaceExport {
    /// How a document is laid out: `pretty` indents our JSON; `jsonLines` writes Taskwarrior tasks one per
    /// line without the array (netscape is always the same HTML).
    package struct Layout: Sendable {
        package var pretty: Bool
        package var jsonLines: Bool
        package init(pretty: Bool, jsonLines: Bool) {
            self.pretty = pretty
            self.jsonLines = jsonLines
        }
    }

    package static func render(_ ws: Workspace, as format: InterchangeFormat, layout: Layout) -> String {
        switch format {
        case .json:
            return String(decoding: JSONWriter.document(ws.json, pretty: layout.pretty), as: UTF8.self)
        case .taskwarrior:
            let tasks = ws.tasks.map(Taskwarrior.export)
            if layout.jsonLines { return tasks.map { $0.serialized(.compact) + "\n" }.joined() }
            // One task per line inside the array: what `task export` writes, and friendly to diff.
            return "[\n" + tasks.map { $0.serialized(.compact) }.joined(separator: ",\n") + (tasks.isEmpty ? "]\n" : "\n]\n")
        case .netscape:
            return NetscapeBookmarks.render(ws.websites)
        }
    }

    /// How many records of each kind a file of `format` holds.
    package static func contents(of ws: Workspace, as format: InterchangeFormat) -> (tasks: Int, websites: Int, recents: Int) {
        (
            format == .netscape ? 0 : ws.tasks.count, format == .taskwarrior ? 0 : ws.websites.count,
            format == .json ? ws.recents.count : 0
        )
    }
}
