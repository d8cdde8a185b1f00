import StarlineCore

/// A validating scan of `workspace.json` that builds no tree: it checks the whole file as strictly as
/// the JSON parser does (RFC 8259 syntax, UTF-8 in strings, nesting depth) plus the workspace shape
/// (an object, an integer `version`, arrays of objects under `tasks`, `websites` and `recents`), and
/// remembers where the `tasks` array ends.
///
/// `add` uses it to append one task by splicing bytes: the rest of the file, unknown fields and all,
/// is copied as it is, and a 10,000-task file is not decoded and re-encoded for every new task.
/// Anything unusual (escaped or duplicate keys, no `tasks` member, a syntax error) makes `scan`
/// return nil, and the caller takes the general path, which also produces the precise error.
package struct WorkspaceScanner {
    let b: UnsafeBufferPointer<UInt8>
    var pos = 0
    var depth = 0

    package struct Result {
        var version: Int64
        /// Offsets of the `[` and `]` of the tasks array, and its element count.
        var tasksOpen: Int
        var tasksClose: Int
        var taskCount: Int
        /// With `collectTasks`: where each task is, and its `due` and `done` values.
        package var tasks: [TaskSlice] = []
    }

    /// One task object of the file: its bytes, and the raw bytes of its `due` and `done` values (the
    /// last occurrence, as `JSON`'s subscript reads them). `uncertain` when a key has escapes, so a
    /// member may be hidden from this byte-level view.
    package struct TaskSlice {
        var range: Range<Int>
        var due: Range<Int>?
        var done: Range<Int>?
        var uncertain = false
    }

    /// When set, `document()` records a `TaskSlice` per task.
    var collectTasks = false
    var slices: [TaskSlice] = []

    package static func scan(_ bytes: [UInt8], collectTasks: Bool = false) -> Result? {
        bytes.withUnsafeBufferPointer { buffer in
            var s = WorkspaceScanner(b: buffer)
            s.collectTasks = collectTasks
            return s.document()
        }
    }

    /// The file with `record` (pretty-printed at the depth of a task) appended to the tasks array.
    static func appending(_ record: JSON, to bytes: [UInt8], at scan: Result) -> [UInt8] {
        var w = JSONWriter(capacity: 1024)
        w.write(record, pretty: true, indent: 2)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count + w.bytes.count + 16)
        if scan.taskCount == 0 {
            out.append(contentsOf: bytes[..<scan.tasksOpen])
            out.append(contentsOf: Array("[\n    ".utf8))
            out.append(contentsOf: w.bytes)
            out.append(contentsOf: Array("\n  ]".utf8))
            out.append(contentsOf: bytes[(scan.tasksClose + 1)...])
        } else {
            // After the last element, before the whitespace that precedes the closing bracket.
            var end = scan.tasksClose
            while end > scan.tasksOpen, isSpace(bytes[end - 1]) { end -= 1 }
            out.append(contentsOf: bytes[..<end])
            out.append(contentsOf: Array(",\n    ".utf8))
            out.append(contentsOf: w.bytes)
            out.append(contentsOf: bytes[end...])
        }
        return out
    }

    @inline(__always) static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 }

    mutating func space() { while pos < b.count, WorkspaceScanner.isSpace(b[pos]) { pos += 1 } }

    package mutating func document() -> Result? {
        if b.count >= 3, b[0] == 0xEF, b[1] == 0xBB, b[2] == 0xBF { pos = 3 }
        space()
        guard pos < b.count, b[pos] == UInt8(ascii: "{") else { return nil }
        pos += 1
        depth = 1
        var version: Int64?
        var tasks: (open: Int, close: Int, count: Int)?
        var seen: Set<[UInt8]> = []
        space()
        if pos < b.count, b[pos] == UInt8(ascii: "}") { return nil }  // no version
        while true {
            space()
            guard let key = plainKey(), seen.insert(key).inserted else { return nil }
            space()
            guard pos < b.count, b[pos] == UInt8(ascii: ":") else { return nil }
            pos += 1
            space()
            switch String(decoding: key, as: UTF8.self) {
            case "version":
                guard let v = integer() else { return nil }
                version = v
            case "tasks", "websites", "recents":
                let open = pos
                guard let count = arrayOfObjects(tasks: collectTasks && key == Array("tasks".utf8)) else { return nil }
                if key == Array("tasks".utf8) { tasks = (open, pos - 1, count) }
            default:
                guard value() else { return nil }
            }
            space()
            guard pos < b.count else { return nil }
            if b[pos] == UInt8(ascii: ",") { pos += 1; continue }
            if b[pos] == UInt8(ascii: "}") { pos += 1; break }
            return nil
        }
        space()
        guard pos == b.count, let version, version >= 1, let tasks else { return nil }
        return Result(version: version, tasksOpen: tasks.open, tasksClose: tasks.close, taskCount: tasks.count, tasks: slices)
    }

    /// A key without escapes (the bytes between the quotes).
    mutating func plainKey() -> [UInt8]? {
        guard pos < b.count, b[pos] == UInt8(ascii: "\"") else { return nil }
        let start = pos + 1
        guard string() else { return nil }
        let body = Array(b[start..<(pos - 1)])
        return body.contains(UInt8(ascii: "\\")) ? nil : body
    }

    mutating func integer() -> Int64? {
        let start = pos
        if pos < b.count, b[pos] == UInt8(ascii: "-") { pos += 1 }
        guard pos < b.count, b[pos] >= 0x30, b[pos] <= 0x39 else { return nil }
        if b[pos] == 0x30 {
            pos += 1
        } else {
            while pos < b.count, b[pos] >= 0x30, b[pos] <= 0x39 { pos += 1 }
        }
        if pos < b.count, b[pos] == UInt8(ascii: ".") || b[pos] == UInt8(ascii: "e") || b[pos] == UInt8(ascii: "E") { return nil }
        return Int64(String(decoding: UnsafeBufferPointer(rebasing: b[start..<pos]), as: UTF8.self))
    }

    /// An array whose elements are all objects; returns the element count, `pos` after the `]`.
    mutating func arrayOfObjects(tasks: Bool = false) -> Int? {
        guard pos < b.count, b[pos] == UInt8(ascii: "[") else { return nil }
        pos += 1
        depth += 1
        space()
        if pos < b.count, b[pos] == UInt8(ascii: "]") { pos += 1; depth -= 1; return 0 }
        var count = 0
        while true {
            space()
            guard pos < b.count, b[pos] == UInt8(ascii: "{") else { return nil }
            if tasks {
                guard taskObject() else { return nil }
            } else {
                guard value() else { return nil }
            }
            count += 1
            space()
            guard pos < b.count else { return nil }
            if b[pos] == UInt8(ascii: ",") { pos += 1; continue }
            if b[pos] == UInt8(ascii: "]") { pos += 1; break }
            return nil
        }
        depth -= 1
        return count
    }

    /// A task object, validated like `value()`, recording a `TaskSlice`.
    mutating func taskObject() -> Bool {
        let start = pos
        var slice = TaskSlice(range: start..<start)
        depth += 1
        guard depth <= 512 else { return false }
        pos += 1
        space()
        if pos < b.count, b[pos] == UInt8(ascii: "}") {
            pos += 1
        } else {
            while true {
                space()
                let keyStart = pos + 1
                guard pos < b.count, b[pos] == UInt8(ascii: "\""), string() else { return false }
                let key = UnsafeBufferPointer(rebasing: b[keyStart..<(pos - 1)])
                space()
                guard pos < b.count, b[pos] == UInt8(ascii: ":") else { return false }
                pos += 1
                space()
                let valueStart = pos
                guard value() else { return false }
                if key.count == 3, key[0] == UInt8(ascii: "d"), key[1] == UInt8(ascii: "u"), key[2] == UInt8(ascii: "e") {
                    slice.due = valueStart..<pos
                } else if key.count == 4, key[0] == UInt8(ascii: "d"), key[1] == UInt8(ascii: "o"), key[2] == UInt8(ascii: "n"),
                    key[3] == UInt8(ascii: "e")
                {
                    slice.done = valueStart..<pos
                } else if key.contains(UInt8(ascii: "\\")) {
                    slice.uncertain = true
                }
                space()
                guard pos < b.count else { return false }
                if b[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if b[pos] == UInt8(ascii: "}") { pos += 1; break }
                return false
            }
        }
        depth -= 1
        slice.range = start..<pos
        slices.append(slice)
        return true
    }
}
