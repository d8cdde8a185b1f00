import StarlineCore

/// The formats of `import` and `export`.
public enum InterchangeFormat: String, CaseIterable, Sendable {
    /// Our own `workspace.json` document.
    case json
    /// Taskwarrior's JSON task array (`task export` / `task import`).
    case taskwarrior
    /// Netscape bookmark HTML, what browsers import and export.
    case netscape

    /// The names, spelled out: a key-path `map` here costs run-time metadata work on every start.
    package static let names = ["json", "taskwarrior", "netscape"]

    /// Guesses the format of `bytes`: HTML → netscape; a JSON object with `version`, `tasks`,
    /// `websites` or `recents` → json; a JSON array, or JSON Lines, of objects → taskwarrior.
    public static func detect(_ bytes: [UInt8]) -> InterchangeFormat? {
        var i = 0
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { i = 3 }
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
        guard i < bytes.count else { return nil }
        switch bytes[i] {
        case UInt8(ascii: "<"): return .netscape
        case UInt8(ascii: "["): return .taskwarrior
        case UInt8(ascii: "{"):
            // One object: ours when it has our keys; otherwise a Taskwarrior JSON Lines file.
            if let doc = try? JSON.parse(bytes), case .object = doc {
                if doc["version"] != nil || doc["tasks"] != nil || doc["websites"] != nil || doc["recents"] != nil { return .json }
                return doc["uuid"] != nil || doc["description"] != nil ? .taskwarrior : nil
            }
            return .taskwarrior
        default: return nil
        }
    }
}
